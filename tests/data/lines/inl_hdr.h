/* Inlined into inl.c from a second file. */
static inline __attribute__((always_inline)) int hdr_mix(int x)
{
	x ^= x << 13;
	x ^= x >> 17;
	return x * 0x9e3779b1;
}

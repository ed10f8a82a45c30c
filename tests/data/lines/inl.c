/* Test program for ksym's source lines: static inline functions inlined
 * into their callers several levels deep (cc -O2 -g), a noinline function,
 * a function split into a .cold part, and code from a second file
 * (inl_hdr.h), so frames carry more than one file. */
#include <stdlib.h>
#include "inl_hdr.h"

static inline __attribute__((always_inline)) int level3(int x)
{
	return hdr_mix(x) ^ (x >> 3);
}

static inline __attribute__((always_inline)) int level2(int x)
{
	int s = 0;
	for (int i = 0; i < x; i++)
		s += level3(i + x);
	return s;
}

static inline __attribute__((always_inline)) int level1(int x)
{
	return level2(x) + level3(x * 7);
}

__attribute__((noinline)) int leaf(int x)
{
	return level1(x) * 3;
}

__attribute__((noinline, cold)) static void die(int code)
{
	exit(code);
}

/* Several basic blocks on one line: GCC tells them apart with
 * discriminators, which binutils' addr2line prints. */
static int table[64];

__attribute__((noinline)) int odd_even(int n, int *p)
{
	int s = 0;
	for (int i = 0; i < n; i++) s += p[i] > 3 ? p[i] * 7 : table[i] - 1;
	while (n-- > 0) if (table[n] & 1) s ^= n; else s += hdr_mix(table[n]);
	return s;
}

__attribute__((noinline)) int checked(int x)
{
	if (__builtin_expect(x < 0, 0))
		die(2);
	return level2(x) + hdr_mix(x);
}

int main(int argc, char **argv)
{
	(void)argv;
	int r = leaf(argc) + checked(argc + 4) + odd_even(argc * 5, table);
	return r == 12345;
}

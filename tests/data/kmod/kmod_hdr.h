/* Inline chains shared by both files of the test module. */
static inline int scale(int x) { return x * 3 + (x >> 2); }
static inline int clampv(int x) { return x > 1000 ? 1000 : scale(x); }
static inline int mix(int a, int b) { return clampv(a) ^ clampv(b + 7); }

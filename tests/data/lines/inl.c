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

__attribute__((noinline)) int checked(int x)
{
	if (__builtin_expect(x < 0, 0))
		die(2);
	return level2(x) + hdr_mix(x);
}

int main(int argc, char **argv)
{
	(void)argv;
	int r = leaf(argc) + checked(argc + 4);
	return r == 12345;
}

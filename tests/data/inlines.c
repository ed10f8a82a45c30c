/* Two levels of inlining in one function, for tests/user_space.rs's split
 * DWARF check: each address of work() has an inline chain
 * (work > twice > step) that lives in the DIEs, so in the .dwo or .dwp
 * file when built with -gsplit-dwarf. */
#include <stdio.h>

static inline __attribute__((always_inline)) double step(long i)
{
	return (double)(i % 7) / (double)(i + 3);
}

static inline __attribute__((always_inline)) double twice(long i)
{
	return step(i) + step(i * 2);
}

__attribute__((noinline)) double work(long n)
{
	double s = 0;
	for (long i = 1; i <= n; i++)
		s += twice(i);
	return s;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%f\n", work(argc * 1000));
	return 0;
}

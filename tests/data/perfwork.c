/* The workload of tests/perf_store.rs: a program that spends its time in
 * its own functions and in a shared library's (this file again, built
 * with -DLIB), with frame pointers, so that perf's callchains cross the
 * kernel (page faults, exit), libc, the library and the program. */
#ifdef LIB
__attribute__((noinline)) double lib_inner(long n)
{
	double s = 0;
	for (long i = 1; i <= n; i++)
		s += 1.0 / (double)i;
	return s;
}

double lib_outer(long n)
{
	return lib_inner(n) * 2;
}
#else
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double lib_outer(long n);

/* Inlined into own_work: DWARF's inline frames, which perf prints. */
static inline __attribute__((always_inline)) double step(long i)
{
	return (double)(i % 7) / (double)(i + 3);
}

__attribute__((noinline)) static double own_work(long n)
{
	double s = 0;
	for (long i = 1; i <= n; i++)
		s += step(i);
	return s;
}

__attribute__((noinline)) double both(long n)
{
	/* A page-touching libc call, for kernel and libc frames. */
	char *p = malloc(1 << 22);
	memset(p, 1, 1 << 22);
	double r = own_work(n) + lib_outer(n) + p[n & 0xfff];
	free(p);
	return r;
}

int main(void)
{
	double t = 0;
	for (int k = 0; k < 20; k++)
		t += both(2000000);
	printf("%f\n", t);
	return 0;
}
#endif

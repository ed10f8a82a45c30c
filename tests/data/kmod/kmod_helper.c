/* The test module's second file: a cold error path in .text.unlikely and
 * a static function whose name the first file does not use. */
#include "kmod_hdr.h"

extern volatile int sink;

__attribute__((cold, noinline)) void helper_fail(int code)
{
	sink = scale(code) + 1;
	__builtin_trap();
}

static __attribute__((noinline)) int helper_sum(const int *v, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += mix(v[i], s);
	return s;
}

int helper_work(int *v, int n)
{
	if (n > 100)
		helper_fail(n);
	return helper_sum(v, n) + clampv(n);
}

/* A relocatable object laid out like a kernel module: functions in .text,
 * cold parts in .text.unlikely, an init function in .init.text and an exit
 * function in .exit.text, every one with static inline chains. Built with
 * `cc -O2 -g -c` and `ld -r` (tests/modules.rs). */
#include "kmod_hdr.h"

#define __init __attribute__((section(".init.text"), noinline, used))
#define __exit __attribute__((section(".exit.text"), noinline, used))

static const char modinfo_name[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=ksym_test";
static const char modinfo_lic[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL";

extern int helper_work(int *v, int n);
extern void helper_fail(int code);
volatile int sink;

int ksym_test_read(int *v, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) {
		if (__builtin_expect(v[i] < 0, 0)) {
			helper_fail(v[i]);
			return -1;
		}
		s += mix(v[i], i);
	}
	return s + helper_work(v, n);
}

static int __init ksym_test_init(void)
{
	int v[4] = {1, 2, 3, 4};
	sink = mix(v[0], v[3]);
	return ksym_test_read(v, 4);
}

static void __exit ksym_test_exit(void)
{
	sink = clampv(sink) + scale(sink);
}

int init_module(void) __attribute__((alias("ksym_test_init")));
void cleanup_module(void) __attribute__((alias("ksym_test_exit")));

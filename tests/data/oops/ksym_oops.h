// SPDX-License-Identifier: GPL-2.0
/*
 * A module that faults on load, one way per build (tests/qemu_oops.rs):
 * KSYM_OOPS_MODE 1: BUG() in .text; 2: WARN() in .text; 3: a NULL
 * dereference in .text; 4: a NULL dereference in .init.text.
 */
#include <linux/module.h>
#include <linux/init.h>
#include <linux/bug.h>

static int *ksym_oops_null_ptr;

/*
 * Code before the faulting function, in its section: the kernel prints 42
 * bytes before the faulting instruction on a `Code:` line, and the first
 * function of a module's memory has none mapped before it.
 */
static noinline __cold int ksym_oops_pad(int x)
{
	volatile int a[16];
	int i;

	for (i = 0; i < 16; i++)
		a[i] = x * i + 3;
	return a[x & 15] + a[(x + 7) & 15];
}

static noinline __cold int ksym_oops_fault(int how)
{
	switch (how) {
	case 1:
		BUG();
	case 2:
		WARN(1, "ksym_oops: WARN from .text\n");
		return 0;
	case 3:
		return READ_ONCE(*ksym_oops_null_ptr);
	}
	return -EINVAL;
}

static noinline __cold int ksym_oops_caller(int how)
{
	int r = ksym_oops_fault(how);

	barrier();
	return r + 1;
}

/* The same before the init function, in .init.text. */
static noinline int __init ksym_oops_init_pad(int x)
{
	volatile int a[16];
	int i;

	for (i = 0; i < 16; i++)
		a[i] = x * i + 5;
	return a[x & 15] + a[(x + 3) & 15];
}

static int __init ksym_oops_init(void)
{
	if (ksym_oops_pad(KSYM_OOPS_MODE) < 0 || ksym_oops_init_pad(KSYM_OOPS_MODE) < 0)
		return -EINVAL;
	if (KSYM_OOPS_MODE == 4)
		return READ_ONCE(*ksym_oops_null_ptr);
	return ksym_oops_caller(KSYM_OOPS_MODE) > 0 ? 0 : -EINVAL;
}

static void __exit ksym_oops_exit(void)
{
}

module_init(ksym_oops_init);
module_exit(ksym_oops_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ksym test: fault on load");

/* A user-space fault for scripts/qemu-oops.sh (tests/qemu_oops.rs): built
 * static-pie and run by the guest's init, it dereferences NULL in a
 * function of its own, and the kernel reports it as
 * `segv[PID]: segfault at 0 ip … error 4 in segv[START+SIZE]` (Linux 6.1's
 * bracket: the mapping alone). */
__attribute__((noinline)) static int fault(volatile int *p)
{
	return *p + 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	return fault((volatile int *)(long)(argc - 1));
}

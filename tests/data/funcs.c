/* ksym-pack --elf (tests/user_space.rs): functions aligned to 64 bytes so
   that padding follows them, a static one, a weak one, an alias, and a
   glibc-style hidden alias; built as a PIE and as a shared library. */
#include <stdio.h>

#define ALIGNED __attribute__((noinline, aligned(64)))

ALIGNED static int helper(int x) { return x * 3 + 1; }

ALIGNED int exported(int x) { return helper(x) + 2; }

/* The public name and glibc's hidden spelling of one function. */
ALIGNED int public_fn(int x) { return exported(x) ^ 5; }
extern int __GI_public_fn(int) __attribute__((alias("public_fn")));

ALIGNED __attribute__((weak)) int weak_fn(int x) { return x - 7; }

ALIGNED int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", public_fn(argc) + weak_fn(argc));
    return 0;
}

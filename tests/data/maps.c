/* ksym-resolve --maps (tests/user_space.rs): prints the runtime addresses
   of two of its functions and of libc's puts, then its own
   /proc/self/maps. */
#include <stdio.h>

__attribute__((noinline)) int exported(int x) { return x + 1; }

static __attribute__((noinline)) int helper(int x) { return x * 2; }

int main(void) {
    printf("exported %p\nhelper %p\nputs %p\n", (void *)exported, (void *)helper, (void *)puts);
    FILE *f = fopen("/proc/self/maps", "r");
    char buf[4096];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stdout);
    return helper(exported(0)) == 2 ? 0 : 1;
}

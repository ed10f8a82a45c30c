/* A user-space crash for tests/perf_store.rs: built with ASan it reads
 * past a heap block (a sanitizer report with unnamed frames under
 * ASAN_OPTIONS=symbolize=0); built plain it prints glibc's
 * backtrace_symbols first, then exits with the byte it read. */
#include <execinfo.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) static int overflow(int n)
{
	char *p = malloc(8);
	memset(p, 0, 8);
	int r = p[n];
	free(p);
	return r;
}
__attribute__((noinline)) void trace(void)
{
	void *pcs[16];
	int n = backtrace(pcs, 16);
	backtrace_symbols_fd(pcs, n, 2);
}
__attribute__((noinline)) int outer(int n) { trace(); return overflow(n); }
int main(int argc, char **argv) { (void)argv; return outer(argc + 8); }

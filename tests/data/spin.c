/* The workload of tests/process_maps.rs's bpftrace capture: about 0.6 s in
 * its own functions and libc's snprintf, with frame pointers; then it
 * copies its own /proc/self/maps to argv[1] and exits, so that bpftrace
 * prints its stacks after it is gone (every user frame `ADDR 0xADDR
 * ([unknown])`). */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static unsigned long digits(unsigned long i)
{
	char b[32];
	snprintf(b, sizeof b, "%lu", i);
	return strlen(b);
}

__attribute__((noinline)) unsigned long spin(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += digits(i);
	return s;
}

int main(int argc, char **argv)
{
	unsigned long t = 0;
	for (int i = 0; i < 20; i++)
		t += spin(200000);
	FILE *in = fopen("/proc/self/maps", "r");
	FILE *out = argc > 1 ? fopen(argv[1], "w") : NULL;
	char b[4096];
	size_t n;
	while (in && out && (n = fread(b, 1, sizeof b, in)) > 0)
		fwrite(b, 1, n, out);
	return !(out && fclose(out) == 0 && t > 0);
}

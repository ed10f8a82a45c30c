/* A tiny JIT for tests/perf_map.rs: copies a counting loop twice into
 * anonymous executable memory, writes DIR/perf-PID.map as V8 or the JVM's
 * perf-map-agent do (perf's jit-interface.txt: "START SIZE NAME" in hex),
 * runs both copies and prints the map's path. DIR is argv[1]: not /tmp,
 * so that perf script leaves the JIT's frames [unknown]. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const unsigned char spin[] = {
    0xb9, 0x00, 0x00, 0x00, 0x02, /* mov $0x2000000, %ecx */
    0xff, 0xc9,                   /* 1: dec %ecx */
    0x75, 0xfc,                   /* jne 1b */
    0xc3,                         /* ret */
};

int main(int argc, char **argv)
{
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char path[4096];
    FILE *f;
    if (argc < 2 || code == MAP_FAILED)
        return 2;
    memcpy(code, spin, sizeof spin);
    memcpy(code + 64, spin, sizeof spin);
    snprintf(path, sizeof path, "%s/perf-%d.map", argv[1], (int)getpid());
    f = fopen(path, "w");
    if (!f)
        return 2;
    fprintf(f, "%lx %zx jit_spin\n", (unsigned long)code, sizeof spin);
    fprintf(f, "%lx %zx Script:~spin b.js:3:7\n", (unsigned long)(code + 64), sizeof spin);
    fclose(f);
    for (int i = 0; i < 40; i++) {
        ((void (*)(void))code)();
        ((void (*)(void))(code + 64))();
    }
    printf("%s\n", path);
    return 0;
}

// What a page costs the first time it is written, in a fresh anonymous mapping: by page faults
// (mode 0), mapped first by madvise(MADV_POPULATE_WRITE) (mode 1), or asked for 2 MiB pages
// with madvise(MADV_HUGEPAGE) (mode 2). Four rounds, each a new mapping of MiB mebibytes.
//   cc -O2 faults.c -o faults && ./faults 64 0 && ./faults 64 1 && ./faults 64 2
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double microseconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
    if (argc != 3) return fprintf(stderr, "usage: faults MiB mode(0|1|2)\n"), 1;
    const size_t bytes = (size_t)atoi(argv[1]) << 20;
    const int mode = atoi(argv[2]);
    for (int round = 0; round < 4; ++round) {
        char* p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return perror("mmap"), 1;
        const double start = microseconds();
        if (mode == 1 && madvise(p, bytes, MADV_POPULATE_WRITE) != 0) perror("MADV_POPULATE_WRITE");
        if (mode == 2 && madvise(p, bytes, MADV_HUGEPAGE) != 0) perror("MADV_HUGEPAGE");
        for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
        const double took = microseconds() - start;
        printf("mode %d round %d: %.0f us, %.2f us per 4 KiB\n", mode, round, took, took / (bytes / 4096));
        munmap(p, bytes);
    }
    return 0;
}

/* SPDX-License-Identifier: MIT */
/* The fault microbenchmark of the performance budget: mmap 256 MiB anonymous, write every
 * 4 KiB page, munmap, repeat. Prints the time per fault, so runs with and without a tracer
 * attached can be compared.
 *
 * usage: fault-bench [ROUNDS] [MIB]      (default 20 rounds of 256 MiB)
 * prints: rounds=R pages=P seconds=S ns_per_fault=N */

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 20;
        long mib = argc > 2 ? strtol(argv[2], NULL, 10) : 256;
        long page = sysconf(_SC_PAGESIZE);
        struct timespec a, b;
        size_t size, pages;

        if (rounds <= 0 || mib <= 0 || mib > 1L << 20) {
                fprintf(stderr, "usage: fault-bench [ROUNDS] [MIB]\n");
                return 2;
        }
        size = (size_t) mib << 20;
        pages = size / (size_t) page;

        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long r = 0; r < rounds; r++) {
                char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED) {
                        perror("mmap");
                        return 1;
                }
                /* 4 KiB faults, not 2 MiB ones: that is what the budget is measured on. */
                (void) madvise(m, size, MADV_NOHUGEPAGE);
                for (size_t i = 0; i < pages; i++)
                        ((volatile char *) m)[i * (size_t) page] = 1;
                munmap(m, size);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);

        double s = (double) (b.tv_sec - a.tv_sec) + (double) (b.tv_nsec - a.tv_nsec) / 1e9;
        printf("rounds=%ld pages=%zu seconds=%.4f ns_per_fault=%.1f\n", rounds, pages * (size_t) rounds, s,
               s * 1e9 / ((double) pages * (double) rounds));
        return 0;
}

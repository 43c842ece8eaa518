/* SPDX-License-Identifier: MIT */
/* Test workload: major faults that swap pages in. Maps PAGES pages, private anonymous memory
 * (anon) or a memfd mapped shared (shmem: shared memory), writes each, pushes them out to swap
 * (MADV_PAGEOUT, Linux 5.4), checks with mincore() how many left memory, and reads each page
 * again: a page read back from swap is a major fault. Its own major faults of that read, as the
 * kernel accounts them (getrusage), are what the test compares trapstatd's counts with; the reads
 * are all in read_back(), a function of its own, which the test finds the sites of those faults
 * in. Needs swap (the test turns on zram).
 *
 * usage: swap-in anon|shmem PAGES
 * prints: {"pid": P, "kind": K, "pages": N, "out": O, "majflt": M}
 *   O: the pages not resident after the pageout; M: major faults while reading them back.
 * Exit 77 where MADV_PAGEOUT is unknown (EINVAL); 3 on another failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static long majflt(void) {
        struct rusage ru;

        if (getrusage(RUSAGE_SELF, &ru) < 0)
                exit(3);
        return ru.ru_majflt;
}

/* Pages of mem not resident. */
static long not_resident(char *mem, long n, long page) {
        unsigned char *vec = malloc((size_t) n);
        long out = 0;

        if (!vec || mincore(mem, (size_t) (n * page), vec) < 0)
                exit(3);
        for (long i = 0; i < n; i++)
                out += !(vec[i] & 1);
        free(vec);
        return out;
}

/* Reads the first byte of each of the n pages of mem back: 0, or 3 when one is not what was
 * written. Never inlined: the test names the faulting instructions by this symbol. */
static __attribute__((noinline)) int read_back(const char *mem, long n, long page) {
        for (long i = 0; i < n; i++)
                if (((const volatile char *) mem)[i * page] != (char) (i | 1))
                        return 3;
        return 0;
}

int main(int argc, char *argv[]) {
        long page = sysconf(_SC_PAGESIZE), n, out = 0, before, after;
        bool shmem;
        char *mem;
        int fd = -1;

        if (argc != 3 || (strcmp(argv[1], "anon") != 0 && strcmp(argv[1], "shmem") != 0) ||
            (n = strtol(argv[2], NULL, 10)) <= 0) {
                fprintf(stderr, "usage: swap-in anon|shmem PAGES\n");
                return 2;
        }
        shmem = strcmp(argv[1], "shmem") == 0;
        if (shmem && ((fd = memfd_create("swap-in", MFD_CLOEXEC)) < 0 || ftruncate(fd, n * page) < 0))
                return 3;
        mem = mmap(NULL, (size_t) (n * page), PROT_READ | PROT_WRITE, shmem ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS,
                   fd, 0);
        if (mem == MAP_FAILED)
                return 3;
        /* No transparent huge pages: one fault per 4 KiB page. */
        (void) madvise(mem, (size_t) (n * page), MADV_NOHUGEPAGE);
        for (long i = 0; i < n; i++)
                mem[i * page] = (char) (i | 1);
        /* Reclaim can leave a page it found busy: a few more tries push the rest out. */
        for (int tries = 0; tries < 5 && out < n; tries++) {
                if (madvise(mem, (size_t) (n * page), MADV_PAGEOUT) < 0)
                        return errno == EINVAL ? 77 : 3;
                out = not_resident(mem, n, page);
        }

        before = majflt();
        if (read_back(mem, n, page) != 0)
                return 3;
        after = majflt();

        printf("{\"pid\": %d, \"kind\": \"%s\", \"pages\": %ld, \"out\": %ld, \"majflt\": %ld}\n", getpid(), argv[1], n,
               out, after - before);
        fflush(stdout);
        return 0;
}

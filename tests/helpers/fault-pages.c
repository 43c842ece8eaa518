/* SPDX-License-Identifier: MIT */
/* Test workload: writes N fresh anonymous pages (N user-mode write faults on not-present
 * pages), reports its own minflt before and after from /proc/self/stat, and exits.
 *
 * usage: fault-pages N
 * prints: {"pid": P, "pages": N, "minfltBefore": A, "minfltAfter": B}
 * Linked statically so that start-up faults (the dynamic loader) stay few. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static unsigned long long minflt(void) {
        char buf[1024];
        unsigned long long v = 0;
        FILE *f = fopen("/proc/self/stat", "re");
        size_t n;
        char *p;

        if (!f)
                exit(3);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')');
        /* field 10 (minflt) is the 8th after ") " */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %llu", &v) != 1)
                exit(3);
        return v;
}

int main(int argc, char *argv[]) {
        long page = sysconf(_SC_PAGESIZE);
        unsigned long long before, after;
        long n;
        char *mem;

        if (argc != 2 || (n = strtol(argv[1], NULL, 10)) <= 0) {
                fprintf(stderr, "usage: fault-pages N\n");
                return 2;
        }
        mem = mmap(NULL, (size_t) n * (size_t) page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
                return 3;
        /* No transparent huge pages: one fault per 4 KiB page, exactly. */
        (void) madvise(mem, (size_t) n * (size_t) page, MADV_NOHUGEPAGE);

        before = minflt();
        for (long i = 0; i < n; i++)
                ((volatile char *) mem)[i * page] = 1;
        after = minflt();

        printf("{\"pid\": %d, \"pages\": %ld, \"minfltBefore\": %llu, \"minfltAfter\": %llu}\n", getpid(), n, before, after);
        fflush(stdout);
        return 0;
}

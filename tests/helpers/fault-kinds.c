/* SPDX-License-Identifier: MIT */
/* Test workload: takes page faults of a given kind, reports its own majflt and minflt
 * before and after from /proc/self/stat, and exits.
 *
 * usage: fault-kinds --major N FILE | --kernel N
 *   --major N FILE  exactly N major faults: writes N pages to FILE (created if need be;
 *                   its first N pages are overwritten), drops them from the page cache,
 *                   maps FILE with readahead off and reads one byte of each page. FILE
 *                   must be on a disk-backed filesystem: tmpfs pages cannot be dropped
 *                   from the page cache, so they never fault in as major faults.
 *   --kernel N      at least N faults taken in kernel mode: read(2)s a page from
 *                   /dev/zero into each of N untouched anonymous pages, so that the
 *                   kernel's copy to user space faults each of them in.
 * prints: {"pid": P, "mode": "major"|"kernel", "n": N, "majfltBefore": A, "majfltAfter": B,
 *          "minfltBefore": C, "minfltAfter": D}
 * A count short of N is an error: a message on stderr and exit status 1 (2 for bad
 * usage, 3 for a failed system call).
 * Linked statically so that start-up faults (the dynamic loader) stay few. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

struct faults {
        unsigned long long minflt, majflt;
};

static _Noreturn void fail(int status, const char *fmt, const char *arg) {
        fprintf(stderr, "fault-kinds: ");
        fprintf(stderr, fmt, arg);
        if (status == 3)
                fprintf(stderr, ": %s", strerror(errno));
        fputc('\n', stderr);
        exit(status);
}

/* open/read into a static buffer rather than stdio: no allocation, so reading the
 * counters adds no faults of its own between "before" and "after". Callers read them once
 * to warm up first: the first call's parsing, after its snapshot, faults in sscanf's code. */
static struct faults read_faults(void) {
        static char buf[1024];
        struct faults f;
        ssize_t n;
        char *p;
        int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                fail(3, "%s", "/proc/self/stat");
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                fail(3, "%s", "read /proc/self/stat");
        buf[n] = '\0';
        /* The command name may hold spaces and parentheses: count from its last ')'.
         * Fields 10 (minflt) and 12 (majflt) are the 8th and 10th after ") ". */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %llu %*u %llu", &f.minflt, &f.majflt) != 2)
                fail(1, "%s", "cannot parse /proc/self/stat");
        return f;
}

static void pause_ms(long ms) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static size_t resident(const void *mem, size_t len, size_t page, unsigned char *vec) {
        size_t count = 0;

        if (mincore((void *) mem, len, vec) < 0)
                fail(3, "%s", "mincore");
        for (size_t i = 0; i < len / page; i++)
                count += vec[i] & 1;
        return count;
}

static struct faults major(long n, const char *path, struct faults *after) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), len = (size_t) n * page, left = 0;
        unsigned char *vec = malloc((size_t) n);
        char *buf = malloc(page);
        volatile const char *mem;
        struct faults before;
        struct statfs sfs;
        unsigned sum = 0;
        int fd;

        if (!vec || !buf)
                fail(3, "%s", "malloc");
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                fail(3, "open %s", path);
        if (fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC)
                fail(1, "%s is on tmpfs, whose pages cannot be dropped from the page cache "
                        "and never fault in as major faults: use a disk-backed filesystem", path);
        /* Data, not a hole: a hole would fault in without any read from the disk. */
        for (long i = 0; i < n; i++) {
                memset(buf, (int) (i % 255) + 1, page);
                for (size_t done = 0; done < page;) {
                        ssize_t w = pwrite(fd, buf + done, page - done, (off_t) (i * (long) page + (long) done));

                        if (w < 0 && errno != EINTR)
                                fail(3, "write %s", path);
                        done += w > 0 ? (size_t) w : 0;
                }
        }
        /* Dirty pages cannot be dropped: write them back first. */
        if (fsync(fd) < 0)
                fail(3, "fsync %s", path);

        mem = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mem == MAP_FAILED)
                fail(3, "mmap %s", path);
        /* Without readahead each fault reads in just its own page: one major fault per
         * page, not one per readahead window. */
        if (madvise((void *) mem, len, MADV_RANDOM) < 0)
                fail(3, "%s", "madvise(MADV_RANDOM)");

        /* The drop can leave pages behind (still under writeback, or held in a per-CPU
         * LRU batch): try again for a while, and check with mincore() that none stay. */
        for (int attempt = 0; attempt < 50; attempt++) {
                errno = posix_fadvise(fd, 0, (off_t) len, POSIX_FADV_DONTNEED);
                if (errno)
                        fail(3, "posix_fadvise(DONTNEED) %s", path);
                left = resident((const void *) mem, len, page, vec);
                if (left == 0)
                        break;
                pause_ms(20);
        }
        if (left) {
                fprintf(stderr, "fault-kinds: %zu of %ld pages of %s are still in the page cache after "
                        "POSIX_FADV_DONTNEED\n", left, n, path);
                exit(1);
        }

        (void) read_faults();
        before = read_faults();
        for (long i = 0; i < n; i++)
                sum += (unsigned char) mem[(size_t) i * page];
        *after = read_faults();

        /* Also checks the pages were read back, not faulted in as zero-filled holes. */
        {
                unsigned expect = 0;

                for (long i = 0; i < n; i++)
                        expect += (unsigned) (i % 255) + 1;
                if (sum != expect)
                        fail(1, "%s: data read back through the mapping differs from what was written", path);
        }
        munmap((void *) mem, len);
        close(fd);
        free(vec);
        free(buf);
        return before;
}

static struct faults kernel(long n, struct faults *after) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), len = (size_t) n * page;
        struct faults before;
        char *mem;
        int fd;

        mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
                fail(3, "%s", "mmap");
        /* No transparent huge pages: one fault per 4 KiB page. */
        (void) madvise(mem, len, MADV_NOHUGEPAGE);
        fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                fail(3, "%s", "/dev/zero");

        (void) read_faults();
        before = read_faults();
        /* The pages are untouched: the kernel's clear_user() for each read() takes the
         * page fault, in kernel mode, on our behalf. */
        for (long i = 0; i < n; i++)
                if (read(fd, mem + (size_t) i * page, page) != (ssize_t) page)
                        fail(3, "%s", "read /dev/zero");
        *after = read_faults();

        close(fd);
        munmap(mem, len);
        return before;
}

static _Noreturn void usage(void) {
        fprintf(stderr, "usage: fault-kinds --major N FILE | --kernel N\n");
        exit(2);
}

int main(int argc, char *argv[]) {
        struct faults before, after;
        int is_major;
        char *end;
        long n;

        if (argc < 3)
                usage();
        is_major = strcmp(argv[1], "--major") == 0;
        if (!is_major && strcmp(argv[1], "--kernel") != 0)
                usage();
        if (argc != (is_major ? 4 : 3))
                usage();
        errno = 0;
        n = strtol(argv[2], &end, 10);
        if (errno || end == argv[2] || *end || n <= 0)
                usage();

        if (is_major) {
                before = major(n, argv[3], &after);
                if (after.majflt - before.majflt != (unsigned long long) n) {
                        fprintf(stderr, "fault-kinds: %llu major faults for %ld pages, not %ld\n",
                                after.majflt - before.majflt, n, n);
                        return 1;
                }
        } else {
                before = kernel(n, &after);
                if (after.minflt - before.minflt < (unsigned long long) n) {
                        fprintf(stderr, "fault-kinds: %llu minor faults for %ld pages, fewer than %ld\n",
                                after.minflt - before.minflt, n, n);
                        return 1;
                }
        }

        printf("{\"pid\": %d, \"mode\": \"%s\", \"n\": %ld, \"majfltBefore\": %llu, \"majfltAfter\": %llu, "
               "\"minfltBefore\": %llu, \"minfltAfter\": %llu}\n",
               getpid(), is_major ? "major" : "kernel", n, before.majflt, after.majflt, before.minflt, after.minflt);
        if (fflush(stdout) != 0) {
                perror("fault-kinds: stdout");
                return 3;
        }
        return 0;
}

/* SPDX-License-Identifier: MIT */
/* Test workload: N page faults that each take at least HOLD_MS milliseconds, and its own timing
 * of them. The pages are registered with userfaultfd (missing pages); a handler thread receives
 * each fault, sleeps HOLD_MS and only then fills the page (UFFDIO_COPY), so the faulting thread
 * waits inside the fault that long. The kernel accounts such a fault as minor. The main thread
 * times each access with CLOCK_MONOTONIC: the fault is inside that span, so the kernel's time of
 * a fault is at most the helper's.
 *
 * usage: slow-faults N HOLD_MS
 * prints: {"pid": P, "faults": N, "holdMs": H, "minNs": A, "maxNs": B, "sumNs": C}
 *   (A, B, C: the shortest, longest and summed access as the helper measured them) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int uffd;
static long page, hold_ms;

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static void *handler(void *arg) {
        char *fill = arg;

        for (;;) {
                struct uffd_msg msg;
                struct pollfd p = { .fd = uffd, .events = POLLIN };
                struct timespec hold = { .tv_sec = hold_ms / 1000, .tv_nsec = (hold_ms % 1000) * 1000000 };

                if (poll(&p, 1, -1) < 0 || read(uffd, &msg, sizeof(msg)) != (ssize_t) sizeof(msg))
                        exit(4);
                if (msg.event != UFFD_EVENT_PAGEFAULT)
                        exit(4);
                while (nanosleep(&hold, &hold) < 0 && errno == EINTR)
                        ;
                struct uffdio_copy copy = {
                        .dst = msg.arg.pagefault.address & ~((unsigned long long) page - 1),
                        .src = (unsigned long) fill,
                        .len = (unsigned long long) page,
                };
                if (ioctl(uffd, UFFDIO_COPY, &copy) < 0)
                        exit(4);
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        uint64_t min = UINT64_MAX, max = 0, sum = 0;
        pthread_t thread;
        long n;
        char *mem, *fill;

        if (argc != 3 || (n = strtol(argv[1], NULL, 10)) <= 0 || (hold_ms = strtol(argv[2], NULL, 10)) < 0) {
                fprintf(stderr, "usage: slow-faults N HOLD_MS\n");
                return 2;
        }
        page = sysconf(_SC_PAGESIZE);
        uffd = (int) syscall(SYS_userfaultfd, O_CLOEXEC);
        if (uffd < 0) {
                perror("userfaultfd");
                return 77;
        }
        struct uffdio_api api = { .api = UFFD_API };
        if (ioctl(uffd, UFFDIO_API, &api) < 0)
                return 3;
        mem = mmap(NULL, (size_t) n * (size_t) page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        fill = mmap(NULL, (size_t) page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED || fill == MAP_FAILED)
                return 3;
        fill[0] = 1; /* its own fault, before the timed ones */
        (void) madvise(mem, (size_t) n * (size_t) page, MADV_NOHUGEPAGE);
        struct uffdio_register reg = {
                .range = { .start = (unsigned long) mem, .len = (unsigned long long) n * (unsigned long long) page },
                .mode = UFFDIO_REGISTER_MODE_MISSING,
        };
        if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
                return 3;
        if (pthread_create(&thread, NULL, handler, fill) != 0)
                return 3;

        for (long i = 0; i < n; i++) {
                uint64_t t0 = now_ns(), d;

                (void) ((volatile char *) mem)[i * page];
                d = now_ns() - t0;
                min = d < min ? d : min;
                max = d > max ? d : max;
                sum += d;
        }
        printf("{\"pid\": %d, \"faults\": %ld, \"holdMs\": %ld, \"minNs\": %llu, \"maxNs\": %llu, \"sumNs\": %llu}\n",
               getpid(), n, hold_ms, (unsigned long long) min, (unsigned long long) max, (unsigned long long) sum);
        fflush(stdout);
        return 0;
}

/* SPDX-License-Identifier: MIT */
/* Workload for bench/daemon-cost.py and bench/live-bench.py: N processes that each fault a
 * little every interval, so that every tick of trapstatd has N live processes with non-zero
 * deltas to drain, store and stream; or N idle ones, tracked but doing nothing.
 *
 * usage: live-procs N INTERVAL_MS PAGES
 * Each child writes PAGES pages it has not touched yet (PAGES user faults), sleeps INTERVAL_MS,
 * and repeats until the parent gets SIGTERM or SIGINT; the parent then ends them all and exits
 * 0. With INTERVAL_MS 0 each child writes its PAGES pages once and then sleeps until the end:
 * counted once, tracked from then on. Prints "ready N" once every child has written its first
 * pages.
 *
 * The pages come from one standing mapping of ROUNDS rounds, emptied with MADV_DONTNEED once
 * every round has been used, not from a fresh mmap and munmap every round: on a VM where a TLB
 * flush is an IPI to every CPU the process last ran on, unmapping every round cost more than
 * the faults (2000 children: 22 % of two CPUs with munmap each round). */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig) {
        (void) sig;
        stop = 1;
}

#define ROUNDS 64

static void child(long interval_ms, long pages, int ready_fd) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), size = (size_t) pages * ROUNDS * page;
        struct timespec ts = { .tv_sec = interval_ms / 1000, .tv_nsec = (interval_ms % 1000) * 1000000L };
        char *p;

        /* Ends with the parent, however the parent ends. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                _exit(3);
        for (long round = 0;; round = (round + 1) % ROUNDS) {
                if (round == 0 && madvise(p, size, MADV_DONTNEED) < 0)
                        _exit(3);
                for (long i = 0; i < pages; i++)
                        p[((size_t) round * (size_t) pages + (size_t) i) * page] = 1;
                if (ready_fd >= 0) {
                        close(ready_fd);
                        ready_fd = -1;
                }
                if (interval_ms == 0)
                        for (;;)
                                pause();
                nanosleep(&ts, NULL);
        }
}

int main(int argc, char *argv[]) {
        struct sigaction sa = { .sa_handler = on_stop };
        long n, interval_ms, pages;
        int ready[2];
        pid_t *pids;
        char c;

        if (argc != 4 || (n = strtol(argv[1], NULL, 10)) <= 0 || (interval_ms = strtol(argv[2], NULL, 10)) < 0 ||
            (pages = strtol(argv[3], NULL, 10)) <= 0) {
                fprintf(stderr, "usage: live-procs N INTERVAL_MS PAGES\n");
                return 2;
        }
        pids = calloc((size_t) n, sizeof(*pids));
        if (!pids)
                return 1;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        /* Every child holds the pipe's write end until its first pages are written: the read
         * below ends when the last one let go. */
        if (pipe2(ready, O_CLOEXEC) < 0)
                return 1;

        for (long i = 0; i < n; i++) {
                pids[i] = fork();
                if (pids[i] < 0) {
                        fprintf(stderr, "live-procs: fork: %s\n", strerror(errno));
                        n = i;
                        stop = 1;
                        break;
                }
                if (pids[i] == 0) {
                        close(ready[0]);
                        child(interval_ms, pages, ready[1]);
                }
        }
        close(ready[1]);
        while (read(ready[0], &c, 1) < 0 && errno == EINTR)
                ;
        close(ready[0]);
        if (!stop) {
                printf("ready %ld\n", n);
                fflush(stdout);
        }
        while (!stop)
                pause();
        for (long i = 0; i < n; i++)
                kill(pids[i], SIGKILL);
        while (wait(NULL) > 0 || errno == EINTR)
                ;
        free(pids);
        return 0;
}

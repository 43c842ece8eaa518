/* SPDX-License-Identifier: MIT */
/* Workload for bench/daemon-cost.py: N processes that each fault a little every interval, so
 * that every tick of trapstatd has N live processes with non-zero deltas to drain, store and
 * stream.
 *
 * usage: live-procs N INTERVAL_MS PAGES
 * Each child maps PAGES fresh anonymous pages, writes each (PAGES user faults), unmaps, sleeps
 * INTERVAL_MS, and repeats until the parent gets SIGTERM or SIGINT; the parent then ends them
 * all and exits 0. Prints "ready N" once every child runs. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
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

static void child(long interval_ms, long pages) {
        long page = sysconf(_SC_PAGESIZE);
        struct timespec ts = { .tv_sec = interval_ms / 1000, .tv_nsec = (interval_ms % 1000) * 1000000L };

        /* Ends with the parent, however the parent ends. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;) {
                char *p = mmap(NULL, (size_t) (pages * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

                if (p == MAP_FAILED)
                        _exit(3);
                for (long i = 0; i < pages; i++)
                        p[i * page] = 1;
                munmap(p, (size_t) (pages * page));
                nanosleep(&ts, NULL);
        }
}

int main(int argc, char *argv[]) {
        struct sigaction sa = { .sa_handler = on_stop };
        long n, interval_ms, pages;
        pid_t *pids;

        if (argc != 4 || (n = strtol(argv[1], NULL, 10)) <= 0 || (interval_ms = strtol(argv[2], NULL, 10)) <= 0 ||
            (pages = strtol(argv[3], NULL, 10)) <= 0) {
                fprintf(stderr, "usage: live-procs N INTERVAL_MS PAGES\n");
                return 2;
        }
        pids = calloc((size_t) n, sizeof(*pids));
        if (!pids)
                return 1;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);

        for (long i = 0; i < n; i++) {
                pids[i] = fork();
                if (pids[i] < 0) {
                        fprintf(stderr, "live-procs: fork: %s\n", strerror(errno));
                        n = i;
                        stop = 1;
                        break;
                }
                if (pids[i] == 0)
                        child(interval_ms, pages);
        }
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

/* SPDX-License-Identifier: MIT */
/* Test workload: waits on swap-ins spread over threads, some of which have exited. Starts THREADS
 * threads; each maps PAGES pages of its own private anonymous memory, writes each, pushes them out
 * to swap (MADV_PAGEOUT, Linux 5.4), checks with mincore() how many left memory, and reads each page
 * again: every page read back from swap is a major fault and, while kernel.task_delayacct is 1, a
 * swap-in delay of that thread. EXITED of the threads then exit and are joined, so that the kernel
 * has moved their delays into the process's exited-threads total (signal->stats, taken in do_exit
 * before the thread's exit wakes pthread_join); the others stay alive, blocked, with their delays in
 * their own task. Then the process reports and blocks until stdin closes, so that a test can read
 * its figures while nothing changes them; it then lets its threads end and exits 0. Needs swap
 * (the test turns on zram).
 *
 * usage: stall-threads THREADS PAGES EXITED
 * prints: {"pid": P, "threads": T, "exited": E, "pages": N, "out": O, "majflt": M}
 *   N: pages per thread; O: the pages of all threads not resident after the pageout; M: the major
 *   faults of all threads' read phases, each thread's own (getrusage RUSAGE_THREAD).
 * Exit 77 where MADV_PAGEOUT is unknown (EINVAL); 2 for bad usage; 3 on another failure.
 * Linked statically so that start-up faults (the dynamic loader) stay few. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
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

/* Threads beyond this would only slow the test machine down. */
#define THREADS_MAX 64

typedef struct Worker {
        pthread_t thread;
        long pages;
        bool stays; /* alive until released */
        long out;   /* pages not resident after the pageout */
        long majflt;
        int error; /* the exit status for the failure, 0 if none */
} Worker;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int finished;  /* workers done with their pages */
static bool released; /* stdin closed: the workers that stay may end */

static long thread_majflt(void) {
        struct rusage ru;

        if (getrusage(RUSAGE_THREAD, &ru) < 0)
                return -1;
        return ru.ru_majflt;
}

/* Pages of mem not resident, or -1. */
static long not_resident(char *mem, long n, long page) {
        unsigned char *vec = malloc((size_t) n);
        long out = 0;

        if (!vec || mincore(mem, (size_t) (n * page), vec) < 0) {
                free(vec);
                return -1;
        }
        for (long i = 0; i < n; i++)
                out += !(vec[i] & 1);
        free(vec);
        return out;
}

/* Write, page out, read back. 0, or the exit status for the failure. */
static int swap_pages(Worker *w) {
        long page = sysconf(_SC_PAGESIZE), n = w->pages, before, after;
        size_t size = (size_t) (n * page);
        char *mem;

        mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
                return 3;
        /* No transparent huge pages: one fault (one swap-in) per 4 KiB page. */
        (void) madvise(mem, size, MADV_NOHUGEPAGE);
        for (long i = 0; i < n; i++)
                mem[i * page] = (char) (i | 1);
        /* Reclaim can leave a page it found busy: a few more tries push the rest out. */
        for (int tries = 0; tries < 5 && w->out < n; tries++) {
                if (madvise(mem, size, MADV_PAGEOUT) < 0)
                        return errno == EINVAL ? 77 : 3;
                w->out = not_resident(mem, n, page);
                if (w->out < 0)
                        return 3;
        }

        before = thread_majflt();
        for (long i = 0; i < n; i++)
                if (((volatile char *) mem)[i * page] != (char) (i | 1))
                        return 3;
        after = thread_majflt();
        if (before < 0 || after < 0)
                return 3;
        w->majflt = after - before;
        /* Unmapped now: what was read back is never swapped again, so nothing more is waited for. */
        return munmap(mem, size) < 0 ? 3 : 0;
}

static void *worker_run(void *arg) {
        Worker *w = arg;

        w->error = swap_pages(w);
        pthread_mutex_lock(&lock);
        finished++;
        pthread_cond_broadcast(&changed);
        while (w->stays && !released)
                pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        return NULL;
}

static long parse_count(const char *s, long min, long max) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max)
                return -1;
        return v;
}

int main(int argc, char *argv[]) {
        static Worker workers[THREADS_MAX];
        long threads, pages, exited, out = 0, majflt = 0;
        char buf[256];
        int r;

        if (argc != 4 || (threads = parse_count(argv[1], 1, THREADS_MAX)) < 0 ||
            (pages = parse_count(argv[2], 1, 1L << 20)) < 0 || (exited = parse_count(argv[3], 0, threads)) < 0) {
                fprintf(stderr, "usage: stall-threads THREADS PAGES EXITED (THREADS 1-%d, EXITED 0-THREADS)\n",
                        THREADS_MAX);
                return 2;
        }
        for (long i = 0; i < threads; i++) {
                workers[i] = (Worker){ .pages = pages, .stays = i >= exited };
                r = pthread_create(&workers[i].thread, NULL, worker_run, &workers[i]);
                if (r != 0) {
                        fprintf(stderr, "stall-threads: pthread_create: %s\n", strerror(r));
                        return 3;
                }
        }
        pthread_mutex_lock(&lock);
        while (finished < threads)
                pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        /* The exited ones are gone from the kernel's thread list once joined (see the top). */
        for (long i = 0; i < exited; i++)
                pthread_join(workers[i].thread, NULL);
        for (long i = 0; i < threads; i++) {
                if (workers[i].error) {
                        fprintf(stderr, "stall-threads: thread %ld failed%s\n", i,
                                workers[i].error == 77 ? ": MADV_PAGEOUT unknown to this kernel" : "");
                        return workers[i].error;
                }
                out += workers[i].out;
                majflt += workers[i].majflt;
        }

        printf("{\"pid\": %d, \"threads\": %ld, \"exited\": %ld, \"pages\": %ld, \"out\": %ld, \"majflt\": %ld}\n",
               getpid(), threads, exited, pages, out, majflt);
        if (fflush(stdout) != 0)
                return 3;
        while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
                ;

        pthread_mutex_lock(&lock);
        released = true;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
        for (long i = exited; i < threads; i++)
                pthread_join(workers[i].thread, NULL);
        return 0;
}

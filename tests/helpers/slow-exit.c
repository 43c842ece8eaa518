/* SPDX-License-Identifier: MIT */
/* Test workload: a process whose thread that ends it is slow to exit. The main thread writes
 * PAGES fresh pages and starts a second thread, then waits. The second thread gives itself its
 * own file table (unshare(CLONE_FILES)), fills it up to descriptor FDS - 1, writes PAGES fresh
 * pages and ends the process with exit_group. It leaves the thread group first (the main
 * thread still has to be woken by the kill), then spends milliseconds closing FDS
 * descriptors: the main thread's sched_process_exit, the last thread's, fires while the slow
 * thread's faults are not yet folded into the process's signal->min_flt. Whoever reports the
 * process's faults at exit from that tracepoint must not lose the second thread's. (Were the
 * main thread to call exit_group, it would usually leave first, and the slow thread's exit
 * would see everything: measured, that order never lost a fault.)
 *
 * usage: slow-exit PAGES FDS        the process itself; prints nothing
 *        slow-exit --run PAGES FDS  forks it, reaps it with wait4() and prints
 *                                   {"pid": P, "minflt": M, "majflt": J}, the kernel's
 *                                   accounting of the whole process (all its threads)
 * Errors: a message on stderr, exit status 1 (2 for bad usage, 3 for a failed system call).
 * Linked statically so that start-up faults (the dynamic loader) stay few. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct thread_args {
        long pages, fds;
};

static int touch(long pages) {
        long page = sysconf(_SC_PAGESIZE);
        size_t size = (size_t) pages * (size_t) page;
        char *mem;

        mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
                return -errno;
        /* No transparent huge pages: one fault per 4 KiB page, exactly. */
        if (madvise(mem, size, MADV_NOHUGEPAGE) < 0)
                return -errno;
        for (long i = 0; i < pages; i++)
                ((volatile char *) mem)[i * page] = 1;
        return 0;
}

static void *thread_main(void *arg) {
        struct thread_args *a = arg;
        int fd, r;

        if (unshare(CLONE_FILES) < 0) {
                perror("slow-exit: unshare(CLONE_FILES)");
                exit(3);
        }
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                perror("slow-exit: /dev/null");
                exit(3);
        }
        /* Up to the last descriptor FDS allows: the table holds FDS open files. */
        while (fd < a->fds - 1)
                if ((fd = dup(fd)) < 0) {
                        fprintf(stderr, "slow-exit: dup up to descriptor %ld: %s\n", a->fds - 1, strerror(errno));
                        exit(3);
                }
        r = touch(a->pages);
        if (r < 0) {
                fprintf(stderr, "slow-exit: thread's pages: %s\n", strerror(-r));
                exit(3);
        }
        syscall(SYS_exit_group, 0);
        return NULL; /* not reached */
}

/* Descriptors 0 to fds - 1 must be allowed. */
static int raise_nofile(long fds) {
        struct rlimit rl;
        rlim_t want = (rlim_t) fds;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        if (rl.rlim_cur >= want)
                return 0;
        rl.rlim_cur = want;
        if (rl.rlim_max < want)
                rl.rlim_max = want; /* needs CAP_SYS_RESOURCE */
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        return 0;
}

static int workload(long pages, long fds) {
        struct thread_args a = {.pages = pages, .fds = fds};
        pthread_t thread;
        int r;

        r = raise_nofile(fds);
        if (r < 0) {
                fprintf(stderr, "slow-exit: RLIMIT_NOFILE to %ld: %s\n", fds, strerror(-r));
                return 3;
        }
        r = touch(pages);
        if (r < 0) {
                fprintf(stderr, "slow-exit: main thread's pages: %s\n", strerror(-r));
                return 3;
        }
        r = pthread_create(&thread, NULL, thread_main, &a);
        if (r != 0) {
                fprintf(stderr, "slow-exit: pthread_create: %s\n", strerror(r));
                return 3;
        }
        /* Until the thread's exit_group kills this one. */
        for (;;)
                pause();
}

static int run(long pages, long fds) {
        struct rusage ru;
        int status;
        pid_t pid, r;

        if (fflush(NULL) != 0) {
                perror("slow-exit: fflush");
                return 3;
        }
        pid = fork();
        if (pid < 0) {
                perror("slow-exit: fork");
                return 3;
        }
        if (pid == 0)
                _exit(workload(pages, fds));
        do
                r = wait4(pid, &status, 0, &ru);
        while (r < 0 && errno == EINTR);
        if (r < 0) {
                perror("slow-exit: wait4");
                return 3;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "slow-exit: process %d %s %d\n", (int) pid,
                        WIFEXITED(status) ? "exited" : "was killed by signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                return 1;
        }
        printf("{\"pid\": %d, \"minflt\": %ld, \"majflt\": %ld}\n", (int) pid, ru.ru_minflt, ru.ru_majflt);
        if (fflush(stdout) != 0) {
                perror("slow-exit: stdout");
                return 3;
        }
        return 0;
}

static int parse_count(const char *s, long *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v <= 0 || v > 1L << 24)
                return -1;
        *ret = v;
        return 0;
}

int main(int argc, char *argv[]) {
        int wrapper = argc == 4 && strcmp(argv[1], "--run") == 0;
        long pages, fds;

        if ((argc != 3 && !wrapper) || parse_count(argv[argc - 2], &pages) < 0 ||
            parse_count(argv[argc - 1], &fds) < 0) {
                fprintf(stderr, "usage: slow-exit [--run] PAGES FDS\n");
                return 2;
        }
        return wrapper ? run(pages, fds) : workload(pages, fds);
}

/* SPDX-License-Identifier: MIT */
/* Test workload: many processes alive at once. Forks N children; each writes PAGES fresh
 * anonymous pages, tells the parent, and blocks. Once every child has faulted the parent
 * prints their pids and waits for commands on stdin. While the children block, their fault
 * counts stay fixed: what a counter shows for them can be compared with /proc/PID/stat
 * exactly, and N can exceed what the counter's maps hold at once. A round of faults on
 * command lets a test look at a short window in which only the children fault.
 *
 * usage: hold-procs N PAGES
 * prints: {"pids": [P1, ...]} once every child has written its pages
 * stdin:  "touch": every child writes PAGES more fresh pages; prints {"touched": N} once all
 *         have; any other line, end of file or SIGTERM: kills and reaps the children, exits
 * Children die with the parent (PR_SET_PDEATHSIG). Errors: a message on stderr, exit
 * status 1 (2 for bad usage, 3 for a failed system call).
 * Linked statically so that start-up faults (the dynamic loader) stay few. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_READY 'R'
#define CHILD_FAILED 'F'

static volatile sig_atomic_t terminate;

/* Round number, in a page shared with the children: they wait on it as a futex. */
static _Atomic int *round_no;

static void on_term(int sig) {
        (void) sig;
        terminate = 1;
}

static int touch(long pages) {
        long page = sysconf(_SC_PAGESIZE);
        size_t size = (size_t) pages * (size_t) page;
        char *mem;

        mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
                return -1;
        /* No transparent huge pages: one fault per 4 KiB page, exactly. */
        if (madvise(mem, size, MADV_NOHUGEPAGE) < 0)
                return -1;
        for (long i = 0; i < pages; i++)
                ((volatile char *) mem)[i * page] = 1;
        return 0;
}

/* Only async-signal-safe calls in the child: it is the child of a fork. */
static _Noreturn void child(pid_t parent, long pages, int ready) {
        char c = CHILD_READY;
        int seen = 0;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
                goto fail; /* the parent is already gone */
        for (;;) {
                if (touch(pages) < 0)
                        goto fail;
                if (write(ready, &c, 1) != 1)
                        _exit(3);
                /* Until the parent starts the next round (or kills us). */
                while (atomic_load(round_no) == seen)
                        if (syscall(SYS_futex, round_no, FUTEX_WAIT, seen, NULL, NULL, 0) < 0 && errno != EAGAIN &&
                            errno != EINTR)
                                goto fail;
                seen = atomic_load(round_no);
        }
fail:
        c = CHILD_FAILED;
        if (write(ready, &c, 1) != 1)
                _exit(3);
        _exit(3);
}

/* Every child writes one byte per round, ready or failed; a child killed before it wrote
 * leaves end of file once all the others wrote theirs. */
static int collect(int fd, long n) {
        long ready = 0, failed = 0;

        while (ready + failed < n) {
                char buf[4096];
                ssize_t got = read(fd, buf, (size_t) (n - ready - failed < 4096 ? n - ready - failed : 4096));

                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0) {
                        fprintf(stderr, "hold-procs: %ld of %ld children did not report: %s\n", n - ready - failed, n,
                                got < 0 ? strerror(errno) : "a child died");
                        return -1;
                }
                for (ssize_t i = 0; i < got; i++)
                        if (buf[i] == CHILD_READY)
                                ready++;
                        else
                                failed++;
        }
        if (failed) {
                fprintf(stderr, "hold-procs: %ld of %ld children failed to map or write their pages\n", failed, n);
                return -1;
        }
        return 0;
}

static int kill_and_reap(const pid_t *pids, long n) {
        int r = 0;

        for (long i = 0; i < n; i++)
                if (kill(pids[i], SIGKILL) < 0) {
                        fprintf(stderr, "hold-procs: kill %d: %s\n", (int) pids[i], strerror(errno));
                        r = -1;
                }
        for (long i = 0; i < n; i++) {
                int status;

                while (waitpid(pids[i], &status, 0) < 0)
                        if (errno != EINTR) {
                                fprintf(stderr, "hold-procs: waitpid %d: %s\n", (int) pids[i], strerror(errno));
                                r = -1;
                                break;
                        }
        }
        return r;
}

/* Reads one line from stdin, unless SIGTERM (blocked but here) comes first: 1 for "touch",
 * 0 for anything else, end of file or SIGTERM, -1 on error. */
static int read_command(const sigset_t *unblocked) {
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        char line[64];
        size_t len = 0;

        while (!terminate) {
                ssize_t n;
                char c;

                if (ppoll(&p, 1, NULL, unblocked) < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("hold-procs: ppoll");
                        return -1;
                }
                /* A byte at a time: what follows the line stays for the next command. */
                n = read(STDIN_FILENO, &c, 1);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0) {
                        perror("hold-procs: stdin");
                        return -1;
                }
                if (n == 0 || c == '\n')
                        break;
                if (len < sizeof(line) - 1)
                        line[len++] = c;
        }
        line[len] = '\0';
        return !terminate && strcmp(line, "touch") == 0;
}

static int parse_count(const char *s, long *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v <= 0 || v > 1L << 22)
                return -1;
        *ret = v;
        return 0;
}

int main(int argc, char *argv[]) {
        long n, pages, forked = 0;
        sigset_t term, unblocked;
        struct sigaction sa;
        pid_t self = getpid();
        pid_t *pids;
        int pipefd[2], r = 0;

        if (argc != 3 || parse_count(argv[1], &n) < 0 || parse_count(argv[2], &pages) < 0) {
                fprintf(stderr, "usage: hold-procs N PAGES\n");
                return 2;
        }
        pids = calloc((size_t) n, sizeof(*pids));
        if (!pids) {
                perror("hold-procs: calloc");
                return 3;
        }
        round_no = mmap(NULL, sizeof(*round_no), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (round_no == MAP_FAILED) {
                perror("hold-procs: mmap");
                return 3;
        }
        /* SIGTERM is held from here on and taken only while waiting for a command. */
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        if (sigaction(SIGTERM, &sa, NULL) < 0 || sigprocmask(SIG_BLOCK, &term, &unblocked) < 0) {
                perror("hold-procs: SIGTERM");
                return 3;
        }
        sigdelset(&unblocked, SIGTERM);
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                perror("hold-procs: pipe2");
                return 3;
        }
        if (fflush(NULL) != 0) {
                perror("hold-procs: fflush");
                return 3;
        }

        for (; forked < n; forked++) {
                pid_t pid = fork();

                if (pid < 0) {
                        fprintf(stderr, "hold-procs: fork (child %ld of %ld): %s\n", forked + 1, n, strerror(errno));
                        r = 3;
                        break;
                }
                if (pid == 0) {
                        close(pipefd[0]);
                        child(self, pages, pipefd[1]);
                }
                pids[forked] = pid;
        }
        if (close(pipefd[1]) < 0) {
                perror("hold-procs: close");
                r = 3;
        }
        if (collect(pipefd[0], forked) < 0)
                r = r ? r : 1;

        if (r == 0) {
                printf("{\"pids\": [");
                for (long i = 0; i < n; i++)
                        printf("%s%d", i ? ", " : "", (int) pids[i]);
                printf("]}\n");
        }
        while (r == 0) {
                int cmd;

                if (fflush(stdout) != 0) {
                        perror("hold-procs: stdout");
                        r = 3;
                        break;
                }
                cmd = read_command(&unblocked);
                if (cmd <= 0) {
                        r = cmd < 0 ? 3 : 0;
                        break;
                }
                atomic_fetch_add(round_no, 1);
                if (syscall(SYS_futex, round_no, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) < 0) {
                        perror("hold-procs: futex");
                        r = 3;
                        break;
                }
                if (collect(pipefd[0], n) < 0) {
                        r = 1;
                        break;
                }
                printf("{\"touched\": %ld}\n", n);
        }
        if (kill_and_reap(pids, forked) < 0 && r == 0)
                r = 3;
        free(pids);
        return r;
}

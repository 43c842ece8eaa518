/* SPDX-License-Identifier: MIT */
/* Test workload for the symbol worker (tests/integration/test_hostile_symbols.py): traps at N
 * distinct instructions of its own executable, each once, so that each is a site of its own in
 * one function, trap_sled.
 *
 * usage: offset-traps N [--hold]
 *
 * trap_sled is OFFSET_TRAPS_MAX ud2 instructions; the program runs the last N of them: each
 * raises #UD (SIGILL), the handler steps over the 2-byte instruction. With --hold it then
 * waits for SIGUSR1 (or 60 s) before it exits, so that the test can look at it while it lives.
 *
 * prints, one line each, flushed at once:
 *   pid P
 *   sled OFFSET       (the file offset of trap_sled's first ud2, from /proc/self/maps)
 *   done traps=N
 * A signal that is not ours, or a count that differs, is an error (exit status 1; 2 for bad
 * usage). x86-64 only: elsewhere it says so and exits 77 (the tests take it as "skipped"). */

#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#define OFFSET_TRAPS_MAX 1024

#if defined(__x86_64__)

/* A function of OFFSET_TRAPS_MAX ud2, with a symbol type and size, so that every one of them is
 * in trap_sled for a symbolizer. Entered in the middle: the last N run. */
__asm__(".text\n"
        ".globl trap_sled\n"
        ".type trap_sled, @function\n"
        "trap_sled:\n"
        ".rept 1024\n"
        "ud2\n"
        ".endr\n"
        "ret\n"
        ".size trap_sled, .-trap_sled\n");
void trap_sled(void);

static volatile sig_atomic_t traps;

static void on_sigill(int sig, siginfo_t *info, void *uc_void) {
        ucontext_t *uc = uc_void;
        uintptr_t rip = (uintptr_t) uc->uc_mcontext.gregs[REG_RIP];
        uintptr_t start = (uintptr_t) trap_sled;

        (void) sig;
        (void) info;
        if (rip < start || rip >= start + 2 * OFFSET_TRAPS_MAX || (rip - start) % 2 != 0)
                _exit(1);
        traps++;
        uc->uc_mcontext.gregs[REG_RIP] += 2;
}

static void on_sigusr1(int sig) {
        (void) sig;
}

/* The file offset of addr in this executable's mapping. */
static long file_offset(uintptr_t addr) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[512];
        long found = -1;

        if (!f)
                return -1;
        while (found < 0 && fgets(line, sizeof(line), f)) {
                unsigned long start, end, off;

                if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &off) == 3 && addr >= start && addr < end)
                        found = (long) (addr - start + off);
        }
        fclose(f);
        return found;
}

int main(int argc, char *argv[]) {
        struct sigaction sa = { .sa_sigaction = on_sigill, .sa_flags = SA_SIGINFO };
        bool hold = argc == 3 && strcmp(argv[2], "--hold") == 0;
        char *end;
        long n;

        if (argc < 2 || argc > 3 || (argc == 3 && !hold))
                goto usage;
        n = strtol(argv[1], &end, 10);
        if (*end || n < 0 || n > OFFSET_TRAPS_MAX)
                goto usage;
        sigaction(SIGILL, &sa, NULL);
        signal(SIGUSR1, on_sigusr1);
        setvbuf(stdout, NULL, _IOLBF, 0);
        printf("pid %d\n", (int) getpid());
        printf("sled %ld\n", file_offset((uintptr_t) trap_sled));
        ((void (*)(void))((uintptr_t) trap_sled + 2 * (OFFSET_TRAPS_MAX - n)))();
        if (traps != n) {
                fprintf(stderr, "offset-traps: %d traps, expected %ld\n", (int) traps, n);
                return 1;
        }
        printf("done traps=%ld\n", n);
        if (hold) {
                sigset_t set;

                sigemptyset(&set);
                sigaddset(&set, SIGUSR1);
                sigprocmask(SIG_BLOCK, &set, NULL);
                sigtimedwait(&set, NULL, &(struct timespec) { .tv_sec = 60 });
        }
        return 0;
usage:
        fprintf(stderr, "usage: offset-traps N [--hold] (N from 0 to %d)\n", OFFSET_TRAPS_MAX);
        return 2;
}

#else

int main(void) {
        fprintf(stderr, "offset-traps: x86-64 only\n");
        return 77;
}

#endif

/* SPDX-License-Identifier: MIT */
/* The shared library of the site-traps workload (tests/helpers/site-traps.c), built as
 * libsite-traps.so: a trap site in a shared library, so that the test sees sites in a file other
 * than the executable. The SIGTRAP handler is the executable's.
 *
 * x86-64 and arm64 only, like the executable (int3 and brk are their instructions). */

#if defined(__x86_64__) || defined(__aarch64__)

#if defined(__x86_64__)
/* n in %0, not 0: one int3, executed n times. */
#define BP_LOOP                                                                                                        \
        "1: int3\n\t"                                                                                                  \
        "dec %0\n\t"                                                                                                   \
        "jnz 1b"
#elif defined(__aarch64__)
/* Any immediate the kernel has no user break hook for (uprobes use 0x005); site-traps.c's
 * handler checks for this very instruction. The pc stays at the brk: the handler steps over it
 * to the subs. */
#define BP_LOOP                                                                                                        \
        "1: brk #0x7ab\n\t"                                                                                            \
        "subs %w0, %w0, #1\n\t"                                                                                        \
        "b.ne 1b"
#endif

/* Executes one breakpoint instruction n times: one instruction, so one site with a count of n.
 * The loop is written in assembly: a compiler may unroll a C loop into several int3 (gcc 16
 * does). */
__attribute__((noinline, used, visibility("default"))) void site_bp_lib(int n) {
        if (n > 0)
                __asm__ volatile(BP_LOOP : "+r"(n) : : "memory", "cc");
}

#endif

/* SPDX-License-Identifier: MIT */
/* The shared library of the site-traps workload (tests/helpers/site-traps.c), built as
 * libsite-traps.so: a trap site in a shared library, so that the test sees sites in a file other
 * than the executable. The SIGTRAP handler is the executable's.
 *
 * x86-64 only, like the executable (int3 is an x86 instruction). */

#if defined(__x86_64__)

/* Executes one int3 n times: one instruction, so one site with a count of n. The loop is written
 * in assembly: a compiler may unroll a C loop into several int3 (gcc 16 does). */
__attribute__((noinline, used, visibility("default"))) void site_bp_lib(int n) {
        if (n > 0)
                __asm__ volatile("1: int3\n\t"
                                 "dec %0\n\t"
                                 "jnz 1b"
                                 : "+r"(n)
                                 :
                                 : "memory", "cc");
}

#endif

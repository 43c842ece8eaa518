/* SPDX-License-Identifier: MIT */
/* The shared library of the site-traps workload (tests/helpers/site-traps.c), built as
 * libsite-traps.so: a trap site in a shared library, so that the test sees sites in a file other
 * than the executable. The SIGTRAP handler is the executable's.
 *
 * x86-64 only, like the executable (int3 is an x86 instruction). */

#if defined(__x86_64__)

/* Executes one int3 n times: one instruction, so one site with a count of n. */
__attribute__((noinline, used, visibility("default"))) void site_bp_lib(int n) {
        for (int i = 0; i < n; i++)
                __asm__ volatile("int3" ::: "memory");
}

#endif

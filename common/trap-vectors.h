/* SPDX-License-Identifier: MIT */
#pragma once

/* The one table of CPU exception vectors trapstat names: the x86 exception vectors
 * (arch/x86/include/asm/trapnr.h), the only vectors the BPF programs can tell
 * (task->thread.trap_nr, bpf/arch/x86.h). On other architectures every trap is counted under
 * TRAP_VECTOR_UNKNOWN. A mnemonic ("UD") is what the varlink interface carries
 * (Counters.traps in schema/io.trapstat.varlink), the description ("invalid opcode") what
 * trapstat prints beside it; a vector without an entry is named "V<n>".
 *
 * The database stores the number, never the name (trap_raw, trap_minute, trap_hour: vector
 * 0..31, 32 for unknown; schema/sql/0002-traps.sql), and has no CHECK on it: names are given
 * when a reply is built (common/traps.c), so changing this table needs no migration.
 *
 * Header only and free of dependencies, so that the test workloads (tests/helpers/) use it
 * too. X(number, mnemonic, description), mnemonic unquoted. */

#define TRAP_VECTOR_TABLE(X)                                                                       \
        X(0, DE, "divide error")                                                                   \
        X(1, DB, "debug")                                                                          \
        X(2, NMI, "non-maskable interrupt")                                                        \
        X(3, BP, "breakpoint")                                                                     \
        X(4, OF, "overflow")                                                                       \
        X(5, BR, "bound range exceeded")                                                           \
        X(6, UD, "invalid opcode")                                                                 \
        X(7, NM, "device not available")                                                           \
        X(8, DF, "double fault")                                                                   \
        X(10, TS, "invalid TSS")                                                                   \
        X(11, NP, "segment not present")                                                           \
        X(12, SS, "stack segment fault")                                                           \
        X(13, GP, "general protection")                                                            \
        X(14, PF, "page fault")                                                                    \
        X(16, MF, "x87 floating point")                                                            \
        X(17, AC, "alignment check")                                                               \
        X(18, MC, "machine check")                                                                 \
        X(19, XM, "SIMD floating point")                                                           \
        X(20, VE, "virtualization exception")                                                      \
        X(21, CP, "control protection")

/* Vectors 0..31: the slots of Traps.vector (and of struct ts_traps in bpf/trapstat.h). */
#define TRAP_VECTORS 32
/* Index of Traps.vector for traps whose vector the kernel does not tell. */
#define TRAP_VECTOR_UNKNOWN TRAP_VECTORS

/* TRAP_VECTOR_DE = 0, TRAP_VECTOR_UD = 6, ... */
enum {
#define TRAP_VECTOR_ENUM(number, mnemonic, description) TRAP_VECTOR_##mnemonic = number,
        TRAP_VECTOR_TABLE(TRAP_VECTOR_ENUM)
#undef TRAP_VECTOR_ENUM
};

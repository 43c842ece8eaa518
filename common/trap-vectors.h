/* SPDX-License-Identifier: MIT */
#pragma once

/* The tables of the CPU exceptions trapstat names, one per architecture whose BPF header
 * (bpf/arch/) tells them: the x86 exception vectors (arch/x86/include/asm/trapnr.h,
 * task->thread.trap_nr, bpf/arch/x86.h) and the arm64 exception classes (below,
 * bpf/arch/arm64.h). Either way a trap has a slot 0..31 of Traps.vector: on x86 the vector
 * itself, on arm64 the class's slot in TRAP_ARM64_CLASS_TABLE. Elsewhere every trap is counted
 * under TRAP_VECTOR_UNKNOWN. A mnemonic ("UD", "BRK64") is what the varlink interface carries
 * (Counters.traps in schema/io.trapstat.varlink), the description ("invalid opcode") what
 * trapstat prints beside it; a slot without an entry is named "V<n>". GetStatus's arch says
 * which table applies (common/traps.c).
 *
 * The database stores the slot, never the name (trap_raw, trap_minute, trap_hour: 0..31, 32
 * for unknown; schema/sql/0002-traps.sql), and has no CHECK on it: names are given when a
 * reply is built (common/traps.c), so changing a table needs no migration, and a database
 * belongs to the architecture that wrote it.
 *
 * Header only and free of dependencies, so that the BPF programs and the test workloads
 * (tests/helpers/) use it too. X(number, mnemonic, description), mnemonic unquoted. */

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

/* arm64: the exception classes (ESR_ELx.EC, bits 31:26 of the syndrome the kernel keeps for a
 * fault signal in task->thread.fault_code, bpf/arch/arm64.h) that can reach a user process,
 * under the kernel's names for them (arch/arm64/include/asm/esr.h, ESR_ELx_EC_*). The class
 * numbers go up to 0x3C, past the 32 slots of Traps.vector, so each class has a slot of its
 * own: X(slot, class, mnemonic, description). Classes only the kernel itself takes (aborts and
 * debug events at EL1, hypervisor and secure monitor calls) have none: a trap of theirs, or
 * one whose syndrome the kernel did not keep, counts under TRAP_VECTOR_UNKNOWN. */
#define TRAP_ARM64_CLASS_TABLE(X)                                                                  \
        X(0, 0x00, UNKNOWN, "undefined instruction")                                               \
        X(1, 0x01, WFx, "trapped WFI or WFE")                                                      \
        X(2, 0x03, CP15_32, "trapped 32-bit CP15 access")                                          \
        X(3, 0x04, CP15_64, "trapped 64-bit CP15 access")                                          \
        X(4, 0x05, CP14_MR, "trapped CP14 MCR or MRC")                                             \
        X(5, 0x06, CP14_LS, "trapped CP14 LDC or STC")                                             \
        X(6, 0x07, FP_ASIMD, "trapped SIMD or floating point access")                              \
        X(7, 0x09, PAC, "trapped pointer authentication instruction")                              \
        X(8, 0x0C, CP14_64, "trapped 64-bit CP14 access")                                          \
        X(9, 0x0D, BTI, "branch target exception")                                                 \
        X(10, 0x0E, ILL, "illegal execution state")                                                \
        X(11, 0x11, SVC32, "32-bit system call")                                                   \
        X(12, 0x15, SVC64, "64-bit system call")                                                   \
        X(13, 0x18, SYS64, "trapped MSR, MRS or system instruction")                               \
        X(14, 0x19, SVE, "trapped SVE access")                                                     \
        X(15, 0x1C, FPAC, "pointer authentication failure")                                        \
        X(16, 0x1D, SME, "trapped SME access")                                                     \
        X(17, 0x20, IABT_LOW, "instruction abort")                                                 \
        X(18, 0x22, PC_ALIGN, "PC alignment fault")                                                \
        X(19, 0x24, DABT_LOW, "data abort")                                                        \
        X(20, 0x26, SP_ALIGN, "SP alignment fault")                                                \
        X(21, 0x27, MOPS, "memory copy or set exception")                                          \
        X(22, 0x28, FP_EXC32, "32-bit floating point exception")                                   \
        X(23, 0x2C, FP_EXC64, "floating point exception")                                          \
        X(24, 0x2D, GCS, "guarded control stack exception")                                        \
        X(25, 0x2F, SERROR, "SError interrupt")                                                    \
        X(26, 0x30, BREAKPT_LOW, "hardware breakpoint")                                            \
        X(27, 0x32, SOFTSTP_LOW, "software step")                                                  \
        X(28, 0x34, WATCHPT_LOW, "watchpoint")                                                     \
        X(29, 0x38, BKPT32, "32-bit BKPT instruction")                                             \
        X(30, 0x3A, VECTOR32, "32-bit vector catch")                                               \
        X(31, 0x3C, BRK64, "BRK instruction")

/* TRAP_ARM64_BRK64 = 31, ... (slots, not classes). */
enum {
#define TRAP_ARM64_ENUM(slot, class, mnemonic, description) TRAP_ARM64_##mnemonic = slot,
        TRAP_ARM64_CLASS_TABLE(TRAP_ARM64_ENUM)
#undef TRAP_ARM64_ENUM
};

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

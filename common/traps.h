/* SPDX-License-Identifier: MIT */
#pragma once

/* CPU traps and the fault signals they raised, per process: the varlink Counters members
 * traps, signals and signalCodes (schema/io.trapstat.varlink). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "counters.h"
#include "trap-vectors.h" /* TRAP_VECTORS, TRAP_VECTOR_UNKNOWN and the names */

/* The kernel's fault signals, in the order of TS_SIGNALS in bpf/trapstat.h. */
#define FAULT_SIGNALS 5
/* si_code slots per signal: 1..14 the codes themselves, 0 SI_KERNEL, 15 any other. */
#define SI_CODE_SLOTS 16
#define SI_CODE_SLOT_OTHER 15

typedef struct Traps {
        uint64_t vector[TRAP_VECTORS + 1];
        uint64_t signal[FAULT_SIGNALS][SI_CODE_SLOTS];
} Traps;

/* Whose table names the slots of Traps.vector (common/trap-vectors.h). */
typedef enum TrapArch {
        TRAP_ARCH_X86,   /* the exception vectors */
        TRAP_ARCH_ARM64, /* the exception classes' slots */
        TRAP_ARCH_OTHER, /* none: every trap is unknown */
} TrapArch;

#if defined(__x86_64__) || defined(__i386__)
#define TRAP_ARCH_NATIVE TRAP_ARCH_X86
#elif defined(__aarch64__)
#define TRAP_ARCH_NATIVE TRAP_ARCH_ARM64
#else
#define TRAP_ARCH_NATIVE TRAP_ARCH_OTHER
#endif

/* "DE", "DB", "BP", ... on x86, "BRK64", "DABT_LOW", ... on arm64 (common/trap-vectors.h) as in
 * schema/io.trapstat.varlink; "V<n>" for slots without a mnemonic, "unknown" for
 * TRAP_VECTOR_UNKNOWN. buf must hold 16 bytes. */
const char *trap_vector_name_of(TrapArch arch, unsigned vector, char buf[static 16]);
/* "divide error", "invalid opcode", ... for people; NULL when there is none. */
const char *trap_vector_description_of(TrapArch arch, unsigned vector);
/* Inverse of trap_vector_name_of(); -EINVAL when unknown. */
int trap_vector_from_name_of(TrapArch arch, const char *name, unsigned *ret);

/* Whose table the functions below use: the architecture trapstat was built for, which is what
 * the daemon counts and names. Unit tests written with x86's names set TRAP_ARCH_X86. */
extern TrapArch trap_arch;

/* The same for trap_arch. */
const char *trap_vector_name(unsigned vector, char buf[static 16]);
const char *trap_vector_description(unsigned vector);
int trap_vector_from_name(const char *name, unsigned *ret);

int fault_signal_number(unsigned index);          /* 4, 5, 7, 8, 11 */
/* "SIGILL", ...: only test-traps.c calls it, to check the table (static in traps.c) against the
 * signal numbers. */
const char *fault_signal_name(unsigned index);
int fault_signal_index(int signo);                /* -1 when not a fault signal */
/* si_code of a slot: slot 0 is SI_KERNEL (0x80), SI_CODE_SLOT_OTHER gives -1. */
int si_code_of_slot(unsigned slot);
int si_code_slot(int si_code);
/* "SEGV_MAPERR", "SI_KERNEL", ... or "CODE<n>"; buf 24 bytes. */
const char *si_code_name(int signo, int si_code, char buf[static 24]);

void traps_add(Traps *a, const Traps *b);
bool traps_is_zero(const Traps *t);
uint64_t traps_total(const Traps *t);

/* Adds the three JSON maps to counters: "traps" by vector name, "signals" by signal name,
 * "signalCodes" by "SIGNAME/CODE_NAME". Zero entries are omitted. */
int traps_to_json(const Traps *t, json_t *counters);

/* A varlink Counters object: {"faults": ..., "faultTime": ..., "stall": ..., "traps": ...,
 * "signals": ..., "signalCodes": ...}; known as for faults_to_json(), and stall null without
 * FAULTS_KNOWN_STALL. NULL on allocation failure. */
json_t *counters_to_json(const Faults *f, const FaultTime *ft, const Stall *stall, const Traps *t, FaultsKnown known);
/* Longest text counters_format_json() writes, with its NUL. */
#define COUNTERS_JSON_MAX 1792
/* The compact JSON text of counters_to_json(f, ft, stall, t, known) (as json_dumps() writes it: members in the
 * same order, counts clamped to INT64_MAX the same way), written into buf without building a
 * json_t: a History of a day is 1440 of them. Only for counters without traps, which are nearly
 * all (their text would need the names): -EINVAL when t has any. Returns the text's length. */
int counters_format_json(const Faults *f, const FaultTime *ft, const Stall *stall, const Traps *t, FaultsKnown known,
                         char buf[static COUNTERS_JSON_MAX]);

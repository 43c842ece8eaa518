/* SPDX-License-Identifier: MIT */
#include "traps.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

typedef struct VectorName {
        const char *name, *description;
} VectorName;

/* The names of common/trap-vectors.h by slot, per architecture. */
static const VectorName x86_vectors[TRAP_VECTORS] = {
#define TRAP_VECTOR_ENTRY(number, mnemonic, description) [number] = { #mnemonic, description },
        TRAP_VECTOR_TABLE(TRAP_VECTOR_ENTRY)
#undef TRAP_VECTOR_ENTRY
};

static const VectorName arm64_classes[TRAP_VECTORS] = {
#define TRAP_CLASS_ENTRY(slot, class, mnemonic, description) [slot] = { #mnemonic, description },
        TRAP_ARM64_CLASS_TABLE(TRAP_CLASS_ENTRY)
#undef TRAP_CLASS_ENTRY
};

static const VectorName *vector_entry(TrapArch arch, unsigned vector) {
        const VectorName *table = arch == TRAP_ARCH_X86 ? x86_vectors : arch == TRAP_ARCH_ARM64 ? arm64_classes : NULL;

        return table && vector < TRAP_VECTORS && table[vector].name ? &table[vector] : NULL;
}

const char *trap_vector_name_of(TrapArch arch, unsigned vector, char buf[static 16]) {
        const VectorName *e = vector_entry(arch, vector);

        if (vector == TRAP_VECTOR_UNKNOWN)
                return "unknown";
        if (e)
                return e->name;
        snprintf(buf, 16, "V%u", vector);
        return buf;
}

const char *trap_vector_description_of(TrapArch arch, unsigned vector) {
        const VectorName *e = vector_entry(arch, vector);

        return e ? e->description : NULL;
}

int trap_vector_from_name_of(TrapArch arch, const char *name, unsigned *ret) {
        char buf[16];

        for (unsigned v = 0; v <= TRAP_VECTOR_UNKNOWN; v++)
                if (strcmp(trap_vector_name_of(arch, v, buf), name) == 0) {
                        *ret = v;
                        return 0;
                }
        return -EINVAL;
}

TrapArch trap_arch = TRAP_ARCH_NATIVE;

const char *trap_vector_name(unsigned vector, char buf[static 16]) {
        return trap_vector_name_of(trap_arch, vector, buf);
}

const char *trap_vector_description(unsigned vector) {
        return trap_vector_description_of(trap_arch, vector);
}

int trap_vector_from_name(const char *name, unsigned *ret) {
        return trap_vector_from_name_of(trap_arch, name, ret);
}

static const struct {
        int number;
        const char *name;
} signals[FAULT_SIGNALS] = {
        { SIGILL, "SIGILL" }, { SIGTRAP, "SIGTRAP" }, { SIGBUS, "SIGBUS" }, { SIGFPE, "SIGFPE" }, { SIGSEGV, "SIGSEGV" },
};

int fault_signal_number(unsigned index) {
        return index < FAULT_SIGNALS ? signals[index].number : -1;
}

const char *fault_signal_name(unsigned index) {
        return index < FAULT_SIGNALS ? signals[index].name : NULL;
}

int fault_signal_index(int signo) {
        for (unsigned i = 0; i < FAULT_SIGNALS; i++)
                if (signals[i].number == signo)
                        return (int) i;
        return -1;
}

int si_code_of_slot(unsigned slot) {
        if (slot == 0)
                return 0x80; /* SI_KERNEL */
        return slot < SI_CODE_SLOT_OTHER ? (int) slot : -1;
}

int si_code_slot(int si_code) {
        if (si_code == 0x80)
                return 0;
        return si_code > 0 && si_code < SI_CODE_SLOT_OTHER ? si_code : SI_CODE_SLOT_OTHER;
}

const char *si_code_name(int signo, int si_code, char buf[static 24]) {
        /* From <asm-generic/siginfo.h>; index = si_code - 1. */
        static const char *const ill[] = { "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
                                           "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR" };
        static const char *const trap[] = { "TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT", "TRAP_UNK", "TRAP_PERF" };
        static const char *const bus[] = { "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO" };
        static const char *const fpe[] = { "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND",
                                           "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", "FPE_DECOVF", "FPE_DECDIV",
                                           "FPE_DECERR", "FPE_INVASC", "FPE_INVDEC", "FPE_FLTUNK", "FPE_CONDTRAP" };
        static const char *const segv[] = { "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR",
                                            "SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR",
                                            "SEGV_MTESERR", "SEGV_CPERR" };
        const char *const *names = NULL;
        size_t n = 0;

        if (si_code == 0x80)
                return "SI_KERNEL";
        if (si_code < 0)
                return "other";
        switch (signo) {
        case SIGILL: names = ill, n = ELEMENTSOF(ill); break;
        case SIGTRAP: names = trap, n = ELEMENTSOF(trap); break;
        case SIGBUS: names = bus, n = ELEMENTSOF(bus); break;
        case SIGFPE: names = fpe, n = ELEMENTSOF(fpe); break;
        case SIGSEGV: names = segv, n = ELEMENTSOF(segv); break;
        }
        if (si_code >= 1 && (size_t) si_code <= n)
                return names[si_code - 1];
        snprintf(buf, 24, "CODE%d", si_code);
        return buf;
}

void traps_add(Traps *a, const Traps *b) {
        for (size_t v = 0; v < ELEMENTSOF(a->vector); v++)
                a->vector[v] += b->vector[v];
        for (size_t s = 0; s < FAULT_SIGNALS; s++)
                for (size_t c = 0; c < SI_CODE_SLOTS; c++)
                        a->signal[s][c] += b->signal[s][c];
}

bool traps_is_zero(const Traps *t) {
        static const Traps zero;
        return memcmp(t, &zero, sizeof(zero)) == 0;
}

uint64_t traps_total(const Traps *t) {
        uint64_t n = 0;
        for (size_t v = 0; v < ELEMENTSOF(t->vector); v++)
                n += t->vector[v];
        return n;
}

int traps_to_json(const Traps *t, json_t *counters) {
        json_t *traps = json_object(), *sigs = json_object(), *codes = json_object();
        char buf[24];

        if (!traps || !sigs || !codes)
                goto fail;
        for (unsigned v = 0; v < ELEMENTSOF(t->vector); v++)
                if (t->vector[v] && json_object_set_new(traps, trap_vector_name(v, buf), json_integer_u64(t->vector[v])) < 0)
                        goto fail;
        for (unsigned s = 0; s < FAULT_SIGNALS; s++) {
                uint64_t total = 0;

                for (unsigned c = 0; c < SI_CODE_SLOTS; c++) {
                        char key[48];

                        if (!t->signal[s][c])
                                continue;
                        total += t->signal[s][c];
                        snprintf(key, sizeof(key), "%s/%s", signals[s].name,
                                 si_code_name(signals[s].number, si_code_of_slot(c), buf));
                        if (json_object_set_new(codes, key, json_integer_u64(t->signal[s][c])) < 0)
                                goto fail;
                }
                if (total && json_object_set_new(sigs, signals[s].name, json_integer_u64(total)) < 0)
                        goto fail;
        }
        if (json_object_set_new(counters, "traps", traps) < 0) {
                traps = NULL;
                goto fail;
        }
        traps = NULL;
        if (json_object_set_new(counters, "signals", sigs) < 0) {
                sigs = NULL;
                goto fail;
        }
        sigs = NULL;
        if (json_object_set_new(counters, "signalCodes", codes) < 0) {
                codes = NULL;
                goto fail;
        }
        return 0;
fail:
        json_decref(traps);
        json_decref(sigs);
        json_decref(codes);
        return -ENOMEM;
}

json_t *counters_to_json(const Faults *f, const FaultTime *ft, const Stall *stall, const Traps *t, FaultsKnown known) {
        json_t *o = json_pack("{s:o, s:o, s:o}", "faults", faults_to_json(f, known), "faultTime",
                              fault_time_to_json(ft), "stall",
                              known & FAULTS_KNOWN_STALL ? stall_to_json(stall) : json_null());

        if (o && traps_to_json(t, o) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* Appends text to buf at *k; false when it would not fit with a NUL. */
static bool put(char *buf, size_t *k, const char *text, size_t n) {
        if (n >= COUNTERS_JSON_MAX - *k)
                return false;
        memcpy(buf + *k, text, n);
        *k += n;
        return true;
}

/* v in decimal, without printf: this runs 1440 times per History of a day. */
static bool put_u64(char *buf, size_t *k, uint64_t v) {
        char digits[20];
        size_t n = 0;

        do
                digits[sizeof(digits) - ++n] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        return put(buf, k, digits + sizeof(digits) - n, n);
}

/* "name": where a comma precedes unless first. */
static bool put_name(char *buf, size_t *k, bool first, const char *name) {
        return (first || put(buf, k, ",", 1)) && put(buf, k, "\"", 1) && put(buf, k, name, strlen(name)) &&
               put(buf, k, "\":", 2);
}

/* "name":v where a comma precedes unless first. */
static bool put_member(char *buf, size_t *k, bool first, const char *name, uint64_t v) {
        return put_name(buf, k, first, name) && put_u64(buf, k, v > INT64_MAX ? (uint64_t) INT64_MAX : v);
}

/* The members of Faults as faults_to_json() writes them, in the same order. */
static bool put_faults(char *buf, size_t *k, const Faults *f, FaultsKnown known) {
        bool ok = true, null_group = false;

        for (size_t i = 0; ok && i < n_fault_fields; i++) {
                const FaultField *field = &fault_fields[i];
                bool first_of_group = fault_field_opens_group(i), last_of_group = fault_field_closes_group(i);

                if (first_of_group) {
                        null_group = !faults_field_known(f, field, known);
                        ok = put_name(buf, k, i == 0, field->group) &&
                             (null_group ? put(buf, k, "null", 4) : put(buf, k, "{", 1));
                }
                if (field->group && null_group)
                        continue;
                if (!faults_field_known(f, field, known))
                        ok = ok && put_name(buf, k, i == 0 || first_of_group, field->member) && put(buf, k, "null", 4);
                else
                        ok = ok && put_member(buf, k, i == 0 || first_of_group, field->member, faults_get(f, field));
                if (last_of_group)
                        ok = ok && put(buf, k, "}", 1);
        }
        return ok;
}

/* Stall as stall_to_json() writes it, or null without FAULTS_KNOWN_STALL. */
static bool put_stall(char *buf, size_t *k, const Stall *s, FaultsKnown known) {
        bool ok = put_name(buf, k, false, "stall");

        if (!(known & FAULTS_KNOWN_STALL))
                return ok && put(buf, k, "null", 4);
        ok = ok && put(buf, k, "{", 1);
        for (size_t i = 0; ok && i < _STALL_MAX; i++)
                ok = put_member(buf, k, i == 0, stall_ns_members[i], s->ns[i]) &&
                     put_member(buf, k, false, stall_count_members[i], s->count[i]);
        return ok && put(buf, k, "}", 1);
}

int counters_format_json(const Faults *f, const FaultTime *ft, const Stall *stall, const Traps *t, FaultsKnown known,
                         char buf[static COUNTERS_JSON_MAX]) {
        static const char head[] = "{\"faults\":{", middle[] = "},\"faultTime\":{",
                          by_cause[] = "],\"majorNsByCause\":{",
                          tail[] = ",\"traps\":{},\"signals\":{},\"signalCodes\":{}}";
        size_t k = 0;
        bool ok;

        if (!traps_is_zero(t))
                return -EINVAL;
        ok = put(buf, &k, head, sizeof(head) - 1) && put_faults(buf, &k, f, known);
        ok = ok && put(buf, &k, middle, sizeof(middle) - 1) && put_member(buf, &k, true, "minorNs", ft->minor_ns) &&
             put_member(buf, &k, false, "majorNs", ft->major_ns) && put_member(buf, &k, false, "kernelNs", ft->kernel_ns) &&
             put_member(buf, &k, false, "maxNs", ft->max_ns) && put(buf, &k, ",\"histogram\":[", 14);
        for (size_t i = 0; ok && i < FAULT_TIME_BUCKETS; i++)
                ok = (i == 0 || put(buf, &k, ",", 1)) &&
                     put_u64(buf, &k, ft->histogram[i] > INT64_MAX ? (uint64_t) INT64_MAX : ft->histogram[i]);
        ok = ok && put(buf, &k, by_cause, sizeof(by_cause) - 1) && put_member(buf, &k, true, "file", ft->major_file_ns) &&
             put_member(buf, &k, false, "anon", ft->major_anon_ns) &&
             put_member(buf, &k, false, "shmem", ft->major_shmem_ns) && put(buf, &k, "}}", 2) &&
             put_stall(buf, &k, stall, known) && put(buf, &k, tail, sizeof(tail) - 1);
        /* Forty-one names of a few letters and 53 numbers of at most 19 digits: well within. */
        if (!ok)
                return -ENOBUFS;
        buf[k] = '\0';
        return (int) k;
}

/* SPDX-License-Identifier: MIT */
#include "exposition.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "fault-time.h"
#include "macro.h"
#include "stall.h"

/* The daemon's catch-all for the units beyond what it keeps (schema: UnitCounters.unit). Our
 * own remainder (the units left out by limit) is added to it: one "other" series, and no unit
 * can be named so (systemd's names have a suffix). */
#define OTHER "other"

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

MetricsFormat metrics_format_from_accept(const char *accept) {
        /* Prometheus sends "application/openmetrics-text;version=1.0.0,...;q=0.5,text/plain;..."
         * when it takes OpenMetrics; any client naming it gets it, all others the old format. */
        if (accept && strstr(accept, "application/openmetrics-text"))
                return METRICS_OPENMETRICS;
        return METRICS_PROMETHEUS;
}

const char *metrics_content_type(MetricsFormat format) {
        return format == METRICS_OPENMETRICS ? METRICS_CONTENT_TYPE_OPENMETRICS : METRICS_CONTENT_TYPE_PROMETHEUS;
}

void metrics_write_label_value(FILE *f, const char *s) {
        for (; *s; s++)
                switch (*s) {
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                default:
                        fputc(*s, f);
                }
}

static uint64_t sub0(uint64_t a, uint64_t b) {
        /* The remainders are total minus parts: never negative from a consistent reply, and a
         * counter cannot be negative, so an inconsistent one gives 0 rather than a wrap. */
        return a > b ? a - b : 0;
}

/* One row of UnitTotals read: its unit label and counters. */
typedef struct UnitRow {
        const char *unit; /* "" for processes in no unit */
        Faults faults;    /* unknown has FAULTS_KNOWN_STALL where stall is not known */
        FaultTime fault_time;
        Stall stall;
        json_t *traps;    /* object vector -> count, borrowed */
} UnitRow;

/* Counters.stall into *ret. Null (the daemon's kernel keeps no delay accounting) or missing (a
 * daemon older than it) is not known: FAULTS_KNOWN_STALL in faults->unknown, as a part of Faults
 * the daemon does not count, so that sums with it (faults_add()) are not known either. */
static int stall_read(json_t *j, Faults *faults, Stall *ret) {
        if (!j || json_is_null(j)) {
                faults->unknown |= FAULTS_KNOWN_STALL;
                *ret = (Stall) {};
                return 0;
        }
        return stall_from_json(j, ret);
}

/* ret_time and ret_stall may be NULL: the process series have neither (both are still checked).
 * A daemon older than fault time sends none: then *ret_time is zero and the return value 0,
 * else 1. */
static int counters_read(json_t *counters, Faults *ret_faults, FaultTime *ret_time, Stall *ret_stall,
                         json_t **ret_traps) {
        json_t *traps = json_object_get(counters, "traps"), *time = json_object_get(counters, "faultTime"), *n;
        const char *v;
        FaultTime t = {};
        Stall stall;

        if (!json_is_object(traps) || faults_from_json(json_object_get(counters, "faults"), ret_faults) < 0 ||
            (time && fault_time_from_json(time, &t) < 0) ||
            stall_read(json_object_get(counters, "stall"), ret_faults, &stall) < 0)
                return -EBADMSG;
        if (ret_time)
                *ret_time = t;
        if (ret_stall)
                *ret_stall = stall;
        json_object_foreach (traps, v, n)
                if (!json_is_integer(n) || json_integer_value(n) < 0)
                        return -EBADMSG;
        *ret_traps = traps;
        return !!time;
}

static uint64_t traps_get(json_t *traps, const char *vector) {
        json_t *n = json_object_get(traps, vector);
        return n ? (uint64_t) json_integer_value(n) : 0;
}

static uint64_t traps_sum(json_t *traps) {
        uint64_t sum = 0;
        const char *v;
        json_t *n;
        json_object_foreach(traps, v, n)
                sum += (uint64_t) json_integer_value(n);
        return sum;
}

typedef enum FamilyType {
        GAUGE,
        COUNTER,
        HISTOGRAM,
} FamilyType;

static void family(FILE *f, MetricsFormat format, const char *name, FamilyType type, const char *help) {
        /* A counter's family is named without _total in OpenMetrics and with it in 0.0.4, whose
         * TYPE line names the sample. A histogram's is its name in both, the samples' suffixes
         * (_bucket, _sum, _count) being part of the type. */
        const char *suffix = type == COUNTER && format == METRICS_PROMETHEUS ? "_total" : "";
        fprintf(f, "# HELP %s%s %s\n", name, suffix, help);
        fprintf(f, "# TYPE %s%s %s\n", name, suffix,
                type == COUNTER ? "counter" : type == HISTOGRAM ? "histogram" : "gauge");
}

/* A sample: name, then n label pairs (name, value), then the value as text. */
static void sample_text(FILE *f, const char *name, const char *const *labels, size_t n, const char *value) {
        fputs(name, f);
        if (n > 0) {
                fputc('{', f);
                for (size_t i = 0; i < n; i++) {
                        fprintf(f, "%s%s=\"", i ? "," : "", labels[2 * i]);
                        metrics_write_label_value(f, labels[2 * i + 1]);
                        fputc('"', f);
                }
                fputc('}', f);
        }
        fprintf(f, " %s\n", value);
}

static void sample(FILE *f, const char *name, const char *const *labels, size_t n, uint64_t value) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64, value);
        sample_text(f, name, labels, n, buf);
}

void metrics_format_seconds(uint64_t ns, char buf[static METRICS_SECONDS_MAX]) {
        /* Decimal from the integer, not through a double: exact, so that the value read back is
         * the double nearest ns / 1e9, as the daemon's nanoseconds divided would be. */
        int n = snprintf(buf, METRICS_SECONDS_MAX, "%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
        while (buf[n - 1] == '0')
                buf[--n] = '\0';
        if (buf[n - 1] == '.')
                buf[n - 1] = '\0';
}

void metrics_format_le(uint64_t ns, char buf[static METRICS_SECONDS_MAX]) {
        /* The shortest text that reads back as the same double, in %g's form: 1e-06, 6.4e-05,
         * 0.000128, 4.194304. It is what Prometheus' client libraries write (Go's 'g', -1) and
         * what Prometheus 3 turns any le into, so the series are the same whoever parses them. */
        double v = (double) ns / 1e9;
        for (int precision = 1; precision <= 17; precision++) {
                snprintf(buf, METRICS_SECONDS_MAX, "%.*g", precision, v);
                if (strtod(buf, NULL) == v)
                        return;
        }
}

typedef struct Units {
        UnitRow *rows;
        size_t n;
        bool has_other; /* an "other" series is written: units were left out or summed */
        bool has_time;  /* the daemon tells fault time (every row then has it) */
        UnitRow other;  /* the daemon's "other" plus the units beyond limit */
        Faults total;
        FaultTime total_time;
        Stall total_stall;
        json_t *total_traps;
} Units;

/* total - listed, member by member. The longest fault has no remainder; it is not exported. */
static void fault_time_remainder(const FaultTime *total, const FaultTime *listed, FaultTime *ret) {
        *ret = (FaultTime) {
                .minor_ns = sub0(total->minor_ns, listed->minor_ns),
                .major_ns = sub0(total->major_ns, listed->major_ns),
                .kernel_ns = sub0(total->kernel_ns, listed->kernel_ns),
                .major_file_ns = sub0(total->major_file_ns, listed->major_file_ns),
                .major_anon_ns = sub0(total->major_anon_ns, listed->major_anon_ns),
                .major_shmem_ns = sub0(total->major_shmem_ns, listed->major_shmem_ns),
        };
        for (size_t k = 0; k < FAULT_TIME_BUCKETS; k++)
                ret->histogram[k] = sub0(total->histogram[k], listed->histogram[k]);
}

static void stall_remainder(const Stall *total, const Stall *listed, Stall *ret) {
        for (size_t k = 0; k < _STALL_MAX; k++) {
                ret->ns[k] = sub0(total->ns[k], listed->ns[k]);
                ret->count[k] = sub0(total->count[k], listed->count[k]);
        }
}

static int units_read(json_t *reply, unsigned limit, Units *u) {
        json_t *units = json_object_get(reply, "units"), *other_units = json_object_get(reply, "otherUnits");
        int has_time = counters_read(json_object_get(reply, "total"), &u->total, &u->total_time, &u->total_stall,
                                     &u->total_traps);
        if (!json_is_array(units) || !json_is_integer(other_units) || has_time < 0)
                return -EBADMSG;
        u->has_time = has_time;

        u->rows = calloc(json_array_size(units) + 1, sizeof(UnitRow));
        if (!u->rows)
                return -ENOMEM;
        u->has_other = json_integer_value(other_units) > 0;

        /* other = total - every listed unit but the daemon's "other": what the daemon summed
         * and what limit left out, in one series. */
        Faults listed = {};
        FaultTime listed_time = {};
        Stall listed_stall = {};
        size_t i;
        json_t *row;
        json_array_foreach(units, i, row) {
                json_t *unit = json_object_get(row, "unit");
                UnitRow r = {};
                if (!(json_is_string(unit) || json_is_null(unit)) ||
                    counters_read(json_object_get(row, "counters"), &r.faults, &r.fault_time, &r.stall, &r.traps) !=
                            has_time)
                        return -EBADMSG;
                r.unit = json_is_string(unit) ? json_string_value(unit) : "";
                if (strcmp(r.unit, OTHER) == 0) {
                        u->has_other = true;
                        continue;
                }
                if (limit > 0 && u->n >= limit) {
                        u->has_other = true; /* more than asked for: summed into "other" */
                        continue;
                }
                faults_add(&listed, &r.faults);
                fault_time_add(&listed_time, &r.fault_time);
                stall_add(&listed_stall, &r.stall);
                u->rows[u->n++] = r;
        }
        u->other.unit = OTHER;
        for (size_t k = 0; k < n_fault_fields; k++)
                *faults_field(&u->other.faults, &fault_fields[k]) =
                        sub0(faults_get(&u->total, &fault_fields[k]), faults_get(&listed, &fault_fields[k]));
        u->other.faults.unknown = u->total.unknown | listed.unknown;
        fault_time_remainder(&u->total_time, &listed_time, &u->other.fault_time);
        stall_remainder(&u->total_stall, &listed_stall, &u->other.stall);
        if (u->has_other)
                u->rows[u->n++] = u->other;
        return 0;
}

static void write_traps(FILE *f, MetricsFormat format, const Units *u) {
        family(f, format, "trapstat_traps", COUNTER,
               "CPU exceptions turned into signals since trapstatd started, by x86 vector and systemd unit.");
        for (size_t i = 0; i < u->n; i++) {
                const UnitRow *r = &u->rows[i];
                bool other = r->unit == u->other.unit;
                /* The remainder has every vector of the total; a unit those it counted. */
                json_t *traps = other ? u->total_traps : r->traps;
                const char *v;
                json_t *n;
                json_object_foreach(traps, v, n) {
                        uint64_t value = (uint64_t) json_integer_value(n);
                        if (other) {
                                for (size_t k = 0; k < u->n; k++)
                                        if (u->rows[k].unit != u->other.unit)
                                                value = sub0(value, traps_get(u->rows[k].traps, v));
                        }
                        const char *labels[] = { "vector", v, "unit", r->unit };
                        sample(f, "trapstat_traps_total", labels, 2, value);
                }
        }
}

static void write_faults(FILE *f, MetricsFormat format, const Units *u) {
        family(f, format, "trapstat_page_faults", COUNTER,
               "Page faults since trapstatd started by mode, access (user mode only) and systemd unit; "
               "a unit's series sum to its user plus kernel faults.");
        for (size_t i = 0; i < u->n; i++) {
                const Faults *x = &u->rows[i].faults;
                const char *unit = u->rows[i].unit;
                /* User faults by access as the daemon counts them; access "" holds user faults of
                 * none of the three, so that the user series sum to the user faults. */
                struct {
                        const char *mode, *access;
                        uint64_t value;
                } s[] = {
                        { "user", "read", x->read },
                        { "user", "write", x->write },
                        { "user", "exec", x->exec },
                        { "user", "", sub0(x->user, x->read + x->write + x->exec) },
                        { "kernel", "", x->kernel },
                };
                for (size_t k = 0; k < ELEMENTSOF(s); k++) {
                        const char *labels[] = { "mode", s[k].mode, "access", s[k].access, "unit", unit };

                        /* Where the daemon does not count the access kind, all user faults are
                         * access "": no series says 0 reads that were not counted. */
                        if ((x->unknown & FAULTS_KNOWN_ACCESS) && s[k].access[0])
                                continue;
                        sample(f, "trapstat_page_faults_total", labels, 3, s[k].value);
                }
        }
        family(f, format, "trapstat_minor_faults", COUNTER,
               "Minor page faults (the kernel's min_flt) since trapstatd started, by systemd unit.");
        for (size_t i = 0; i < u->n; i++) {
                const char *labels[] = { "unit", u->rows[i].unit };
                sample(f, "trapstat_minor_faults_total", labels, 1, u->rows[i].faults.minor);
        }
}

static void write_major_faults(FILE *f, MetricsFormat format, const Units *u) {
        family(f, format, "trapstat_major_faults", COUNTER,
               "Major page faults (the kernel's maj_flt) since trapstatd started, by cause and systemd unit: "
               "cause file for faults on a file mapping, anon and shmem for anonymous and shared memory read "
               "back from swap, an empty cause for the rest (all of them where trapstatd does not tell causes); "
               "a unit's series sum to its major faults.");
        for (size_t i = 0; i < u->n; i++) {
                const Faults *x = &u->rows[i].faults;
                /* The causes do not cover every major fault (get_user_pages() ones have no
                 * completion event): cause "" holds the rest, so that a unit's series still sum
                 * to its major faults, as access "" does for the user faults. Nested sub0() as
                 * a sum of the parts could wrap. */
                struct {
                        const char *cause;
                        uint64_t value;
                } s[] = {
                        { "file", x->major_file },
                        { "anon", x->major_anon },
                        { "shmem", x->major_shmem },
                        { "", sub0(sub0(sub0(x->major, x->major_file), x->major_anon), x->major_shmem) },
                };
                for (size_t k = 0; k < ELEMENTSOF(s); k++) {
                        const char *labels[] = { "cause", s[k].cause, "unit", u->rows[i].unit };

                        /* Where the daemon does not tell causes, every major fault is cause "":
                         * no series says 0 swap-ins that were not counted. */
                        if ((x->unknown & FAULTS_KNOWN_MAJOR_CAUSE) && s[k].cause[0])
                                continue;
                        sample(f, "trapstat_major_faults_total", labels, 2, s[k].value);
                }
        }
}

static void write_fault_seconds(FILE *f, MetricsFormat format, const Units *u) {
        char value[METRICS_SECONDS_MAX];

        family(f, format, "trapstat_page_fault_seconds", COUNTER,
               "Time spent in page faults since trapstatd started, seconds, by kind and systemd unit: "
               "kind minor and major for faults taken in user mode as the kernel accounted them, "
               "kernel for faults taken in kernel mode for the process.");
        for (size_t i = 0; i < u->n; i++) {
                const FaultTime *t = &u->rows[i].fault_time;
                struct {
                        const char *kind;
                        uint64_t ns;
                } s[] = { { "minor", t->minor_ns }, { "major", t->major_ns }, { "kernel", t->kernel_ns } };
                for (size_t k = 0; k < ELEMENTSOF(s); k++) {
                        const char *labels[] = { "kind", s[k].kind, "unit", u->rows[i].unit };
                        metrics_format_seconds(s[k].ns, value);
                        sample_text(f, "trapstat_page_fault_seconds_total", labels, 2, value);
                }
        }
}

/* A family of its own, not more kinds of trapstat_page_fault_seconds_total: a major fault taken in
 * kernel mode has its time in kind kernel, so causes as kinds would count it twice in the
 * family's sum. No cause "": kind kernel holds minor faults too, so the rest is not known. */
static void write_major_fault_seconds(FILE *f, MetricsFormat format, const Units *u) {
        char value[METRICS_SECONDS_MAX];

        /* A daemon that does not tell causes says so in every row and the total: no family
         * (a family without samples says nothing either). */
        if (u->total.unknown & FAULTS_KNOWN_MAJOR_CAUSE)
                return;
        family(f, format, "trapstat_major_fault_seconds", COUNTER,
               "Time spent in major page faults since trapstatd started, seconds, by cause (file, anon, shmem, "
               "as trapstat_major_faults_total) and systemd unit: faults taken in user or kernel mode, a part "
               "of kinds major and kernel of trapstat_page_fault_seconds_total.");
        for (size_t i = 0; i < u->n; i++) {
                const FaultTime *t = &u->rows[i].fault_time;
                struct {
                        const char *cause;
                        uint64_t ns;
                } s[] = { { "file", t->major_file_ns }, { "anon", t->major_anon_ns }, { "shmem", t->major_shmem_ns } };

                /* Not told: no series, rather than 0 seconds of swap-ins that were not counted. */
                if (u->rows[i].faults.unknown & FAULTS_KNOWN_MAJOR_CAUSE)
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(s); k++) {
                        const char *labels[] = { "cause", s[k].cause, "unit", u->rows[i].unit };
                        metrics_format_seconds(s[k].ns, value);
                        sample_text(f, "trapstat_major_fault_seconds_total", labels, 2, value);
                }
        }
}

static void write_fault_histogram(FILE *f, MetricsFormat format, const Units *u) {
        char value[METRICS_SECONDS_MAX], le[METRICS_SECONDS_MAX];

        /* The daemon's buckets as cumulative counts at their upper edges: bucket i (0..22) holds
         * faults shorter than 2^i us, the last one the rest (+Inf). An edge is exclusive (a
         * fault of exactly 1 us is under le="2e-06"), where Prometheus' le includes it: with
         * nanosecond times the difference is one nanosecond. */
        family(f, format, "trapstat_page_fault_duration_seconds", HISTOGRAM,
               "How long page faults took since trapstatd started, seconds, by systemd unit: every fault "
               "timed from its entry to its completion; le is an exclusive upper edge.");
        for (size_t i = 0; i < u->n; i++) {
                const FaultTime *t = &u->rows[i].fault_time;
                const char *unit = u->rows[i].unit;
                uint64_t cumulative = 0;
                for (unsigned b = 0; b < FAULT_TIME_BUCKETS; b++) {
                        cumulative = cumulative > UINT64_MAX - t->histogram[b] ? UINT64_MAX
                                                                             : cumulative + t->histogram[b];
                        if (b + 1 < FAULT_TIME_BUCKETS)
                                metrics_format_le(fault_time_bucket_high_ns(b), le);
                        const char *labels[] = { "unit", unit, "le", b + 1 < FAULT_TIME_BUCKETS ? le : "+Inf" };
                        sample(f, "trapstat_page_fault_duration_seconds_bucket", labels, 2, cumulative);
                }
                const char *labels[] = { "unit", unit };
                metrics_format_seconds(fault_time_total_ns(t), value);
                sample_text(f, "trapstat_page_fault_duration_seconds_sum", labels, 1, value);
                sample(f, "trapstat_page_fault_duration_seconds_count", labels, 1, cumulative);
        }
}

/* The kernel's delay accounting (Counters.stall) as four families: waits on memory by cause, and
 * block I/O in families of its own (it is not memory: a read(2) waits for it too), each in
 * seconds and in waits. */
typedef struct StallFamily {
        const char *name; /* the family; its samples are name_total */
        const char *help;
        StallCause first, end; /* the causes [first, end); a label cause when more than one */
        bool seconds;          /* Stall.ns as seconds, else Stall.count */
} StallFamily;

static const StallFamily stall_families[] = {
        { "trapstat_memory_stall_seconds",
          "Time waited on memory since trapstatd started, seconds, as the kernel's delay accounting says, by cause "
          "and systemd unit: swapin for pages read back from swap, thrashing for pages of the working set read "
          "again after their eviction, reclaim for direct reclaim, compact for direct compaction.",
          STALL_SWAPIN, STALL_BLKIO, true },
        { "trapstat_memory_stalls",
          "Waits on memory since trapstatd started, as the kernel's delay accounting counts them, by cause (as "
          "trapstat_memory_stall_seconds_total) and systemd unit.",
          STALL_SWAPIN, STALL_BLKIO, false },
        { "trapstat_block_io_delay_seconds",
          "Time waited for block I/O since trapstatd started, seconds, as the kernel's delay accounting says, by "
          "systemd unit.",
          STALL_BLKIO, _STALL_MAX, true },
        { "trapstat_block_io_delays",
          "Waits for block I/O since trapstatd started, as the kernel's delay accounting counts them, by systemd "
          "unit.",
          STALL_BLKIO, _STALL_MAX, false },
};

static void stall_sample(FILE *f, const StallFamily *s, const UnitRow *r, StallCause c) {
        const char *labels[] = { "cause", stall_cause_names[c], "unit", r->unit };
        bool by_cause = s->end - s->first > 1;
        char name[64], value[METRICS_SECONDS_MAX];

        snprintf(name, sizeof name, "%s_total", s->name);
        if (s->seconds)
                metrics_format_seconds(r->stall.ns[c], value);
        else
                snprintf(value, sizeof value, "%" PRIu64, r->stall.count[c]);
        sample_text(f, name, by_cause ? labels : labels + 2, by_cause ? 2 : 1, value);
}

static void write_stall(FILE *f, MetricsFormat format, const Units *u) {
        /* A daemon whose kernel keeps no delay accounting says so in every row and the total
         * (null), and so does one older than it (missing): no families. */
        if (u->total.unknown & FAULTS_KNOWN_STALL)
                return;
        for (size_t k = 0; k < ELEMENTSOF(stall_families); k++) {
                const StallFamily *s = &stall_families[k];

                family(f, format, s->name, COUNTER, s->help);
                for (size_t i = 0; i < u->n; i++) {
                        /* Not known for this unit (nor, then, for "other"): no series, rather than
                         * zeros that were not counted. */
                        if (u->rows[i].faults.unknown & FAULTS_KNOWN_STALL)
                                continue;
                        for (StallCause c = s->first; c < s->end; c++)
                                stall_sample(f, s, &u->rows[i], c);
                }
        }
}

static int write_drops(FILE *f, MetricsFormat format, json_t *status) {
        json_t *drops = json_object_get(status, "dropsByKind");
        if (!json_is_array(drops))
                return -EBADMSG;
        family(f, format, "trapstat_drops", COUNTER, "Events trapstatd could not count since it started, by kind.");
        size_t i;
        json_t *d;
        json_array_foreach(drops, i, d) {
                json_t *kind = json_object_get(d, "kind"), *count = json_object_get(d, "count");
                if (!json_is_string(kind) || !json_is_integer(count) || json_integer_value(count) < 0)
                        return -EBADMSG;
                const char *labels[] = { "kind", json_string_value(kind) };
                sample(f, "trapstat_drops_total", labels, 1, (uint64_t) json_integer_value(count));
        }
        return 0;
}


/* The container label of a process (a Top row's Process.container): its name, else its id; ""
 * for none (null, or a daemon from before containers). -EBADMSG for anything else. */
static int process_container_label(json_t *container, const char **ret) {
        json_t *name = json_object_get(container, "name"), *id = json_object_get(container, "id");

        if (!container || json_is_null(container)) {
                *ret = "";
                return 0;
        }
        if (!json_is_object(container) || !json_is_string(id) || !(json_is_string(name) || json_is_null(name) || !name))
                return -EBADMSG;
        *ret = json_is_string(name) ? json_string_value(name) : json_string_value(id);
        return 0;
}

static int write_processes(FILE *f, MetricsFormat format, const MetricsInput *in, const Units *u) {
        json_t *rows = json_object_get(in->top, "rows");
        if (!json_is_array(rows))
                return -EBADMSG;
        size_t n = MIN(json_array_size(rows), (size_t) in->process_series);
        uint64_t traps[2] = {}, faults[2] = {}; /* [0] the listed processes', [1] the remainder */

        /* Two passes over the same rows, one per family, so that each family's samples are
         * together as both formats require. */
        for (int pass = 0; pass < 2; pass++) {
                if (pass == 0)
                        family(f, format, "trapstat_process_traps", COUNTER,
                               "Traps of the processes with the most page faults since trapstatd started; "
                               "pid=other: every other process.");
                else
                        family(f, format, "trapstat_process_page_faults", COUNTER,
                               "User and kernel page faults of the same processes; pid=other: every other process.");
                for (size_t i = 0; i < n; i++) {
                        json_t *row = json_array_get(rows, i), *p = json_object_get(row, "process");
                        json_t *pid = json_object_get(p, "pid"), *start = json_object_get(p, "startTime");
                        json_t *comm = json_object_get(p, "comm"), *unit = json_object_get(p, "unit");
                        const char *container;
                        Faults x;
                        json_t *t;
                        if (!json_is_integer(pid) || !json_is_integer(start) || !json_is_string(comm) ||
                            !(json_is_string(unit) || json_is_null(unit)) ||
                            process_container_label(json_object_get(p, "container"), &container) < 0 ||
                            counters_read(json_object_get(row, "counters"), &x, NULL, NULL, &t) < 0)
                                return -EBADMSG;
                        char pid_s[32], start_s[32];
                        snprintf(pid_s, sizeof pid_s, "%" JSON_INTEGER_FORMAT, json_integer_value(pid));
                        snprintf(start_s, sizeof start_s, "%" JSON_INTEGER_FORMAT, json_integer_value(start));
                        /* start_time: a pid is reused, a series must stay one incarnation's. */
                        const char *labels[] = { "pid",  pid_s,
                                                 "start_time", start_s,
                                                 "comm", json_string_value(comm),
                                                 "unit", json_is_string(unit) ? json_string_value(unit) : "",
                                                 "container", container };
                        uint64_t value = pass == 0 ? traps_sum(t) : x.user + x.kernel;
                        if (pass == 0)
                                traps[0] += value;
                        else
                                faults[0] += value;
                        sample(f, pass == 0 ? "trapstat_process_traps_total" : "trapstat_process_page_faults_total",
                               labels, 5, value);
                }
                traps[1] = sub0(traps_sum(u->total_traps), traps[0]);
                faults[1] = sub0(u->total.user + u->total.kernel, faults[0]);
                const char *labels[] = { "pid", OTHER, "start_time", "", "comm", "", "unit", "", "container", "" };
                sample(f, pass == 0 ? "trapstat_process_traps_total" : "trapstat_process_page_faults_total", labels,
                       5, pass == 0 ? traps[1] : faults[1]);
        }
        return 0;
}

static void write_up(FILE *f, MetricsFormat format, bool up) {
        family(f, format, "trapstat_up", GAUGE, "1 when trapstatd answered this scrape, else 0 (and no other series).");
        sample(f, "trapstat_up", NULL, 0, up);
}

/* Whether the daemon times faults: false only when GetStatus lists the fault_time source as inactive
 * (off by default), whose FaultTime is then all zero and not a measurement. */
static bool status_times_faults(json_t *status) {
        size_t i;
        json_t *s;

        json_array_foreach(json_object_get(status, "sources"), i, s) {
                const char *name = json_string_value(json_object_get(s, "name"));

                if (name && strcmp(name, "fault_time") == 0)
                        return !json_is_false(json_object_get(s, "active"));
        }
        return true;
}

int metrics_render(const MetricsInput *in, MetricsFormat format, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        _cleanup_(fclosep) FILE *f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;

        Units u = {};
        int r = in->unit_totals ? units_read(in->unit_totals, in->unit_limit, &u) : 0;
        if (r >= 0 && in->unit_totals) {
                write_up(f, format, true);
                write_traps(f, format, &u);
                write_faults(f, format, &u);
                write_major_faults(f, format, &u);
                if (u.has_time && (!in->status || status_times_faults(in->status))) {
                        write_fault_seconds(f, format, &u);
                        write_major_fault_seconds(f, format, &u);
                        write_fault_histogram(f, format, &u);
                }
                write_stall(f, format, &u);
                if (in->status)
                        r = write_drops(f, format, in->status);
                if (r >= 0 && in->top && in->process_series > 0)
                        r = write_processes(f, format, in, &u);
                if (r >= 0 && in->scrape_seconds >= 0) {
                        family(f, format, "trapstat_scrape_duration_seconds", GAUGE,
                               "Time this scrape spent asking trapstatd, seconds.");
                        fprintf(f, "trapstat_scrape_duration_seconds %.6f\n", in->scrape_seconds);
                }
        } else if (!in->unit_totals)
                write_up(f, format, false);
        free(u.rows);
        if (r < 0)
                return r;
        if (format == METRICS_OPENMETRICS)
                fputs("# EOF\n", f);
        if (fflush(f) != 0 || ferror(f))
                return -ENOMEM;
        fclose(TAKE_PTR(f));
        *ret_size = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

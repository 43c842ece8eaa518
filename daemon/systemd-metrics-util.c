/* SPDX-License-Identifier: MIT */
#include "systemd-metrics-util.h"

#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "traps.h"

const MetricFamily metric_families[] = {
        { "io.trapstat.Traps", "CPU traps the kernel turned into a signal, by x86 vector", "counter" },
        { "io.trapstat.PageFaults",
          "Page faults: taken in user mode by access (read, write, exec), or in kernel mode for the process",
          "counter" },
        { "io.trapstat.MinorFaults", "Minor page faults, as the kernel accounts them", "counter" },
        { "io.trapstat.MajorFaults", "Major page faults, as the kernel accounts them", "counter" },
        { "io.trapstat.MajorFaultsByCause",
          "Major page faults by what the faulting address mapped: a file (file), anonymous memory read back from "
          "swap (anon), shared memory read back from swap (shmem); at most MajorFaults together",
          "counter" },
        { "io.trapstat.PageFaultTimeNs",
          "Nanoseconds spent in page faults: user-mode faults the kernel accounted as minor or major, or faults "
          "taken in kernel mode for the process",
          "counter" },
        { "io.trapstat.MajorFaultTimeNsByCause",
          "Nanoseconds spent in major page faults taken in user or kernel mode, by cause as MajorFaultsByCause; a "
          "part of PageFaultTimeNs kinds major and kernel",
          "counter" },
        { "io.trapstat.MemoryStallNs",
          "Nanoseconds waited on memory, as the kernel's delay accounting says, by cause: pages read back from swap "
          "(swapin), pages of the working set read again after their eviction (thrashing), direct reclaim "
          "(reclaim), direct compaction (compact)",
          "counter" },
        { "io.trapstat.MemoryStalls",
          "Waits on memory, as the kernel's delay accounting counts them, by cause as MemoryStallNs", "counter" },
        { "io.trapstat.BlockIoDelayNs", "Nanoseconds waited for block I/O, as the kernel's delay accounting says",
          "counter" },
        { "io.trapstat.BlockIoDelays", "Waits for block I/O, as the kernel's delay accounting counts them", "counter" },
        { "io.trapstat.Processes", "Processes counted under the unit since trapstatd started", "counter" },
        { "io.trapstat.Drops", "Events trapstatd could not count, by kind", "counter" },
        { "io.trapstat.UnitsNotReported", "Units summed into the object \"other\" by --report-max-metrics", "gauge" },
};
const size_t n_metric_families = ELEMENTSOF(metric_families);

/* One series of an object besides its traps: its metric, fields (up to two pairs) and value, a
 * uint64_t member of UnitTotalsRow. */
typedef struct ObjectSeries {
        const char *name;
        const char *fields[4]; /* name, value, name, value; NULL ends them */
        size_t offset;
        FaultsKnown part;      /* the part it is (of Faults, or the stall) when the daemon may not count it */
} ObjectSeries;

#define ROW(member) offsetof(UnitTotalsRow, member)
#define CAUSE(metric, cause, member) { metric, { "cause", cause }, ROW(member), FAULTS_KNOWN_MAJOR_CAUSE }
/* The causes' names as stall_cause_names[] has them (a unit test compares the two). */
#define STALL(metric, cause, m) { metric, { "cause", cause }, ROW(stall.m), FAULTS_KNOWN_STALL }
static const ObjectSeries object_series[] = {
        { "io.trapstat.PageFaults", { "mode", "user", "access", "read" }, ROW(faults.read), FAULTS_KNOWN_ACCESS },
        { "io.trapstat.PageFaults", { "mode", "user", "access", "write" }, ROW(faults.write), FAULTS_KNOWN_ACCESS },
        { "io.trapstat.PageFaults", { "mode", "user", "access", "exec" }, ROW(faults.exec), FAULTS_KNOWN_ACCESS },
        { "io.trapstat.PageFaults", { "mode", "kernel" }, ROW(faults.kernel) },
        { "io.trapstat.MinorFaults", {}, ROW(faults.minor) },
        { "io.trapstat.MajorFaults", {}, ROW(faults.major) },
        CAUSE("io.trapstat.MajorFaultsByCause", "file", faults.major_file),
        CAUSE("io.trapstat.MajorFaultsByCause", "anon", faults.major_anon),
        CAUSE("io.trapstat.MajorFaultsByCause", "shmem", faults.major_shmem),
        { "io.trapstat.PageFaultTimeNs", { "kind", "minor" }, ROW(fault_time.minor_ns) },
        { "io.trapstat.PageFaultTimeNs", { "kind", "major" }, ROW(fault_time.major_ns) },
        { "io.trapstat.PageFaultTimeNs", { "kind", "kernel" }, ROW(fault_time.kernel_ns) },
        CAUSE("io.trapstat.MajorFaultTimeNsByCause", "file", fault_time.major_file_ns),
        CAUSE("io.trapstat.MajorFaultTimeNsByCause", "anon", fault_time.major_anon_ns),
        CAUSE("io.trapstat.MajorFaultTimeNsByCause", "shmem", fault_time.major_shmem_ns),
        STALL("io.trapstat.MemoryStallNs", "swapin", ns[STALL_SWAPIN]),
        STALL("io.trapstat.MemoryStallNs", "thrashing", ns[STALL_THRASHING]),
        STALL("io.trapstat.MemoryStallNs", "reclaim", ns[STALL_RECLAIM]),
        STALL("io.trapstat.MemoryStallNs", "compact", ns[STALL_COMPACT]),
        STALL("io.trapstat.MemoryStalls", "swapin", count[STALL_SWAPIN]),
        STALL("io.trapstat.MemoryStalls", "thrashing", count[STALL_THRASHING]),
        STALL("io.trapstat.MemoryStalls", "reclaim", count[STALL_RECLAIM]),
        STALL("io.trapstat.MemoryStalls", "compact", count[STALL_COMPACT]),
        /* Block I/O is not memory: metrics of its own, no cause. */
        { "io.trapstat.BlockIoDelayNs", {}, ROW(stall.ns[STALL_BLKIO]), FAULTS_KNOWN_STALL },
        { "io.trapstat.BlockIoDelays", {}, ROW(stall.count[STALL_BLKIO]), FAULTS_KNOWN_STALL },
        { "io.trapstat.Processes", {}, ROW(processes) },
};
#undef STALL
#undef CAUSE
#undef ROW

/* The series of one object, in the order they are listed: bit s of a mask is series s, the
 * vectors first, then object_series. */
#define SERIES_TRAPS 0
#define SERIES_OBJECT (TRAP_VECTORS + 1)
#define N_SERIES (SERIES_OBJECT + ELEMENTSOF(object_series))
_Static_assert(N_SERIES == METRICS_MAX_SERIES_PER_OBJECT, "every series is counted");
_Static_assert(N_SERIES <= 64, "a mask holds every series");

/* A part the daemon does not count is 0 in its rows; it is left out by what it is, not by its
 * value, as in the daemon's other replies (null there, never a false zero). */
static uint64_t series_value(const UnitTotalsRow *r, unsigned s, FaultsKnown known) {
        const ObjectSeries *o;

        if (s < SERIES_OBJECT)
                return r->traps.vector[s - SERIES_TRAPS];
        o = &object_series[s - SERIES_OBJECT];
        if (o->part && (!(known & o->part) || (r->faults.unknown & o->part)))
                return 0;
        return *(const uint64_t *) ((const char *) r + o->offset);
}

static uint64_t series_mask(const UnitTotalsRow *r, FaultsKnown known) {
        uint64_t m = 0;

        for (unsigned s = 0; s < N_SERIES; s++)
                if (series_value(r, s, known) != 0)
                        m |= UINT64_C(1) << s;
        return m;
}

static json_t *metric_new(const char *name, uint64_t value, const char *object, json_t *fields) {
        json_t *m = json_pack("{s:s, s:I}", "name", name, "value", (json_int_t) value);

        if (m && object && json_object_set_new(m, "object", text_to_json(object)) < 0)
                m = (json_decref(m), NULL);
        if (m && fields && json_object_set(m, "fields", fields) < 0)
                m = (json_decref(m), NULL);
        json_decref(fields);
        return m;
}

/* The same with fields, which may be NULL only because building them failed. */
static json_t *metric_fields_new(const char *name, uint64_t value, const char *object, json_t *fields) {
        return fields ? metric_new(name, value, object, fields) : NULL;
}

/* {"mode": "user", "access": "read"} of an ObjectSeries; NULL on allocation failure. */
static json_t *fields_new(const char *const fields[static 4]) {
        json_t *o = json_object();

        for (size_t i = 0; o && i < 4 && fields[i]; i += 2)
                if (json_object_set_new(o, fields[i], json_string(fields[i + 1])) < 0)
                        o = (json_decref(o), NULL);
        return o;
}

static int append(json_t *list, json_t *metric) {
        return metric ? json_array_append_new(list, metric) : -1;
}

static int append_object(json_t *list, const UnitTotalsRow *r, const char *object, FaultsKnown known) {
        char buf[16];

        for (unsigned s = 0; s < N_SERIES; s++) {
                uint64_t v = series_value(r, s, known);
                const ObjectSeries *o = s >= SERIES_OBJECT ? &object_series[s - SERIES_OBJECT] : NULL;
                json_t *m;

                if (v == 0)
                        continue;
                if (!o)
                        m = metric_fields_new("io.trapstat.Traps", v, object,
                                              json_pack("{s:s}", "vector", trap_vector_name(s - SERIES_TRAPS, buf)));
                else if (o->fields[0])
                        m = metric_fields_new(o->name, v, object, fields_new(o->fields));
                else
                        m = metric_new(o->name, v, object, NULL);
                if (append(list, m) < 0)
                        return -1;
        }
        return 0;
}

static void row_add(UnitTotalsRow *a, const UnitTotalsRow *b) {
        a->processes += b->processes;
        faults_add(&a->faults, &b->faults);
        fault_time_add(&a->fault_time, &b->fault_time);
        stall_add(&a->stall, &b->stall);
        traps_add(&a->traps, &b->traps);
}

static bool is_other(const UnitTotalsRow *r) {
        return r->unit && strcmp(r->unit, UNIT_TOTALS_OTHER) == 0;
}

json_t *metrics_list_build(const UnitTotalsRow *rows, size_t n, const CollectorDrop *drops, size_t n_drops,
                           FaultsKnown known, size_t max) {
        _cleanup_free_ uint64_t *suffix = calloc(n + 1, sizeof(uint64_t));
        _cleanup_json_ json_t *list = json_array();
        UnitTotalsRow other = { .unit = METRICS_OBJECT_OTHER }, all = {};
        uint64_t other_mask = 0;
        size_t budget, used = 0, left_out = 0, k;

        if (!suffix || !list || max < METRICS_MIN_MAX)
                return NULL;
        /* The system-wide totals: every row, reported or not. */
        for (size_t i = 0; i < n; i++)
                row_add(&all, &rows[i]);
        budget = max - n_drops - 1 - (size_t) __builtin_popcountll(series_mask(&all, known));

        /* The totals' own "other" always goes into the report's. suffix[i]: the series "other"
         * would have if every unit from i on went into it. */
        for (size_t i = 0; i < n; i++)
                if (is_other(&rows[i])) {
                        row_add(&other, &rows[i]);
                        other_mask = series_mask(&rows[i], known);
                }
        suffix[n] = other_mask;
        for (size_t i = n; i-- > 0;)
                suffix[i] = suffix[i + 1] | (is_other(&rows[i]) ? 0 : series_mask(&rows[i], known));

        /* The units most events first, each whole, while it and what would be left fit. */
        for (k = 0; k < n; k++) {
                size_t need;

                if (is_other(&rows[k]))
                        continue;
                need = (size_t) __builtin_popcountll(series_mask(&rows[k], known));
                /* What is left after k: "other" only if any series of it is not zero. */
                if (used + need + (size_t) __builtin_popcountll(suffix[k + 1]) > budget)
                        break;
                used += need;
        }
        for (size_t i = k; i < n; i++)
                if (!is_other(&rows[i])) {
                        row_add(&other, &rows[i]);
                        left_out++;
                }

        for (size_t i = 0; i < n_drops; i++)
                if (append(list, metric_fields_new("io.trapstat.Drops", drops[i].count, NULL,
                                            json_pack("{s:s}", "kind", drops[i].kind.name))) < 0)
                        return NULL;
        if (append(list, metric_new("io.trapstat.UnitsNotReported", left_out, NULL, NULL)) < 0)
                return NULL;
        if (append_object(list, &all, NULL, known) < 0)
                return NULL;
        for (size_t i = 0; i < k; i++)
                if (!is_other(&rows[i]) && append_object(list, &rows[i], rows[i].unit ?: METRICS_OBJECT_NONE, known) < 0)
                        return NULL;
        if (append_object(list, &other, METRICS_OBJECT_OTHER, known) < 0)
                return NULL;
        return TAKE_PTR(list);
}

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
        { "io.trapstat.PageFaultTimeNs",
          "Nanoseconds spent in page faults: user-mode faults the kernel accounted as minor or major, or faults "
          "taken in kernel mode for the process",
          "counter" },
        { "io.trapstat.Processes", "Processes counted under the unit since trapstatd started", "counter" },
        { "io.trapstat.Drops", "Events trapstatd could not count, by kind", "counter" },
        { "io.trapstat.UnitsNotReported", "Units summed into the object \"other\" by --report-max-metrics", "gauge" },
};
const size_t n_metric_families = ELEMENTSOF(metric_families);

/* The series of one object, in the order they are listed: bit s of a mask is series s. */
enum {
        SERIES_TRAPS = 0, /* + vector */
        SERIES_USER_READ = TRAP_VECTORS + 1,
        SERIES_USER_WRITE,
        SERIES_USER_EXEC,
        SERIES_KERNEL,
        SERIES_MINOR,
        SERIES_MAJOR,
        SERIES_TIME_MINOR,
        SERIES_TIME_MAJOR,
        SERIES_TIME_KERNEL,
        SERIES_PROCESSES,
        N_SERIES,
};
_Static_assert(N_SERIES == METRICS_MAX_SERIES_PER_OBJECT, "every series is counted");
_Static_assert(N_SERIES <= 64, "a mask holds every series");

static uint64_t series_value(const UnitTotalsRow *r, unsigned s) {
        switch (s) {
        case SERIES_USER_READ:
                return r->faults.read;
        case SERIES_USER_WRITE:
                return r->faults.write;
        case SERIES_USER_EXEC:
                return r->faults.exec;
        case SERIES_KERNEL:
                return r->faults.kernel;
        case SERIES_MINOR:
                return r->faults.minor;
        case SERIES_MAJOR:
                return r->faults.major;
        case SERIES_TIME_MINOR:
                return r->fault_time.minor_ns;
        case SERIES_TIME_MAJOR:
                return r->fault_time.major_ns;
        case SERIES_TIME_KERNEL:
                return r->fault_time.kernel_ns;
        case SERIES_PROCESSES:
                return r->processes;
        default:
                return r->traps.vector[s - SERIES_TRAPS];
        }
}

static uint64_t series_mask(const UnitTotalsRow *r) {
        uint64_t m = 0;

        for (unsigned s = 0; s < N_SERIES; s++)
                if (series_value(r, s) != 0)
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

static int append(json_t *list, json_t *metric) {
        return metric ? json_array_append_new(list, metric) : -1;
}

static int append_object(json_t *list, const UnitTotalsRow *r, const char *object) {
        char buf[16];

        for (unsigned s = 0; s < N_SERIES; s++) {
                uint64_t v = series_value(r, s);
                json_t *m;

                if (v == 0)
                        continue;
                switch (s) {
                case SERIES_USER_READ:
                case SERIES_USER_WRITE:
                case SERIES_USER_EXEC:
                        m = metric_fields_new("io.trapstat.PageFaults", v, object,
                                       json_pack("{s:s, s:s}", "mode", "user", "access",
                                                 s == SERIES_USER_READ    ? "read"
                                                 : s == SERIES_USER_WRITE ? "write"
                                                                          : "exec"));
                        break;
                case SERIES_KERNEL:
                        m = metric_fields_new("io.trapstat.PageFaults", v, object, json_pack("{s:s}", "mode", "kernel"));
                        break;
                case SERIES_MINOR:
                        m = metric_new("io.trapstat.MinorFaults", v, object, NULL);
                        break;
                case SERIES_MAJOR:
                        m = metric_new("io.trapstat.MajorFaults", v, object, NULL);
                        break;
                case SERIES_TIME_MINOR:
                case SERIES_TIME_MAJOR:
                case SERIES_TIME_KERNEL:
                        m = metric_fields_new("io.trapstat.PageFaultTimeNs", v, object,
                                              json_pack("{s:s}", "kind",
                                                        s == SERIES_TIME_MINOR   ? "minor"
                                                        : s == SERIES_TIME_MAJOR ? "major"
                                                                                 : "kernel"));
                        break;
                case SERIES_PROCESSES:
                        m = metric_new("io.trapstat.Processes", v, object, NULL);
                        break;
                default:
                        m = metric_fields_new("io.trapstat.Traps", v, object,
                                       json_pack("{s:s}", "vector", trap_vector_name(s - SERIES_TRAPS, buf)));
                }
                if (append(list, m) < 0)
                        return -1;
        }
        return 0;
}

static void row_add(UnitTotalsRow *a, const UnitTotalsRow *b) {
        a->processes += b->processes;
        faults_add(&a->faults, &b->faults);
        fault_time_add(&a->fault_time, &b->fault_time);
        traps_add(&a->traps, &b->traps);
}

static bool is_other(const UnitTotalsRow *r) {
        return r->unit && strcmp(r->unit, UNIT_TOTALS_OTHER) == 0;
}

json_t *metrics_list_build(const UnitTotalsRow *rows, size_t n, const CollectorDrop *drops, size_t n_drops,
                           size_t max) {
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
        budget = max - n_drops - 1 - (size_t) __builtin_popcountll(series_mask(&all));

        /* The totals' own "other" always goes into the report's. suffix[i]: the series "other"
         * would have if every unit from i on went into it. */
        for (size_t i = 0; i < n; i++)
                if (is_other(&rows[i])) {
                        row_add(&other, &rows[i]);
                        other_mask = series_mask(&rows[i]);
                }
        suffix[n] = other_mask;
        for (size_t i = n; i-- > 0;)
                suffix[i] = suffix[i + 1] | (is_other(&rows[i]) ? 0 : series_mask(&rows[i]));

        /* The units most events first, each whole, while it and what would be left fit. */
        for (k = 0; k < n; k++) {
                size_t need;

                if (is_other(&rows[k]))
                        continue;
                need = (size_t) __builtin_popcountll(series_mask(&rows[k]));
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
        if (append_object(list, &all, NULL) < 0)
                return NULL;
        for (size_t i = 0; i < k; i++)
                if (!is_other(&rows[i]) && append_object(list, &rows[i], rows[i].unit ?: METRICS_OBJECT_NONE) < 0)
                        return NULL;
        if (append_object(list, &other, METRICS_OBJECT_OTHER) < 0)
                return NULL;
        return TAKE_PTR(list);
}

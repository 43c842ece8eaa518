/* SPDX-License-Identifier: MIT */
#include "output.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "counters.h"
#include "traps.h"
#include "time-util.h"
#include "macro.h"

const char *format_count(uint64_t n, char buf[static 16]) {
        static const char units[] = "kMGTPE";

        if (n < 1000) {
                snprintf(buf, 16, "%" PRIu64, n);
                return buf;
        }
        double v = (double) n;
        size_t u = 0;
        for (v /= 1000.0; v >= 999.95 && u + 1 < sizeof(units) - 1; u++)
                v /= 1000.0;
        snprintf(buf, 16, v < 9.995 ? "%.2f%c" : v < 99.95 ? "%.1f%c" : "%.0f%c", v, units[u]);
        return buf;
}

const char *format_time_usec(uint64_t usec, char buf[static 32]) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, 32, "@%" PRIu64, usec / USEC_PER_SEC);
        return buf;
}

const char *format_duration_usec(uint64_t usec, char buf[static 32]) {
        uint64_t s = usec / USEC_PER_SEC;

        if (usec < USEC_PER_SEC)
                snprintf(buf, 32, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
        else if (s < 60)
                snprintf(buf, 32, "%" PRIu64 "s", s);
        else if (s < 3600)
                snprintf(buf, 32, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
        else if (s < 86400)
                snprintf(buf, 32, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
        else
                snprintf(buf, 32, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s / 3600 % 24);
        return buf;
}

static const char *faults_header = "   USER  KERNEL   MINOR   MAJOR    READ   WRITE    EXEC    PROT";

static void print_faults(FILE *f, json_t *counters) {
        Faults faults;
        char buf[16];

        if (faults_from_json(json_object_get(counters, "faults"), &faults) < 0) {
                fputs("       (malformed counters)", f);
                return;
        }
        for (size_t i = 0; i < n_fault_fields; i++)
                fprintf(f, " %7s", format_count(faults_get(&faults, &fault_fields[i]), buf));
}

/* Sum of a JSON map of counts. */
static uint64_t map_total(json_t *map) {
        const char *key;
        uint64_t n = 0;
        json_t *v;

        json_object_foreach (map, key, v)
                if (json_is_integer(v) && json_integer_value(v) > 0)
                        n += (uint64_t) json_integer_value(v);
        return n;
}

/* The busiest entries of a map of counts, most first: "UD:1.0k GP:12". */
static void print_busiest(FILE *f, json_t *map, size_t max) {
        const char *printed[8] = {};

        for (size_t k = 0; k < max && k < ELEMENTSOF(printed); k++) {
                const char *best = NULL, *key;
                json_int_t best_n = 0;
                json_t *v;

                json_object_foreach (map, key, v) {
                        bool seen = false;

                        for (size_t j = 0; j < k; j++)
                                seen = seen || strcmp(printed[j], key) == 0;
                        if (!seen && json_is_integer(v) && json_integer_value(v) > best_n) {
                                best = key;
                                best_n = json_integer_value(v);
                        }
                }
                if (!best)
                        break;
                char buf[16];
                fprintf(f, "%s%s:%s", k ? " " : "", best, format_count((uint64_t) best_n, buf));
                printed[k] = best;
        }
}

void print_top_table(FILE *f, json_t *rows, int max_rows) {
        size_t i;
        json_t *row;

        fprintf(f, "    PID COMM           %s   TRAPS  VECTORS          UNIT\n", faults_header);
        json_array_foreach (rows, i, row) {
                json_t *p = json_object_get(row, "process");
                json_t *unit = json_object_get(p, "unit");

                if (max_rows >= 0 && (int) i >= max_rows)
                        break;
                fprintf(f, "%7" JSON_INTEGER_FORMAT " %-15.15s", json_integer_value(json_object_get(p, "pid")),
                        json_string_value(json_object_get(p, "comm")) ?: "?");
                json_t *traps = json_object_get(json_object_get(row, "counters"), "traps");
                char buf[16], *vectors = NULL;
                size_t size = 0;
                FILE *v;

                print_faults(f, json_object_get(row, "counters"));
                v = open_memstream(&vectors, &size);
                if (v) {
                        print_busiest(v, traps, 2);
                        fclose(v);
                }
                fprintf(f, " %7s  %-16s %s\n", format_count(map_total(traps), buf), vectors && *vectors ? vectors : "-",
                        json_is_string(unit) ? json_string_value(unit) : "-");
                free(vectors);
        }
}

void print_history(FILE *f, json_t *reply) {
        json_t *p = json_object_get(reply, "process"), *samples = json_object_get(reply, "samples"), *sample;
        json_t *cmdline = json_object_get(p, "cmdline"), *unit = json_object_get(p, "unit");
        char first[32], last[32], lifetime[32];
        uint64_t first_usec = (uint64_t) json_integer_value(json_object_get(p, "firstSeenUsec"));
        uint64_t last_usec = (uint64_t) json_integer_value(json_object_get(p, "lastSeenUsec"));
        size_t i;

        fprintf(f, "pid %" JSON_INTEGER_FORMAT " (%s), uid %" JSON_INTEGER_FORMAT ", start time %" JSON_INTEGER_FORMAT " ns after boot, %s\n",
                json_integer_value(json_object_get(p, "pid")), json_string_value(json_object_get(p, "comm")) ?: "?",
                json_integer_value(json_object_get(p, "uid")), json_integer_value(json_object_get(p, "startTime")),
                json_is_true(json_object_get(p, "exited")) ? "exited" : "running");
        if (json_is_string(cmdline))
                fprintf(f, "command: %s\n", json_string_value(cmdline));
        if (json_is_string(unit))
                fprintf(f, "unit: %s\n", json_string_value(unit));
        fprintf(f, "seen: %s to %s (%s)\n\n", format_time_usec(first_usec, first), format_time_usec(last_usec, last),
                format_duration_usec(last_usec >= first_usec ? last_usec - first_usec : 0, lifetime));

        fprintf(f, "TIME               %s\n", faults_header);
        json_array_foreach (samples, i, sample) {
                char t[32];

                fprintf(f, "%-19s", format_time_usec((uint64_t) json_integer_value(json_object_get(sample, "timeUsec")), t));
                print_faults(f, json_object_get(sample, "counters"));
                fputc('\n', f);
        }
        fprintf(f, "%-19s", "total");
        print_faults(f, json_object_get(reply, "total"));
        fputc('\n', f);

        /* Traps by vector with their names, then by signal and si_code. */
        json_t *traps = json_object_get(json_object_get(reply, "total"), "traps");
        json_t *codes = json_object_get(json_object_get(reply, "total"), "signalCodes");
        if (json_object_size(traps) > 0) {
                const char *key;
                json_t *v;

                fprintf(f, "\ntraps:\n");
                json_object_foreach (traps, key, v) {
                        unsigned vector;
                        const char *what = trap_vector_from_name(key, &vector) >= 0 ? trap_vector_description(vector) : NULL;

                        fprintf(f, "  #%-8s %-24s %" JSON_INTEGER_FORMAT "\n", key, what ?: "", json_integer_value(v));
                }
                fprintf(f, "signals:\n");
                json_object_foreach (codes, key, v)
                        fprintf(f, "  %-33s %" JSON_INTEGER_FORMAT "\n", key, json_integer_value(v));
        }
}

void print_status(FILE *f, json_t *reply) {
        json_t *sources = json_object_get(reply, "sources"), *s;
        char tick[32], size[16];
        size_t i;

        fprintf(f, "trapstatd %s\n", json_string_value(json_object_get(reply, "version")) ?: "?");
        fprintf(f, "tick:      %s\n",
                format_duration_usec((uint64_t) json_integer_value(json_object_get(reply, "tickUsec")), tick));
        fprintf(f, "database:  %s (%sB)\n", json_string_value(json_object_get(reply, "databasePath")) ?: "?",
                format_count((uint64_t) json_integer_value(json_object_get(reply, "databaseBytes")), size));
        fprintf(f, "processes: %" JSON_INTEGER_FORMAT " tracked\n",
                json_integer_value(json_object_get(reply, "processesTracked")));
        fprintf(f, "drops:     %" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(reply, "drops")));
        fprintf(f, "sources:\n");
        json_array_foreach (sources, i, s) {
                json_t *reason = json_object_get(s, "reason");

                fprintf(f, "  %-24s %s%s%s\n", json_string_value(json_object_get(s, "name")) ?: "?",
                        json_is_true(json_object_get(s, "active")) ? "active" : "inactive",
                        json_is_string(reason) ? ": " : "", json_is_string(reason) ? json_string_value(reason) : "");
        }
}

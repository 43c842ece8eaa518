/* SPDX-License-Identifier: MIT */
#include "output.h"

#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cli.h"
#include "counters.h"
#include "macro.h"
#include "time-util.h"
#include "traps.h"

#define BOLD "\033[1m"
#define RED "\033[31m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define RESET "\033[0m"

static const char *on(const OutputStyle *s, const char *code) {
        return s->color ? code : "";
}

static const char *off(const OutputStyle *s) {
        return s->color ? RESET : "";
}

static json_int_t int_member(json_t *o, const char *key) {
        return json_integer_value(json_object_get(o, key));
}

static const char *string_member(json_t *o, const char *key, const char *fallback) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : fallback;
}

/* Text from a process (comm, cmdline, unit) for a table: escaped, cut to at most max columns and
 * padded to min (see format_cell); NULL only when out of memory, never the raw text. */
static char *untrusted_cell(const OutputStyle *style, const char *s, size_t min, size_t max) {
        char *cell = NULL;

        return format_cell(s, style->utf8, min, max, &cell) < 0 ? NULL : cell;
}

/* Counts take at most 5 characters ("999", "1.23k", "123M"): 7 per column keeps history in 80. */
static const char *faults_header = "   USER KERNEL  MINOR  MAJOR   READ  WRITE   EXEC   PROT";

static void print_faults(FILE *f, json_t *counters) {
        Faults faults;
        char buf[16];

        if (faults_from_json(json_object_get(counters, "faults"), &faults) < 0) {
                fputs(" (malformed counters)", f);
                return;
        }
        for (size_t i = 0; i < n_fault_fields; i++)
                fprintf(f, " %6s", format_count(faults_get(&faults, &fault_fields[i]), buf));
}

uint64_t map_total(json_t *map) {
        const char *key;
        uint64_t n = 0;
        json_t *v;

        json_object_foreach (map, key, v)
                if (json_is_integer(v) && json_integer_value(v) > 0)
                        n += (uint64_t) json_integer_value(v);
        return n;
}

/* The keys of a map, borrowed, in a malloc'd array (NULL when empty or on allocation failure). */
static const char **map_keys(json_t *map, size_t *ret_n) {
        size_t n = json_object_size(map), k = 0;
        const char **keys, *key;
        json_t *v;

        *ret_n = 0;
        if (n == 0 || !(keys = calloc(n, sizeof(*keys))))
                return NULL;
        json_object_foreach (map, key, v)
                keys[k++] = key;
        *ret_n = k;
        return keys;
}

/* Keys of a map of counts, largest count first, ties by name; a malloc'd array of n borrowed
 * keys (NULL when empty or on allocation failure). */
static const char **keys_by_count(json_t *map, size_t *ret_n) {
        size_t k;
        const char **keys = map_keys(map, &k);

        *ret_n = k;
        /* Insertion sort: maps hold a few dozen keys at most. */
        for (size_t i = 1; i < k; i++)
                for (size_t j = i; j > 0; j--) {
                        json_int_t a = json_integer_value(json_object_get(map, keys[j - 1]));
                        json_int_t b = json_integer_value(json_object_get(map, keys[j]));

                        if (a > b || (a == b && strcmp(keys[j - 1], keys[j]) <= 0))
                                break;
                        const char *t = keys[j];
                        keys[j] = keys[j - 1];
                        keys[j - 1] = t;
                }
        return keys;
}

void format_busiest(json_t *map, size_t max, double per, char *buf, size_t size) {
        _cleanup_free_ const char **keys = NULL;
        size_t n, used = 0;

        buf[0] = '\0';
        keys = keys_by_count(map, &n);
        for (size_t i = 0; i < n && i < max; i++) {
                json_int_t v = json_integer_value(json_object_get(map, keys[i]));
                char num[16];
                int l;

                if (v <= 0)
                        break;
                if (per == 1.0)
                        format_count((uint64_t) v, num);
                else
                        format_rate((double) v / per, num);
                l = snprintf(buf + used, size - used, "%s%s:%s", used ? " " : "", keys[i], num);
                if (l < 0 || (size_t) l >= size - used) {
                        buf[used] = '\0';
                        break;
                }
                used += (size_t) l;
        }
        if (!buf[0])
                snprintf(buf, size, "-");
}

const char *format_user(uint64_t uid, char buf[static 32]) {
        struct passwd pw, *result = NULL;
        char scratch[1024];

        if (uid <= UINT32_MAX && getpwuid_r((uid_t) uid, &pw, scratch, sizeof(scratch), &result) == 0 && result &&
            strlen(result->pw_name) < 32)
                snprintf(buf, 32, "%s", result->pw_name);
        else
                snprintf(buf, 32, "%" PRIu64, uid);
        return buf;
}

void print_top_table(FILE *f, const OutputStyle *style, json_t *rows, int max_rows) {
        size_t i;
        json_t *row;

        fprintf(f, "%s    PID COMM           %s  TRAPS  VECTORS          UNIT%s\n", on(style, BOLD), faults_header,
                off(style));
        json_array_foreach (rows, i, row) {
                json_t *p = json_object_get(row, "process");
                json_t *traps = json_object_get(json_object_get(row, "counters"), "traps");
                _cleanup_free_ char *comm = NULL, *unit = NULL;
                char buf[16], vectors[64];

                if (max_rows >= 0 && (int) i >= max_rows)
                        break;
                comm = untrusted_cell(style, string_member(p, "comm", "?"), 15, 15);
                unit = untrusted_cell(style, string_member(p, "unit", "-"), 0, SIZE_MAX);
                fprintf(f, "%7" JSON_INTEGER_FORMAT " %s", int_member(p, "pid"), comm ?: "?");
                print_faults(f, json_object_get(row, "counters"));
                format_busiest(traps, 2, 1.0, vectors, sizeof(vectors));
                fprintf(f, " %6s  %-16s %s\n", format_count(map_total(traps), buf), vectors, unit ?: "?");
        }
}

/* The greatest common divisor of the gaps between sample times: the sample width when the
 * caller did not choose one (samples are only sent when non-zero, so gaps are multiples). */
static uint64_t samples_step(json_t *samples) {
        uint64_t g = 0, prev = 0;
        size_t i;
        json_t *s;

        json_array_foreach (samples, i, s) {
                uint64_t t = (uint64_t) int_member(s, "timeUsec");

                if (i > 0 && t > prev) {
                        uint64_t a = t - prev, b = g;

                        while (b) {
                                uint64_t r = a % b;
                                a = b;
                                b = r;
                        }
                        g = a;
                }
                prev = t;
        }
        return g ?: 10 * USEC_PER_SEC;
}

/* One sparkline row: the counter's value in each step from the first sample to the last. */
static void print_sparkline(FILE *f, const OutputStyle *style, const char *label, json_t *samples,
                            uint64_t first, uint64_t step, size_t n_steps, uint64_t (*get)(json_t *counters, const void *what),
                            const void *what) {
        _cleanup_free_ uint64_t *values = calloc(n_steps, sizeof(uint64_t));
        _cleanup_free_ char *line = NULL;
        uint64_t total = 0, max = 0;
        size_t i, width;
        json_t *s;
        char a[16], b[16];

        if (!values)
                return;
        json_array_foreach (samples, i, s) {
                uint64_t t = (uint64_t) int_member(s, "timeUsec"), v;
                size_t k;

                if (t < first)
                        continue;
                k = (size_t) ((t - first) / step);
                if (k >= n_steps)
                        continue;
                v = get(json_object_get(s, "counters"), what);
                values[k] += v;
                total += v;
                max = MAX(max, v);
        }
        if (total == 0)
                return;
        width = style->columns > 54 ? style->columns - 46 : 8;
        line = sparkline(values, n_steps, width, style->utf8);
        if (line)
                fprintf(f, "  %-26.26s %s%s%s  max %s  total %s\n", label, on(style, BOLD), line, off(style),
                        format_count(max, a), format_count(total, b));
}

static uint64_t get_fault(json_t *counters, const void *what) {
        Faults faults;

        if (faults_from_json(json_object_get(counters, "faults"), &faults) < 0)
                return 0;
        return faults_get(&faults, what);
}

static uint64_t get_trap(json_t *counters, const void *what) {
        json_int_t v = json_integer_value(json_object_get(json_object_get(counters, "traps"), what));
        return v > 0 ? (uint64_t) v : 0;
}

static const char *vector_label(const char *key, char buf[static 48]) {
        unsigned vector;
        const char *what = trap_vector_from_name(key, &vector) >= 0 ? trap_vector_description(vector) : NULL;

        if (strcmp(key, "unknown") == 0)
                snprintf(buf, 48, "unknown vector");
        else
                snprintf(buf, 48, "#%s %s", key, what ?: "");
        return buf;
}

static void print_incarnations(FILE *f, const OutputStyle *style, json_t *process, json_t *processes) {
        size_t i;
        json_t *p;

        if (json_array_size(processes) < 2)
                return;
        fprintf(f, "%snote:%s pid %" JSON_INTEGER_FORMAT " had %zu incarnations; this is the one started at %" JSON_INTEGER_FORMAT
                   " ns after boot. Select another with --start-time:\n",
                on(style, YELLOW), off(style), int_member(process, "pid"), json_array_size(processes),
                int_member(process, "startTime"));
        json_array_foreach (processes, i, p) {
                _cleanup_free_ char *comm = untrusted_cell(style, string_member(p, "comm", "?"), 15, 15);
                char first[32], last[32];

                fprintf(f, "  %s --start-time %-18" JSON_INTEGER_FORMAT " %s %s to %s%s\n",
                        int_member(p, "startTime") == int_member(process, "startTime") ? "*" : " ",
                        int_member(p, "startTime"), comm ?: "?",
                        format_time_usec((uint64_t) int_member(p, "firstSeenUsec"), first),
                        format_time_usec((uint64_t) int_member(p, "lastSeenUsec"), last),
                        json_is_true(json_object_get(p, "exited")) ? ", exited" : ", running");
        }
}

void print_history(FILE *f, const OutputStyle *style, json_t *reply, json_t *processes, uint64_t step) {
        json_t *p = json_object_get(reply, "process"), *samples = json_object_get(reply, "samples"), *sample;
        json_t *total = json_object_get(reply, "total");
        uint64_t first_usec = (uint64_t) int_member(p, "firstSeenUsec");
        uint64_t last_usec = (uint64_t) int_member(p, "lastSeenUsec");
        _cleanup_free_ char *comm = untrusted_cell(style, string_member(p, "comm", "?"), 0, SIZE_MAX);
        _cleanup_free_ char *cmdline = untrusted_cell(style, string_member(p, "cmdline", "(unknown)"), 0, SIZE_MAX);
        _cleanup_free_ char *unit = untrusted_cell(style, string_member(p, "unit", "(none)"), 0, SIZE_MAX);
        char first[32], last[32], lifetime[32], user[32], width[32];
        size_t i, n_samples = json_array_size(samples);

        fprintf(f, "%spid %" JSON_INTEGER_FORMAT " (%s)%s, user %s (uid %" JSON_INTEGER_FORMAT "), %s\n", on(style, BOLD),
                int_member(p, "pid"), comm ?: "?", off(style), format_user((uint64_t) int_member(p, "uid"), user),
                int_member(p, "uid"), json_is_true(json_object_get(p, "exited")) ? "exited" : "running");
        fprintf(f, "command:  %s\n", cmdline ?: "?");
        fprintf(f, "unit:     %s\n", unit ?: "?");
        fprintf(f, "started:  %" JSON_INTEGER_FORMAT " ns after boot (its --start-time)\n", int_member(p, "startTime"));
        fprintf(f, "lifetime: %s to %s (%s%s)\n", format_time_usec(first_usec, first), format_time_usec(last_usec, last),
                format_duration_usec(last_usec >= first_usec ? last_usec - first_usec : 0, lifetime),
                json_is_true(json_object_get(p, "exited")) ? ", exited" : ", still running");
        print_incarnations(f, style, p, processes);

        if (step == 0)
                step = samples_step(samples);
        fprintf(f, "\ncounts per %s:\n%sTIME          %s  TRAPS%s\n", format_duration_usec(step, width), on(style, BOLD),
                faults_header, off(style));
        json_array_foreach (samples, i, sample) {
                json_t *counters = json_object_get(sample, "counters");
                char t[32], buf[16];

                fprintf(f, "%-14s", format_time_usec_short((uint64_t) int_member(sample, "timeUsec"), t));
                print_faults(f, counters);
                fprintf(f, " %6s\n", format_count(map_total(json_object_get(counters, "traps")), buf));
        }
        if (n_samples == 0)
                fprintf(f, "(no samples in this window)\n");
        {
                char buf[16];

                fprintf(f, "%s%-14s", on(style, BOLD), "total");
                print_faults(f, total);
                fprintf(f, " %6s%s\n", format_count(map_total(json_object_get(total, "traps")), buf), off(style));
        }

        /* A sparkline per non-zero counter over the whole span of the samples. */
        if (n_samples > 0) {
                uint64_t t0 = (uint64_t) int_member(json_array_get(samples, 0), "timeUsec");
                uint64_t t1 = (uint64_t) int_member(json_array_get(samples, n_samples - 1), "timeUsec");
                json_t *traps = json_object_get(total, "traps");
                _cleanup_free_ const char **keys = NULL;
                size_t n_steps, n_keys;
                Faults faults = {};
                char a[32], b[32], label[48];

                /* Bound the work for absurd spans: at most 100000 steps. */
                while ((t1 - t0) / step >= 100000)
                        step *= 10;
                n_steps = (size_t) ((t1 - t0) / step) + 1;
                fprintf(f, "\n%s to %s, one character per %s or more:\n", format_time_usec(t0, a),
                        format_time_usec(t1 + step, b), format_duration_usec(step, width));
                (void) faults_from_json(json_object_get(total, "faults"), &faults);
                for (i = 0; i < n_fault_fields; i++)
                        if (faults_get(&faults, &fault_fields[i]) > 0)
                                print_sparkline(f, style, fault_fields[i].name, samples, t0, step, n_steps, get_fault,
                                                &fault_fields[i]);
                keys = keys_by_count(traps, &n_keys);
                for (i = 0; i < n_keys; i++)
                        print_sparkline(f, style, vector_label(keys[i], label), samples, t0, step, n_steps, get_trap,
                                        keys[i]);
        }

        /* Traps by vector with their names, then by signal and si_code. */
        if (json_object_size(json_object_get(total, "traps")) > 0) {
                _cleanup_free_ const char **keys = NULL, **codes = NULL;
                json_t *signal_codes = json_object_get(total, "signalCodes");
                size_t n;
                char label[48];

                fprintf(f, "\n%straps%s\n", on(style, BOLD), off(style));
                keys = keys_by_count(json_object_get(total, "traps"), &n);
                for (i = 0; i < n; i++)
                        fprintf(f, "  %-33s %" JSON_INTEGER_FORMAT "\n", vector_label(keys[i], label),
                                json_integer_value(json_object_get(json_object_get(total, "traps"), keys[i])));
                fprintf(f, "%ssignals%s\n", on(style, BOLD), off(style));
                codes = keys_by_count(signal_codes, &n);
                for (i = 0; i < n; i++)
                        fprintf(f, "  %-33s %" JSON_INTEGER_FORMAT "\n", codes[i],
                                json_integer_value(json_object_get(signal_codes, codes[i])));
        }
}

static int compare_strings(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Sorted keys of a map, borrowed; NULL when empty. */
static const char **sorted_keys(json_t *map, size_t *ret_n) {
        const char **keys = map_keys(map, ret_n);

        if (keys)
                qsort(keys, *ret_n, sizeof(*keys), compare_strings);
        return keys;
}

void print_history_csv(FILE *f, json_t *reply) {
        json_t *total = json_object_get(reply, "total"), *samples = json_object_get(reply, "samples"), *sample;
        json_t *p = json_object_get(reply, "process");
        _cleanup_free_ const char **traps = NULL, **signals = NULL;
        size_t i, n_traps, n_signals;

        /* Columns for every vector and signal of the total, so every line has the same ones. */
        traps = sorted_keys(json_object_get(total, "traps"), &n_traps);
        signals = sorted_keys(json_object_get(total, "signals"), &n_signals);

        fputs("pid,startTime,timeUsec,time", f);
        for (i = 0; i < n_fault_fields; i++)
                fprintf(f, ",%s", fault_fields[i].name);
        fputs(",traps", f);
        for (i = 0; i < n_traps; i++) {
                fputs(",", f);
                fprintf(f, "traps.");
                csv_field(f, traps[i]);
        }
        for (i = 0; i < n_signals; i++) {
                fputs(",signals.", f);
                csv_field(f, signals[i]);
        }
        fputc('\n', f);

        json_array_foreach (samples, i, sample) {
                json_t *counters = json_object_get(sample, "counters");
                Faults faults = {};
                char t[32];

                (void) faults_from_json(json_object_get(counters, "faults"), &faults);
                fprintf(f, "%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT ",%s",
                        int_member(p, "pid"), int_member(p, "startTime"), int_member(sample, "timeUsec"),
                        format_time_iso8601((uint64_t) int_member(sample, "timeUsec"), t));
                for (size_t k = 0; k < n_fault_fields; k++)
                        fprintf(f, ",%" PRIu64, faults_get(&faults, &fault_fields[k]));
                fprintf(f, ",%" PRIu64, map_total(json_object_get(counters, "traps")));
                for (size_t k = 0; k < n_traps; k++)
                        fprintf(f, ",%" JSON_INTEGER_FORMAT, int_member(json_object_get(counters, "traps"), traps[k]));
                for (size_t k = 0; k < n_signals; k++)
                        fprintf(f, ",%" JSON_INTEGER_FORMAT, int_member(json_object_get(counters, "signals"), signals[k]));
                fputc('\n', f);
        }
}

/* Prints s (escaped text: see text_prefix), on a terminal at most *budget columns of it (not
 * splitting a character or an escape), so that a line is cut at the terminal's width as ps cuts
 * it rather than wrapped. */
static void fput_cut(FILE *f, const OutputStyle *style, const char *s, size_t *budget) {
        size_t width, n = text_prefix(s, style->tty ? *budget : SIZE_MAX, &width);

        fwrite(s, 1, n, f);
        *budget = *budget > width ? *budget - width : 0;
}

void print_processes(FILE *f, const OutputStyle *style, json_t *processes) {
        size_t i, budget = style->columns;
        json_t *p;
        int unit_width = 4; /* "UNIT"; as wide as the longest unit (escaped), up to 32 */
        char header[160];

        json_array_foreach (processes, i, p) {
                _cleanup_free_ char *unit = untrusted_cell(style, string_member(p, "unit", "-"), 0, 32);

                if (unit)
                        unit_width = MAX(unit_width, (int) text_width(unit));
        }

        /* What tells processes apart comes first: 80 columns show up to START-TIME. */
        snprintf(header, sizeof(header), "    PID COMM            USER     STATE   LAST SEEN           START-TIME        %-*s COMMAND",
                 unit_width, "UNIT");
        fputs(on(style, BOLD), f);
        fput_cut(f, style, header, &budget);
        fprintf(f, "%s\n", off(style));
        json_array_foreach (processes, i, p) {
                bool exited = json_is_true(json_object_get(p, "exited")), green;
                _cleanup_free_ char *comm = untrusted_cell(style, string_member(p, "comm", "?"), 15, 15);
                _cleanup_free_ char *unit =
                        untrusted_cell(style, string_member(p, "unit", "-"), (size_t) unit_width, (size_t) unit_width);
                _cleanup_free_ char *cmdline = untrusted_cell(style, string_member(p, "cmdline", "-"), 0, SIZE_MAX);
                char pid[32], user[32], user_column[32], tail[64], last[32];

                budget = style->columns;
                snprintf(pid, sizeof(pid), "%7" JSON_INTEGER_FORMAT " ", int_member(p, "pid"));
                snprintf(user_column, sizeof(user_column), " %-8.8s ", format_user((uint64_t) int_member(p, "uid"), user));
                snprintf(tail, sizeof(tail), " %-19s %-17" JSON_INTEGER_FORMAT " ",
                         format_time_usec((uint64_t) int_member(p, "lastSeenUsec"), last), int_member(p, "startTime"));
                fput_cut(f, style, pid, &budget);
                fput_cut(f, style, comm ?: "?", &budget);
                fput_cut(f, style, user_column, &budget);
                green = !exited && budget > 0;
                if (green)
                        fputs(on(style, GREEN), f);
                fput_cut(f, style, exited ? "exited " : "running", &budget);
                if (green)
                        fputs(off(style), f);
                fput_cut(f, style, tail, &budget);
                fput_cut(f, style, unit ?: "?", &budget);
                fput_cut(f, style, " ", &budget);
                fput_cut(f, style, cmdline ?: "?", &budget);
                fputc('\n', f);
        }
}

void print_processes_csv(FILE *f, json_t *processes) {
        size_t i;
        json_t *p;

        fputs("pid,startTime,comm,uid,unit,firstSeenUsec,lastSeenUsec,exited,cmdline\n", f);
        json_array_foreach (processes, i, p) {
                fprintf(f, "%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT ",", int_member(p, "pid"), int_member(p, "startTime"));
                csv_field(f, string_member(p, "comm", ""));
                fprintf(f, ",%" JSON_INTEGER_FORMAT ",", int_member(p, "uid"));
                csv_field(f, string_member(p, "unit", ""));
                fprintf(f, ",%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT ",%s,", int_member(p, "firstSeenUsec"),
                        int_member(p, "lastSeenUsec"), json_is_true(json_object_get(p, "exited")) ? "true" : "false");
                csv_field(f, string_member(p, "cmdline", ""));
                fputc('\n', f);
        }
}

void print_traps(FILE *f, const OutputStyle *style, json_t *reply, uint64_t window_usec) {
        json_t *traps = json_object_get(reply, "traps"), *codes = json_object_get(reply, "signalCodes");
        _cleanup_free_ const char **vectors = NULL, **code_keys = NULL;
        char window[32], label[48], buf[16];
        size_t i, n;

        fprintf(f, "traps over the last %s, %" JSON_INTEGER_FORMAT " process%s trapped\n",
                format_duration_usec(window_usec, window), int_member(reply, "processes"),
                int_member(reply, "processes") == 1 ? "" : "es");
        if (json_object_size(traps) == 0) {
                fprintf(f, "(no traps)\n");
                return;
        }
        fprintf(f, "\n%sVECTOR                               COUNT%s\n", on(style, BOLD), off(style));
        vectors = keys_by_count(traps, &n);
        for (i = 0; i < n; i++)
                fprintf(f, "%-33s %8s\n", vector_label(vectors[i], label),
                        format_count((uint64_t) int_member(traps, vectors[i]), buf));
        fprintf(f, "\n%sSIGNAL/CODE                          COUNT%s\n", on(style, BOLD), off(style));
        code_keys = keys_by_count(codes, &n);
        for (i = 0; i < n; i++)
                fprintf(f, "%-33s %8s\n", code_keys[i], format_count((uint64_t) int_member(codes, code_keys[i]), buf));
}

void print_status(FILE *f, const OutputStyle *style, json_t *reply) {
        json_t *sources = json_object_get(reply, "sources"), *s;
        char tick[32], size[16];
        size_t i;

        fprintf(f, "%strapstatd %s%s\n", on(style, BOLD), string_member(reply, "version", "?"), off(style));
        fprintf(f, "arch:      %s\n", string_member(reply, "arch", "?"));
        fprintf(f, "socket:    %s\n", arg_socket);
        fprintf(f, "tick:      %s\n", format_duration_usec((uint64_t) int_member(reply, "tickUsec"), tick));
        fprintf(f, "database:  %s (%sB)\n", string_member(reply, "databasePath", "?"),
                format_count((uint64_t) int_member(reply, "databaseBytes"), size));
        fprintf(f, "processes: %" JSON_INTEGER_FORMAT " tracked\n", int_member(reply, "processesTracked"));
        fprintf(f, "drops:     %s%" JSON_INTEGER_FORMAT "%s\n", int_member(reply, "drops") ? on(style, RED) : "",
                int_member(reply, "drops"), int_member(reply, "drops") ? off(style) : "");
        /* Each kind that happened, with what one occurrence lost. */
        json_array_foreach (json_object_get(reply, "dropsByKind"), i, s)
                if (int_member(s, "count") > 0)
                        fprintf(f, "  %-16s %s%" JSON_INTEGER_FORMAT "%s: %s\n", string_member(s, "kind", "?"),
                                on(style, RED), int_member(s, "count"), off(style), string_member(s, "lost", ""));
        if (json_object_get(reply, "unsavedSamples"))
                fprintf(f, "unsaved:   %s%" JSON_INTEGER_FORMAT "%s samples (database writes failed)\n",
                        int_member(reply, "unsavedSamples") ? on(style, RED) : "", int_member(reply, "unsavedSamples"),
                        int_member(reply, "unsavedSamples") ? off(style) : "");
        fprintf(f, "sources:\n");
        json_array_foreach (sources, i, s) {
                bool active = json_is_true(json_object_get(s, "active"));
                json_t *reason = json_object_get(s, "reason");

                fprintf(f, "  %-24s %s%s%s%s%s\n", string_member(s, "name", "?"), on(style, active ? GREEN : YELLOW),
                        active ? "active" : "inactive", off(style), json_is_string(reason) ? ": " : "",
                        json_is_string(reason) ? json_string_value(reason) : "");
        }
}

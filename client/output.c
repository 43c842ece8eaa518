/* SPDX-License-Identifier: MIT */
#include "output.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cli.h"
#include "counters.h"
#include "macro.h"
#include "sites.h"
#include "time-util.h"
#include "top-format.h"
#include "top-table.h"
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

/* Text from a process, a file or the daemon as a CSV field: exact into a file or a pipe, escaped as
 * untrusted_cell() escapes it on a terminal (style->tty). Every text field of the CSV outputs goes
 * through here. */
static void csv_text(FILE *f, const OutputStyle *style, const char *s) {
        csv_field(f, s, style->tty, style->utf8);
}

/* The columns of every CSV with process columns after pid and startTime (at the end of procs'):
 * the process's pid namespace and its container, named as the IDL names them (the container's
 * members as history's traps.UD names a map's). */
#define PROCESS_CSV_COLUMNS \
        "nsPid,pidNamespace,container.runtime,container.id,container.name,container.pod,container.user"

/* ",N": an integer member of o; "," alone where it is null or absent. */
static void csv_integer(FILE *f, json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);

        fputc(',', f);
        if (json_is_integer(v))
                fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
}

/* The values of PROCESS_CSV_COLUMNS for process p, each after a comma; empty for null. */
static void print_process_csv_columns(FILE *f, const OutputStyle *style, json_t *p) {
        static const char *const texts[] = { "runtime", "id", "name", "pod" };
        json_t *container = json_object_get(p, "container");

        csv_integer(f, p, "nsPid");
        csv_integer(f, p, "pidNamespace");
        for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                fputc(',', f);
                csv_text(f, style, json_string_value(json_object_get(container, texts[i])));
        }
        csv_integer(f, container, "user");
}

/* The cells of the Faults members of parts (format_faults_cells(): "-" where not counted). */
static void print_faults(FILE *f, json_t *counters, FaultsKnown parts) {
        char buf[FAULT_COLUMNS_SIZE];
        Faults faults;

        if (faults_from_json(json_object_get(counters, "faults"), &faults) < 0) {
                fputs(" (malformed counters)", f);
                return;
        }
        fputs(format_faults_cells(&faults, parts, buf), f);
}

/* text right-aligned in width terminal columns ("µ" is one column, two bytes), into buf. */
static const char *right_aligned(const char *text, size_t width, char *buf, size_t size) {
        size_t w = text_width(text);

        snprintf(buf, size, "%*s%s", (int) (w < width ? width - w : 0), "", text);
        return buf;
}

static void fput_right(FILE *f, const char *text, size_t width) {
        char buf[64];

        fputs(right_aligned(text, width, buf, sizeof(buf)), f);
}

/* The FaultTime of a Counters object; all zero from a daemon that sends none. */
static FaultTime counters_fault_time(json_t *counters) {
        FaultTime t = {};

        (void) fault_time_from_json(json_object_get(counters, "faultTime"), &t);
        return t;
}

/* The NSPID and CONTAINER columns the processes of a Top reply's first max_rows rows (all when
 * negative) need; of a ListProcesses reply's processes with member NULL. */
static TopLayout array_layout(const OutputStyle *style, json_t *array, const char *member, int max_rows) {
        TopLayout layout = {};
        size_t i;
        json_t *e;

        json_array_foreach (array, i, e) {
                if (max_rows >= 0 && (int) i >= max_rows)
                        break;
                top_layout_add(&layout, member ? json_object_get(e, member) : e, style->utf8);
        }
        return layout;
}

/* The NSPID cell of process p with its leading blank, "" without the column; its CONTAINER cell,
 * padded (NULL without the column, or out of memory). */
static void process_cells(const OutputStyle *style, const TopLayout *layout, json_t *p, char ns_pid[static 32],
                          char **ret_container) {
        char buf[24];

        if (layout->ns_pid)
                snprintf(ns_pid, 32, " %7s", top_ns_pid_cell(p, buf));
        else
                ns_pid[0] = '\0';
        *ret_container = NULL;
        if (layout->container_width > 0)
                (void) top_container_cell(p, style->utf8, layout->container_width, ret_container);
}

/* Whether one of a Top reply's first max_rows rows (all when negative) knows its stall. */
static bool rows_know_stall(json_t *rows, int max_rows) {
        size_t i;
        json_t *row;
        Stall s;

        json_array_foreach (rows, i, row)
                if ((max_rows < 0 || (int) i < max_rows) &&
                    top_counters_stall(json_object_get(row, "counters"), &s) >= 0)
                        return true;
        return false;
}

/* The %STALL cell of a Counters object over interval_usec: "-" where not counted (or malformed). */
static const char *stall_share_cell(json_t *counters, uint64_t interval_usec, char buf[static 16]) {
        Stall s;

        return top_format_stall_share(top_counters_stall(counters, &s) >= 0 ? &s : NULL, interval_usec, buf);
}

void print_top_table(FILE *f, const OutputStyle *style, json_t *rows, int max_rows, uint64_t window_usec,
                     const SortKey *sort) {
        TopLayout layout = array_layout(style, rows, "process", max_rows);
        char header[FAULT_COLUMNS_SIZE];
        size_t i;
        json_t *row;

        /* As the live view's: where a row knows it (zeros included), or sorted by it. */
        layout.stall = sort->what == SORT_STALL || rows_know_stall(rows, max_rows);
        fprintf(f, "%s    PID%s COMM           %s    FTIME%s  TRAPS  VECTORS          %-*s%sUNIT%s\n", on(style, BOLD),
                layout.ns_pid ? "   NSPID" : "", format_faults_header(FAULTS_KNOWN_ALL, header),
                layout.stall ? " %STALL" : "", (int) layout.container_width, layout.container_width ? "CONTAINER" : "",
                layout.container_width ? " " : "", off(style));
        json_array_foreach (rows, i, row) {
                json_t *p = json_object_get(row, "process");
                json_t *traps = json_object_get(json_object_get(row, "counters"), "traps");
                _cleanup_free_ char *comm = NULL, *unit = NULL, *container = NULL;
                char buf[16], vectors[64], ftime[16], ns_pid[32];
                FaultTime time;

                if (max_rows >= 0 && (int) i >= max_rows)
                        break;
                comm = untrusted_cell(style, string_member(p, "comm", "?"), 15, 15);
                unit = untrusted_cell(style, string_member(p, "unit", "-"), 0, SIZE_MAX);
                process_cells(style, &layout, p, ns_pid, &container);
                fprintf(f, "%7" JSON_INTEGER_FORMAT "%s %s", int_member(p, "pid"), ns_pid, comm ?: "?");
                print_faults(f, json_object_get(row, "counters"), FAULTS_KNOWN_ALL);
                /* The time the process spent waiting on faults in the window. */
                time = counters_fault_time(json_object_get(row, "counters"));
                fput_right(f, fault_time_count(&time) ? format_ns(fault_time_total_ns(&time), style->utf8, ftime) : "-", 9);
                if (layout.stall)
                        fprintf(f, " %6s", stall_share_cell(json_object_get(row, "counters"), window_usec, buf));
                format_busiest(traps, 2, 1.0, vectors, sizeof(vectors));
                fprintf(f, " %6s  %-16s %s%s%s\n", format_count(map_total(traps), buf), vectors,
                        layout.container_width ? (container ?: "?") : "", layout.container_width ? " " : "", unit ?: "?");
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

/* "pid 4242 (app), user root (uid 0), exited": the first line of history and sites. */
static void print_process_line(FILE *f, const OutputStyle *style, json_t *p) {
        _cleanup_free_ char *comm = untrusted_cell(style, string_member(p, "comm", "?"), 0, SIZE_MAX);
        char user[32];

        fprintf(f, "%spid %" JSON_INTEGER_FORMAT " (%s)%s, user %s (uid %" JSON_INTEGER_FORMAT "), %s\n", on(style, BOLD),
                int_member(p, "pid"), comm ?: "?", off(style), format_user((uint64_t) int_member(p, "uid"), user),
                int_member(p, "uid"), json_is_true(json_object_get(p, "exited")) ? "exited" : "running");
}

/* Prints s (escaped text: see text_prefix), on a terminal at most *budget columns of it (not
 * splitting a character or an escape), so that a line is cut at the terminal's width as ps cuts
 * it rather than wrapped. Once s is cut, nothing more of the line is: what is printed stays the
 * start of the whole line (a separator after a cut cell would not be). */
static void fput_cut(FILE *f, const OutputStyle *style, const char *s, size_t *budget) {
        size_t width, n = text_prefix(s, style->tty ? *budget : SIZE_MAX, &width);

        fwrite(s, 1, n, f);
        *budget = *budget > width && s[n] == '\0' ? *budget - width : 0;
}

/* On a terminal, the widest a WHERE and a MEMORY cell get, and the narrowest OBJECT gets when
 * the terminal is too narrow for the whole paths; through a pipe the cells are whole. Paths are
 * cut at the front, keeping the file's name. */
#define SITE_WHERE_MAX 32
#define SITE_MEMORY_MAX 24
#define SITE_OBJECT_MIN 16

/* The text cells of a site's row, escaped and not yet padded. */
typedef struct SiteRow {
        char *where, *memory;
        size_t object_width, where_width;
} SiteRow;

static void site_row_done(SiteRow *r) {
        free(r->where);
        free(r->memory);
}

/* WHERE: symbol+0xOFF, or the offset in the file (the address for code in no file). */
static int site_row_init(const OutputStyle *style, const SiteCount *s, size_t where_max, SiteRow *ret) {
        _cleanup_free_ char *object = NULL, *symbol = NULL;
        const char *memory = s->memory == MEMORY_NONE ? "-" :
                             s->memory == MEMORY_FILE ? (s->memory_object ?: "[file]") : memory_kind_object(s->memory);
        SiteRow r = {};
        char offset[32];

        if (escape_untrusted(s->object ?: "[unknown]", style->utf8, &object) < 0)
                return -ENOMEM;
        r.object_width = text_width(object);
        if (s->symbol) {
                snprintf(offset, sizeof(offset), "+0x%" PRIx64, s->symbol_offset);
                symbol = untrusted_cell(style, s->symbol, 0, where_max > strlen(offset) ? where_max - strlen(offset) : 1);
                if (!symbol || asprintf(&r.where, "%s%s", symbol, offset) < 0)
                        return -ENOMEM;
        } else if (asprintf(&r.where, "0x%" PRIx64, s->offset) < 0)
                return -ENOMEM;
        r.where_width = text_width(r.where);
        r.memory = untrusted_cell(style, memory ?: "?", 0, SIZE_MAX);
        if (r.memory && style->tty && text_width(r.memory) > SITE_MEMORY_MAX) {
                free(r.memory);
                r.memory = NULL;
                (void) format_path_cell(memory, style->utf8, SITE_MEMORY_MAX, &r.memory);
        }
        if (!r.memory) {
                site_row_done(&r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

/* The KIND column of a site, padded to its width. */
static const char *site_kind_column(SiteKind k) {
        return k == SITE_FAULT ? "fault " : k == SITE_MAJOR ? "major " : "trap  ";
}

/* A table of sites, each line starting with indent, with a column KIND or without. Counts in
 * human units; fault counts are estimates, marked "~" (traps and major faults are exact). Returns
 * whether any was a (sampled) fault's. */
static bool print_site_table(FILE *f, const OutputStyle *style, const SiteCount *sites, size_t n, bool with_kind,
                             const char *indent) {
        size_t where_max = style->tty ? SITE_WHERE_MAX : SIZE_MAX, memory_width = strlen("MEMORY");
        size_t object_width = strlen("OBJECT"), where_width = strlen("WHERE"), budget = style->columns;
        /* A column TIME only where there are fault or major sites: traps take no time to tell. */
        bool faults = false, time_column = false;
        /* KIND, VECTOR, COUNT, TIME and the gaps between the columns. */
        size_t fixed;
        _cleanup_free_ SiteRow *rows = calloc(n ?: 1, sizeof(SiteRow));
        _cleanup_free_ char *header = NULL;

        if (!rows)
                return false;
        for (size_t i = 0; i < n; i++)
                time_column |= site_kind_is_fault(sites[i].kind);
        fixed = strlen(indent) + (with_kind ? 6 : 0) + 8 + 7 + (time_column ? 10 : 0) + 3 * 2;
        for (size_t i = 0; i < n; i++) {
                if (site_row_init(style, &sites[i], where_max, &rows[i]) < 0) {
                        for (size_t k = 0; k < i; k++)
                                site_row_done(&rows[k]);
                        fprintf(f, "%s(out of memory)\n", indent);
                        return false;
                }
                object_width = MAX(object_width, rows[i].object_width);
                where_width = MAX(where_width, rows[i].where_width);
                memory_width = MAX(memory_width, text_width(rows[i].memory));
        }
        /* On a terminal too narrow for it all, the paths give way first: then a line is cut at
         * its width, as ps cuts it. */
        if (style->tty && fixed + object_width + where_width + memory_width > style->columns) {
                size_t rest = fixed + where_width + memory_width;

                object_width = MAX((size_t) SITE_OBJECT_MIN, style->columns > rest ? style->columns - rest : 0);
        }

        if (asprintf(&header, "%s%s%-7s %7s%s  %-*s  %-*s  MEMORY", indent, with_kind ? "KIND  " : "", "VECTOR",
                     "COUNT", time_column ? "      TIME" : "", (int) object_width, "OBJECT", (int) where_width,
                     "WHERE") >= 0) {
                fputs(on(style, BOLD), f);
                fput_cut(f, style, header, &budget);
                fprintf(f, "%s\n", off(style));
        }
        for (size_t i = 0; i < n; i++) {
                const SiteCount *s = &sites[i];
                _cleanup_free_ char *object = NULL, *line = NULL;
                char vector[24], name[16], count[24], number[16], time[32];

                /* The vector as the trap tables name it: "#UD"; "unknown" where the kernel did not say. */
                snprintf(vector, sizeof(vector), "%s%s", s->vector == TRAP_VECTOR_UNKNOWN ? "" : "#",
                         site_vector_name(s, name));
                snprintf(count, sizeof(count), "%s%s", s->kind == SITE_FAULT ? "~" : "",
                         format_count(site_count_estimated(s), number));
                /* The time of a fault site's faults, estimated as its count (a major site's is
                 * exact): "-" for traps and where faults were not timed. */
                if (!time_column)
                        time[0] = '\0';
                else if (site_kind_is_fault(s->kind) && s->time_ns > 0) {
                        char estimate[24];

                        snprintf(estimate, sizeof(estimate), "%s%s", s->kind == SITE_FAULT ? "~" : "",
                                 format_ns(site_time_estimated(s), style->utf8, number));
                        right_aligned(estimate, 10, time, sizeof(time));
                } else
                        right_aligned("-", 10, time, sizeof(time));
                faults |= s->kind == SITE_FAULT;
                budget = style->columns;
                if (format_path_cell(s->object ?: "[unknown]", style->utf8, object_width, &object) >= 0 &&
                    asprintf(&line, "%s%s%-7s %7s%s  %s  %s%*s  %s", indent,
                             with_kind ? site_kind_column(s->kind) : "", vector, count, time, object,
                             rows[i].where, (int) (where_width - rows[i].where_width), "", rows[i].memory) >= 0)
                        fput_cut(f, style, line, &budget);
                else
                        fprintf(f, "%s(out of memory)", indent);
                fputc('\n', f);
        }
        for (size_t i = 0; i < n; i++)
                site_row_done(&rows[i]);
        return faults;
}

void print_sites(FILE *f, const OutputStyle *style, json_t *process, const SiteCount *sites, size_t n) {
        uint32_t periods[8];
        size_t n_periods = 0;

        print_process_line(f, style, process);
        if (n == 0) {
                fprintf(f, "(no sites in this window)\n");
                return;
        }
        if (!print_site_table(f, style, sites, n, true, ""))
                return;

        /* The sampling behind the estimates: one period, unless trapstatd ran with another
         * --fault-sample in the window. */
        for (size_t i = 0; i < n; i++) {
                size_t k;

                if (sites[i].kind != SITE_FAULT)
                        continue;
                for (k = 0; k < n_periods && periods[k] != sites[i].period; k++)
                        ;
                if (k == n_periods && n_periods < ELEMENTSOF(periods))
                        periods[n_periods++] = sites[i].period;
        }
        fprintf(f, "~ fault counts and times are estimates: 1 in ");
        for (size_t k = 0; k < n_periods; k++)
                fprintf(f, "%s%" PRIu32, k == 0 ? "" : k + 1 == n_periods ? " or " : ", ", periods[k]);
        fprintf(f, " sampled\n");
}

void print_sites_csv(FILE *f, const OutputStyle *style, json_t *process, const SiteCount *sites, size_t n) {
        fputs("pid,startTime," PROCESS_CSV_COLUMNS ",kind,vector,object,offset,symbol,symbolOffset,count,sampled,"
              "period,estimated,memory,memoryObject,timeNs,estimatedTimeNs\n",
              f);
        for (size_t i = 0; i < n; i++) {
                const SiteCount *s = &sites[i];
                char vector[16];

                fprintf(f, "%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT, int_member(process, "pid"),
                        int_member(process, "startTime"));
                print_process_csv_columns(f, style, process);
                fprintf(f, ",%s,%s,", site_kind_name(s->kind), site_vector_name(s, vector));
                csv_text(f, style, s->object);
                fprintf(f, ",%" PRIu64 ",", s->offset);
                csv_text(f, style, s->symbol);
                fputc(',', f);
                if (s->symbol)
                        fprintf(f, "%" PRIu64, s->symbol_offset);
                /* estimated as the reply has it: clamped to a JSON integer. */
                fprintf(f, ",%" PRIu64 ",%s,%" PRIu32 ",%" PRIu64 ",%s,", s->count, s->kind == SITE_FAULT ? "true" : "false",
                        s->period, MIN(site_count_estimated(s), (uint64_t) INT64_MAX), memory_kind_name(s->memory));
                csv_text(f, style, s->memory_object);
                fprintf(f, ",%" PRIu64 ",%" PRIu64 "\n", MIN(s->time_ns, (uint64_t) INT64_MAX),
                        MIN(site_time_estimated(s), (uint64_t) INT64_MAX));
        }
}

/* One line of the fault time table: faults timed, time spent, its share of the interval (as
 * %CPU), the buckets of p50 and p99, the longest fault. */
static void print_fault_time_line(FILE *f, const OutputStyle *style, const char *label, json_t *counters,
                                  uint64_t interval_usec) {
        FaultTime t = counters_fault_time(counters);
        int p50 = fault_time_quantile_bucket(&t, 0.5), p99 = fault_time_quantile_bucket(&t, 0.99);
        char timed[16], time[16], share[16], a[24], b[24], max[16];

        fprintf(f, "%-14s %7s", label, format_count(fault_time_count(&t), timed));
        fput_right(f, format_ns(fault_time_total_ns(&t), style->utf8, time), 10);
        fprintf(f, " %7s",
                interval_usec ? format_share((double) fault_time_total_ns(&t) / 1e3 / (double) interval_usec, share)
                              : "-");
        fput_right(f, p50 >= 0 ? format_fault_bucket((unsigned) p50, style->utf8, a) : "-", 12);
        fput_right(f, p99 >= 0 ? format_fault_bucket((unsigned) p99, style->utf8, b) : "-", 12);
        fput_right(f, fault_time_count(&t) ? format_ns(t.max_ns, style->utf8, max) : "-", 10);
}

/* Fault time per sample, when any fault was timed: a second table beside the counts. */
static void print_fault_time_table(FILE *f, const OutputStyle *style, json_t *samples, json_t *total, uint64_t step) {
        FaultTime all = counters_fault_time(total);
        json_t *sample;
        char width[32];
        size_t i;

        if (fault_time_count(&all) == 0)
                return;
        fprintf(f, "\nfault time per %s (%%FAULT as %%CPU; P50, P99: buckets of the histogram):\n"
                   "%s%-14s %7s%10s %7s%12s%12s%10s%s\n",
                format_duration_usec(step, width), on(style, BOLD), "TIME", "TIMED", "TIME", "%FAULT", "P50", "P99",
                "LONGEST", off(style));
        json_array_foreach (samples, i, sample) {
                char t[32];

                print_fault_time_line(f, style, format_time_usec_short((uint64_t) int_member(sample, "timeUsec"), t),
                                      json_object_get(sample, "counters"), step);
                fputc('\n', f);
        }
        fputs(on(style, BOLD), f);
        print_fault_time_line(f, style, "total", total, 0);
        fprintf(f, "%s\n", off(style));
}

/* The times of major faults by cause in a FaultTime: columns of the major causes' table, and of
 * the CSV, in the order of Faults' causes. */
static const struct {
        const char *title, *csv;
        size_t offset;
} cause_times[] = {
        { "FILE-TIME", "majorNsByCause.file", offsetof(FaultTime, major_file_ns) },
        { "ANON-TIME", "majorNsByCause.anon", offsetof(FaultTime, major_anon_ns) },
        { "SHMEM-TIME", "majorNsByCause.shmem", offsetof(FaultTime, major_shmem_ns) },
};

static uint64_t cause_time(const FaultTime *t, size_t i) {
        return *(const uint64_t *) ((const char *) t + cause_times[i].offset);
}

/* The Faults of a Counters object, zeros when malformed (a line of its own says so). */
static Faults counters_faults(json_t *counters) {
        Faults faults = {};

        (void) faults_from_json(json_object_get(counters, "faults"), &faults);
        return faults;
}

/* Whether fault_columns[i] is a cause of major faults. */
static bool column_is_cause(size_t i) {
        const FaultField *field = fault_column_field(i);

        return field && field->part == FAULTS_KNOWN_MAJOR_CAUSE;
}

/* One line of the major causes' table: MAJOR, FILE, ANON, SHMEM ("-" where the causes were not
 * counted), with times the time of those timed ("-" likewise). */
static void print_major_cause_line(FILE *f, const OutputStyle *style, const char *label, json_t *counters, bool times) {
        Faults faults = counters_faults(counters);
        FaultTime t = counters_fault_time(counters);
        bool known = !(faults.unknown & FAULTS_KNOWN_MAJOR_CAUSE);
        char buf[16];

        fprintf(f, "%-14s %6s", label, format_count(faults.major, buf));
        for (size_t i = 0; i < n_fault_columns; i++)
                if (column_is_cause(i))
                        fprintf(f, " %6s", format_fault(&faults, fault_column_field(i), buf));
        for (size_t i = 0; times && i < ELEMENTSOF(cause_times); i++)
                fput_right(f, known ? format_ns(cause_time(&t, i), style->utf8, buf) : "-", 11);
}

/* Major faults by cause per sample, where the daemon counted them and there were any: MAJOR beside
 * them (which they can sum to less than), and where faults were timed the time of those timed.
 * A table of its own, so that the counts fit 80 columns. Where there were major faults and their
 * causes were not counted, a line says so. */
static void print_major_cause_table(FILE *f, const OutputStyle *style, json_t *samples, json_t *total, uint64_t step) {
        Faults all = counters_faults(total);
        FaultTime all_time = counters_fault_time(total);
        bool times = false;
        json_t *sample;
        char width[32];
        size_t i;

        if (all.major == 0)
                return;
        if (all.unknown & FAULTS_KNOWN_MAJOR_CAUSE) {
                fprintf(f, "\nmajor faults by cause: not counted (trapstat status says why)\n");
                return;
        }
        for (i = 0; i < ELEMENTSOF(cause_times); i++)
                times = times || cause_time(&all_time, i) > 0;
        fprintf(f, "\nmajor faults by cause per %s%s:\n%s%-14s %6s", format_duration_usec(step, width),
                times ? ", and the time of those timed" : "", on(style, BOLD), "TIME", "MAJOR");
        for (i = 0; i < n_fault_columns; i++)
                if (column_is_cause(i))
                        fprintf(f, " %6s", fault_columns[i].title);
        for (i = 0; times && i < ELEMENTSOF(cause_times); i++)
                fprintf(f, " %10s", cause_times[i].title);
        fprintf(f, "%s\n", off(style));
        json_array_foreach (samples, i, sample) {
                char t[32];

                print_major_cause_line(f, style, format_time_usec_short((uint64_t) int_member(sample, "timeUsec"), t),
                                       json_object_get(sample, "counters"), times);
                fputc('\n', f);
        }
        fputs(on(style, BOLD), f);
        print_major_cause_line(f, style, "total", total, times);
        fprintf(f, "%s\n", off(style));
}

/* The stall table's columns, by StallCause: times, as the fault time's. */
static const char *const stall_titles[_STALL_MAX] = {
        [STALL_SWAPIN] = "SWAPIN",   [STALL_THRASHING] = "THRASH", [STALL_RECLAIM] = "RECLAIM",
        [STALL_COMPACT] = "COMPACT", [STALL_BLKIO] = "BLKIO",
};

/* One line of the stall table: the time waited for each cause, then the share of interval_usec
 * waited on memory (top_format_stall_share(): "-" for the total, whose interval is 0); "-" in
 * every cell where the stall was not counted. */
static void print_stall_line(FILE *f, const OutputStyle *style, const char *label, json_t *counters,
                             uint64_t interval_usec) {
        char buf[16];
        Stall s;
        bool known = top_counters_stall(counters, &s) >= 0;

        fprintf(f, "%-14s", label);
        for (size_t i = 0; i < _STALL_MAX; i++)
                fput_right(f, known ? format_ns(s.ns[i], style->utf8, buf) : "-", 10);
        fprintf(f, " %7s", top_format_stall_share(known ? &s : NULL, interval_usec, buf));
}

/* What the process waited for per sample, where the total knows it (the kernel's delay
 * accounting: null while the kernel keeps none, and an older daemon sends none; then nothing is
 * said, as the daemon's status says why): the time of each cause and %STALL, the share waited on
 * memory (all but BLKIO), as %CPU. A table of its own, so that the counts fit 80 columns; one
 * line where nothing waited, not a table of zeros. */
static void print_stall_table(FILE *f, const OutputStyle *style, json_t *samples, json_t *total, uint64_t step) {
        json_t *sample;
        char width[32];
        size_t i;
        Stall all;

        if (top_counters_stall(total, &all) < 0)
                return;
        if (stall_is_zero(&all)) {
                fprintf(f, "\nstall (the kernel's delay accounting): no waits\n");
                return;
        }
        fprintf(f, "\nstall per %s (delay accounting; %%STALL: memory, all but BLKIO, as %%CPU):\n%s%-14s",
                format_duration_usec(step, width), on(style, BOLD), "TIME");
        for (i = 0; i < _STALL_MAX; i++)
                fprintf(f, "%10s", stall_titles[i]);
        fprintf(f, " %7s%s\n", "%STALL", off(style));
        json_array_foreach (samples, i, sample) {
                char t[32];

                print_stall_line(f, style, format_time_usec_short((uint64_t) int_member(sample, "timeUsec"), t),
                                 json_object_get(sample, "counters"), step);
                fputc('\n', f);
        }
        fputs(on(style, BOLD), f);
        print_stall_line(f, style, "total", total, 0);
        fprintf(f, "%s\n", off(style));
}

/* The distribution of fault times as bars, from the first bucket with faults to the last, the
 * buckets of p50, p99 and the longest fault marked. */
static void print_fault_histogram(FILE *f, const OutputStyle *style, json_t *total) {
        enum { BAR = 40 };
        FaultTime t = counters_fault_time(total);
        uint64_t n = fault_time_count(&t), most = 0;
        int p50 = fault_time_quantile_bucket(&t, 0.5), p99 = fault_time_quantile_bucket(&t, 0.99);
        int max = t.max_ns ? (int) fault_time_bucket_of(t.max_ns) : -1, first = -1, last = -1;
        char time[16], longest[16], range[24];

        fprintf(f, "\n%sfault time%s ", on(style, BOLD), off(style));
        if (n == 0) {
                fprintf(f, "(no fault timed)\n");
                return;
        }
        for (int i = 0; i < FAULT_TIME_BUCKETS; i++)
                if (t.histogram[i]) {
                        first = first < 0 ? i : first;
                        last = i;
                        most = MAX(most, t.histogram[i]);
                }
        fprintf(f, "%s in %" PRIu64 " fault%s timed; longest %s\n", format_ns(fault_time_total_ns(&t), style->utf8, time),
                n, n == 1 ? "" : "s", format_ns(t.max_ns, style->utf8, longest));
        for (int i = first; i <= MAX(last, max); i++) {
                /* At least one cell for a bucket with faults: a single slow fault stays visible. */
                size_t cells = t.histogram[i] ? (size_t) MAX((uint64_t) 1, t.histogram[i] * BAR / most) : 0;

                fput_right(f, format_fault_bucket((unsigned) i, style->utf8, range), 13);
                fprintf(f, " %10" PRIu64 " ", t.histogram[i]);
                for (size_t k = 0; k < cells; k++)
                        fputs(style->utf8 ? "█" : "#", f);
                fprintf(f, "%*s%s%s%s\n", (int) (BAR - cells), "", i == p50 ? " p50" : "", i == p99 ? " p99" : "",
                        i == max ? " max" : "");
        }
}

/* A sparkline per non-zero counter over the whole span of the samples (at least one): the
 * Faults members in the tables' order, then the trap vectors, most first. */
static void print_sparklines(FILE *f, const OutputStyle *style, json_t *samples, json_t *total, uint64_t step) {
        uint64_t t0 = (uint64_t) int_member(json_array_get(samples, 0), "timeUsec");
        uint64_t t1 = (uint64_t) int_member(json_array_get(samples, json_array_size(samples) - 1), "timeUsec");
        _cleanup_free_ const char **keys = NULL;
        size_t n_steps, n_keys;
        Faults faults = counters_faults(total);
        char a[32], b[32], width[32], label[48];

        /* Bound the work for absurd spans: at most 100000 steps. */
        while ((t1 - t0) / step >= 100000)
                step *= 10;
        n_steps = (size_t) ((t1 - t0) / step) + 1;
        fprintf(f, "\n%s to %s, one character per %s or more:\n", format_time_usec(t0, a),
                format_time_usec(t1 + step, b), format_duration_usec(step, width));
        for (size_t i = 0; i < n_fault_columns; i++) {
                const FaultField *field = fault_column_field(i);

                /* Named as JSON and CSV name it: "user", "majorByCause.file". */
                if (field && faults_get(&faults, field) > 0)
                        print_sparkline(f, style, field->csv, samples, t0, step, n_steps, get_fault, field);
        }
        keys = map_keys_by_count(json_object_get(total, "traps"), &n_keys);
        for (size_t i = 0; i < n_keys; i++)
                print_sparkline(f, style, vector_label(keys[i], label), samples, t0, step, n_steps, get_trap, keys[i]);
}

/* Traps by vector with their names, then by signal and si_code. */
static void print_trap_lists(FILE *f, const OutputStyle *style, json_t *total) {
        _cleanup_free_ const char **keys = NULL, **codes = NULL;
        json_t *traps = json_object_get(total, "traps"), *signal_codes = json_object_get(total, "signalCodes");
        char label[48];
        size_t n;

        if (json_object_size(traps) == 0)
                return;
        fprintf(f, "\n%straps%s\n", on(style, BOLD), off(style));
        keys = map_keys_by_count(traps, &n);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "  %-33s %" JSON_INTEGER_FORMAT "\n", vector_label(keys[i], label),
                        json_integer_value(json_object_get(traps, keys[i])));
        fprintf(f, "%ssignals%s\n", on(style, BOLD), off(style));
        codes = map_keys_by_count(signal_codes, &n);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "  %-33s %" JSON_INTEGER_FORMAT "\n", codes[i],
                        json_integer_value(json_object_get(signal_codes, codes[i])));
}

/* What history prints after its header, of a History, UnitHistory or ContainerHistory reply: one
 * line per sample, the totals, the fault time, a sparkline per non-zero counter, the traps by
 * vector and by signal. */
static void print_samples(FILE *f, const OutputStyle *style, json_t *reply, uint64_t step, bool histogram) {
        json_t *samples = json_object_get(reply, "samples"), *sample, *total = json_object_get(reply, "total");
        char width[32], header[FAULT_COLUMNS_SIZE], buf[16];
        size_t i;

        if (step == 0)
                step = samples_step(samples);
        fprintf(f, "\ncounts per %s:\n%sTIME          %s  TRAPS%s\n", format_duration_usec(step, width), on(style, BOLD),
                format_faults_header(FAULTS_KNOWN_ACCESS, header), off(style));
        json_array_foreach (samples, i, sample) {
                json_t *counters = json_object_get(sample, "counters");
                char t[32];

                fprintf(f, "%-14s", format_time_usec_short((uint64_t) int_member(sample, "timeUsec"), t));
                print_faults(f, counters, FAULTS_KNOWN_ACCESS);
                fprintf(f, " %6s\n", format_count(map_total(json_object_get(counters, "traps")), buf));
        }
        if (json_array_size(samples) == 0)
                fprintf(f, "(no samples in this window)\n");
        fprintf(f, "%s%-14s", on(style, BOLD), "total");
        print_faults(f, total, FAULTS_KNOWN_ACCESS);
        fprintf(f, " %6s%s\n", format_count(map_total(json_object_get(total, "traps")), buf), off(style));

        print_major_cause_table(f, style, samples, total, step);
        print_fault_time_table(f, style, samples, total, step);
        if (histogram)
                print_fault_histogram(f, style, total);
        print_stall_table(f, style, samples, total, step);
        if (json_array_size(samples) > 0)
                print_sparklines(f, style, samples, total, step);
        print_trap_lists(f, style, total);
}

/* A container as history names it: its key, then what the IDL says of it, escaped:
 * "web (machined, id web)", "docker:0123456789ab (docker, id 0123...ef, pod ..., user 1000)". */
static char *container_description(const OutputStyle *style, json_t *c) {
        _cleanup_free_ char *key = top_container_key(c), *text = NULL;
        json_t *user = json_object_get(c, "user");
        char uid[32] = "";

        if (!key)
                return NULL;
        if (json_is_integer(user))
                snprintf(uid, sizeof(uid), ", user %" JSON_INTEGER_FORMAT, json_integer_value(user));
        if (asprintf(&text, "%s (%s, id %s%s%s%s)", key, string_member(c, "runtime", "?"), string_member(c, "id", "?"),
                     json_is_string(json_object_get(c, "pod")) ? ", pod " : "", string_member(c, "pod", ""), uid) < 0)
                return NULL;
        return untrusted_cell(style, text, 0, SIZE_MAX);
}

/* The header's lines of where the process ran, when not simply on the host: its pid in its own
 * pid namespace where that differs, and its container. */
static void print_process_place(FILE *f, const OutputStyle *style, json_t *p) {
        json_t *c = json_object_get(p, "container");

        if (top_process_has_ns_pid(p)) {
                fprintf(f, "nspid:    %" JSON_INTEGER_FORMAT, int_member(p, "nsPid"));
                if (json_is_integer(json_object_get(p, "pidNamespace")))
                        fprintf(f, " (pid namespace %" JSON_INTEGER_FORMAT ")", int_member(p, "pidNamespace"));
                fputc('\n', f);
        }
        if (json_is_object(c)) {
                _cleanup_free_ char *description = container_description(style, c);

                fprintf(f, "container: %s\n", description ?: "?");
        }
}

void print_history(FILE *f, const OutputStyle *style, json_t *reply, json_t *processes, uint64_t step, bool histogram,
                   const SiteCount *trap_sites, size_t n_trap_sites) {
        json_t *p = json_object_get(reply, "process");
        uint64_t first_usec = (uint64_t) int_member(p, "firstSeenUsec");
        uint64_t last_usec = (uint64_t) int_member(p, "lastSeenUsec");
        _cleanup_free_ char *cmdline = untrusted_cell(style, string_member(p, "cmdline", "(unknown)"), 0, SIZE_MAX);
        _cleanup_free_ char *unit = untrusted_cell(style, string_member(p, "unit", "(none)"), 0, SIZE_MAX);
        char first[32], last[32], lifetime[32];

        print_process_line(f, style, p);
        fprintf(f, "command:  %s\n", cmdline ?: "?");
        fprintf(f, "unit:     %s\n", unit ?: "?");
        print_process_place(f, style, p);
        fprintf(f, "started:  %" JSON_INTEGER_FORMAT " ns after boot (its --start-time)\n", int_member(p, "startTime"));
        fprintf(f, "lifetime: %s to %s (%s%s)\n", format_time_usec(first_usec, first), format_time_usec(last_usec, last),
                format_duration_usec(last_usec >= first_usec ? last_usec - first_usec : 0, lifetime),
                json_is_true(json_object_get(p, "exited")) ? ", exited" : ", still running");
        print_incarnations(f, style, p, processes);

        print_samples(f, style, reply, step, histogram);

        /* Where it trapped most (trapstat sites PID --traps has them all). */
        if (n_trap_sites > 0) {
                fprintf(f, "\n%stop 3 trap sites%s\n", on(style, BOLD), off(style));
                (void) print_site_table(f, style, trap_sites, n_trap_sites, false, "  ");
        }
}

void print_unit_history(FILE *f, const OutputStyle *style, json_t *reply, uint64_t step, bool histogram) {
        json_t *units = json_object_get(reply, "units"), *unit;
        json_int_t processes = int_member(reply, "processes");
        size_t i;

        fprintf(f, "%sunit%s ", on(style, BOLD), json_array_size(units) == 1 ? "" : "s");
        json_array_foreach (units, i, unit) {
                _cleanup_free_ char *name = untrusted_cell(style, json_string_value(unit) ?: "?", 0, SIZE_MAX);

                fprintf(f, "%s%s", i ? ", " : "", name ?: "?");
        }
        fprintf(f, "%s: %" JSON_INTEGER_FORMAT " process%s, %" JSON_INTEGER_FORMAT " running\n", off(style), processes,
                processes == 1 ? "" : "es", int_member(reply, "running"));
        print_samples(f, style, reply, step, histogram);
}

void print_container_history(FILE *f, const OutputStyle *style, json_t *reply, uint64_t step, bool histogram) {
        json_t *containers = json_object_get(reply, "containers"), *c;
        json_int_t processes = int_member(reply, "processes");
        size_t i;

        fprintf(f, "%scontainer%s ", on(style, BOLD), json_array_size(containers) == 1 ? "" : "s");
        json_array_foreach (containers, i, c) {
                _cleanup_free_ char *description = container_description(style, c);

                fprintf(f, "%s%s", i ? ", " : "", description ?: "?");
        }
        fprintf(f, "%s: %" JSON_INTEGER_FORMAT " process%s, %" JSON_INTEGER_FORMAT " running\n", off(style), processes,
                processes == 1 ? "" : "es", int_member(reply, "running"));
        print_samples(f, style, reply, step, histogram);
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

/* The fault time columns of a sample: minorNs, majorNs, kernelNs, maxNs, faultsTimed and the
 * major faults' time by cause, empty where the causes were not counted (as their counts are). */
static void print_fault_time_csv(FILE *f, json_t *counters) {
        FaultTime t = counters_fault_time(counters);
        bool causes = !(counters_faults(counters).unknown & FAULTS_KNOWN_MAJOR_CAUSE);

        fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, t.minor_ns, t.major_ns, t.kernel_ns,
                t.max_ns, fault_time_count(&t));
        for (size_t i = 0; i < ELEMENTSOF(cause_times); i++)
                if (causes)
                        fprintf(f, ",%" PRIu64, cause_time(&t, i));
                else
                        fputc(',', f);
}

/* The stall's columns: its members as the IDL names them, stall.swapinNs to stall.blkioCount;
 * their values in a sample, empty where not counted (as the causes' counts are). */
static void print_stall_csv_header(FILE *f) {
        for (size_t i = 0; i < _STALL_MAX; i++)
                fprintf(f, ",stall.%s,stall.%s", stall_ns_members[i], stall_count_members[i]);
}

static void print_stall_csv(FILE *f, json_t *counters) {
        Stall s;
        bool known = top_counters_stall(counters, &s) >= 0;

        for (size_t i = 0; i < _STALL_MAX; i++)
                if (known)
                        fprintf(f, ",%" PRIu64 ",%" PRIu64, s.ns[i], s.count[i]);
                else
                        fputs(",,", f);
}

void print_history_csv(FILE *f, const OutputStyle *style, json_t *reply) {
        json_t *total = json_object_get(reply, "total"), *samples = json_object_get(reply, "samples"), *sample;
        json_t *p = json_object_get(reply, "process");
        _cleanup_free_ const char **traps = NULL, **signals = NULL;
        size_t i, n_traps, n_signals;

        /* Columns for every vector and signal of the total, so every line has the same ones. */
        traps = sorted_keys(json_object_get(total, "traps"), &n_traps);
        signals = sorted_keys(json_object_get(total, "signals"), &n_signals);

        /* A UnitHistory or ContainerHistory reply has no process: its lines are sums over the
         * units' or the containers'. */
        fputs(p ? "pid,startTime," PROCESS_CSV_COLUMNS ",timeUsec,time" : "timeUsec,time", f);
        for (i = 0; i < n_fault_fields; i++)
                fprintf(f, ",%s", fault_fields[i].csv);
        fputs(",traps,minorNs,majorNs,kernelNs,maxNs,faultsTimed", f);
        for (i = 0; i < ELEMENTSOF(cause_times); i++)
                fprintf(f, ",%s", cause_times[i].csv);
        print_stall_csv_header(f);
        for (i = 0; i < n_traps; i++) {
                fputs(",traps.", f);
                csv_text(f, style, traps[i]);
        }
        for (i = 0; i < n_signals; i++) {
                fputs(",signals.", f);
                csv_text(f, style, signals[i]);
        }
        fputc('\n', f);

        json_array_foreach (samples, i, sample) {
                json_t *counters = json_object_get(sample, "counters");
                Faults faults = {};
                char t[32];

                (void) faults_from_json(json_object_get(counters, "faults"), &faults);
                if (p) {
                        fprintf(f, "%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT, int_member(p, "pid"),
                                int_member(p, "startTime"));
                        print_process_csv_columns(f, style, p);
                        fputc(',', f);
                }
                fprintf(f, "%" JSON_INTEGER_FORMAT ",%s", int_member(sample, "timeUsec"),
                        format_time_iso8601((uint64_t) int_member(sample, "timeUsec"), t));
                /* A member not counted is an empty field, not 0. */
                for (size_t k = 0; k < n_fault_fields; k++)
                        if (!faults_field_known(&faults, &fault_fields[k], FAULTS_KNOWN_ALL))
                                fputc(',', f);
                        else
                                fprintf(f, ",%" PRIu64, faults_get(&faults, &fault_fields[k]));
                fprintf(f, ",%" PRIu64, map_total(json_object_get(counters, "traps")));
                print_fault_time_csv(f, counters);
                print_stall_csv(f, counters);
                for (size_t k = 0; k < n_traps; k++)
                        fprintf(f, ",%" JSON_INTEGER_FORMAT, int_member(json_object_get(counters, "traps"), traps[k]));
                for (size_t k = 0; k < n_signals; k++)
                        fprintf(f, ",%" JSON_INTEGER_FORMAT, int_member(json_object_get(counters, "signals"), signals[k]));
                fputc('\n', f);
        }
}

void print_cut_note(FILE *f, json_t *reply, const char *other, size_t shown, const char *what, const char *narrow,
                    long long limit, long long max) {
        json_int_t left_out = int_member(reply, other);

        if (left_out <= 0)
                return;
        fprintf(f, "trapstat: %zu of %" JSON_INTEGER_FORMAT " %s shown; narrow with %s", shown,
                (json_int_t) shown + left_out, what, narrow);
        if (limit < max)
                fprintf(f, " or raise --limit (at most %lld)", max);
        fputc('\n', f);
}

/* One line of procs: what print_processes() says, cut at the terminal's width. */
static void print_process_row(FILE *f, const OutputStyle *style, const TopLayout *layout, int unit_width, json_t *p) {
        bool exited = json_is_true(json_object_get(p, "exited")), green;
        _cleanup_free_ char *comm = untrusted_cell(style, string_member(p, "comm", "?"), 15, 15);
        _cleanup_free_ char *unit =
                untrusted_cell(style, string_member(p, "unit", "-"), (size_t) unit_width, (size_t) unit_width);
        _cleanup_free_ char *cmdline = untrusted_cell(style, string_member(p, "cmdline", "-"), 0, SIZE_MAX);
        _cleanup_free_ char *container = NULL;
        char pid[48], ns_pid[32], user[32], user_column[32], tail[64], last[32];
        size_t budget = style->columns;

        process_cells(style, layout, p, ns_pid, &container);
        snprintf(pid, sizeof(pid), "%7" JSON_INTEGER_FORMAT "%s ", int_member(p, "pid"), ns_pid);
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
        fput_cut(f, style, container ?: "?", &budget);
        fput_cut(f, style, " ", &budget);
        fput_cut(f, style, unit ?: "?", &budget);
        fput_cut(f, style, " ", &budget);
        fput_cut(f, style, cmdline ?: "?", &budget);
        fputc('\n', f);
}

void print_processes(FILE *f, const OutputStyle *style, json_t *processes) {
        TopLayout layout = array_layout(style, processes, NULL, -1);
        size_t i, budget = style->columns;
        json_t *p;
        int unit_width = 4; /* "UNIT"; as wide as the longest unit (escaped), up to 32 */
        char header[256];

        json_array_foreach (processes, i, p) {
                _cleanup_free_ char *unit = untrusted_cell(style, string_member(p, "unit", "-"), 0, 32);

                if (unit)
                        unit_width = MAX(unit_width, (int) text_width(unit));
        }
        /* Always a CONTAINER column, "-" for a process in none: procs lists what tells processes
         * apart. */
        layout.container_width = MAX(layout.container_width, strlen("CONTAINER"));

        /* What tells processes apart comes first: 80 columns show up to START-TIME (without NSPID). */
        snprintf(header, sizeof(header),
                 "    PID%s COMM            USER     STATE   LAST SEEN           START-TIME        %-*s %-*s COMMAND",
                 layout.ns_pid ? "   NSPID" : "", (int) layout.container_width, "CONTAINER", unit_width, "UNIT");
        fputs(on(style, BOLD), f);
        fput_cut(f, style, header, &budget);
        fprintf(f, "%s\n", off(style));
        json_array_foreach (processes, i, p)
                print_process_row(f, style, &layout, unit_width, p);
}

void print_processes_csv(FILE *f, const OutputStyle *style, json_t *processes) {
        size_t i;
        json_t *p;

        fputs("pid,startTime,comm,uid,unit,firstSeenUsec,lastSeenUsec,exited,cmdline," PROCESS_CSV_COLUMNS "\n", f);
        json_array_foreach (processes, i, p) {
                fprintf(f, "%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT ",", int_member(p, "pid"), int_member(p, "startTime"));
                csv_text(f, style, string_member(p, "comm", ""));
                fprintf(f, ",%" JSON_INTEGER_FORMAT ",", int_member(p, "uid"));
                csv_text(f, style, string_member(p, "unit", ""));
                fprintf(f, ",%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT ",%s,", int_member(p, "firstSeenUsec"),
                        int_member(p, "lastSeenUsec"), json_is_true(json_object_get(p, "exited")) ? "true" : "false");
                csv_text(f, style, string_member(p, "cmdline", ""));
                print_process_csv_columns(f, style, p);
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
        vectors = map_keys_by_count(traps, &n);
        for (i = 0; i < n; i++)
                fprintf(f, "%-33s %8s\n", vector_label(vectors[i], label),
                        format_count((uint64_t) int_member(traps, vectors[i]), buf));
        fprintf(f, "\n%sSIGNAL/CODE                          COUNT%s\n", on(style, BOLD), off(style));
        code_keys = map_keys_by_count(codes, &n);
        for (i = 0; i < n; i++)
                fprintf(f, "%-33s %8s\n", code_keys[i], format_count((uint64_t) int_member(codes, code_keys[i]), buf));
}

/* "title:" and a line per source (or feature): active, or inactive with its reason. */
static void print_sources(FILE *f, const OutputStyle *style, const char *title, json_t *list) {
        json_t *s;
        size_t i;

        fprintf(f, "%s:\n", title);
        json_array_foreach (list, i, s) {
                bool active = json_is_true(json_object_get(s, "active"));
                json_t *reason = json_object_get(s, "reason");

                fprintf(f, "  %-24s %s%s%s%s%s\n", string_member(s, "name", "?"), on(style, active ? GREEN : YELLOW),
                        active ? "active" : "inactive", off(style), json_is_string(reason) ? ": " : "",
                        json_is_string(reason) ? json_string_value(reason) : "");
        }
}

/* The callback of GetStatus's loopTurns whose turn took longest; NULL when none is listed or its
 * name is not a plain identifier (printed as is). */
static const char *longest_turn_where(json_t *turns) {
        const char *where = NULL;
        json_int_t longest = -1;
        size_t i;
        json_t *t;

        json_array_foreach(turns, i, t) {
                const char *w = json_string_value(json_object_get(t, "where"));

                if (w && int_member(t, "longestUsec") > longest) {
                        longest = int_member(t, "longestUsec");
                        where = w;
                }
        }
        if (!where || where[0] == '\0' || strspn(where, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(where) ||
            strlen(where) > 64)
                return NULL;
        return where;
}

void print_status(FILE *f, const OutputStyle *style, json_t *reply) {
        json_t *s;
        char tick[32], size[16];
        size_t i;

        fprintf(f, "%strapstatd %s%s\n", on(style, BOLD), string_member(reply, "version", "?"), off(style));
        fprintf(f, "arch:      %s\n", string_member(reply, "arch", "?"));
        if (json_is_string(json_object_get(reply, "kernel")))
                fprintf(f, "kernel:    %s, BPF object %s\n", string_member(reply, "kernel", "?"),
                        string_member(reply, "bpfObject", "?"));
        fprintf(f, "socket:    %s\n", arg_socket);
        fprintf(f, "tick:      %s\n", format_duration_usec((uint64_t) int_member(reply, "tickUsec"), tick));
        fprintf(f, "database:  %s (%sB)\n", string_member(reply, "databasePath", "?"),
                format_count((uint64_t) int_member(reply, "databaseBytes"), size));
        fprintf(f, "processes: %" JSON_INTEGER_FORMAT " tracked", int_member(reply, "processesTracked"));
        if (json_is_integer(json_object_get(reply, "tickRecordsRead")))
                fprintf(f, "; the last tick read %" JSON_INTEGER_FORMAT " records from the kernel",
                        int_member(reply, "tickRecordsRead"));
        if (json_is_integer(json_object_get(reply, "slotsTaken")))
                fprintf(f, "; %" JSON_INTEGER_FORMAT " slots taken from idle owners",
                        int_member(reply, "slotsTaken"));
        fputc('\n', f);
        if (json_is_integer(json_object_get(reply, "faultSamplePeriod"))) {
                if (int_member(reply, "faultSamplePeriod") > 0)
                        fprintf(f, "sites:     every trap; 1 in %" JSON_INTEGER_FORMAT " page faults sampled\n",
                                int_member(reply, "faultSamplePeriod"));
                else
                        fprintf(f, "sites:     every trap; page faults not sampled (trapstatd --fault-sample 0)\n");
        }
        if (json_is_integer(json_object_get(reply, "loopLongestTurnUsec"))) {
                const char *where = longest_turn_where(json_object_get(reply, "loopTurns"));

                fprintf(f, "loop:      longest turn %.1f ms%s%s%s, %" JSON_INTEGER_FORMAT " over 5 ms\n",
                        (double) int_member(reply, "loopLongestTurnUsec") / 1000, where ? " (" : "", where ?: "",
                        where ? ")" : "", int_member(reply, "loopSlowTurns"));
        }
        if (json_is_integer(json_object_get(reply, "writerLongestStepUsec")))
                fprintf(f, "writer:    %" JSON_INTEGER_FORMAT " ticks waiting, longest step %.1f ms; %.1f s writing ticks, "
                           "%.1f s maintaining since start\n",
                        int_member(reply, "writerQueuedTicks"), (double) int_member(reply, "writerLongestStepUsec") / 1000,
                        (double) int_member(reply, "writerWriteUsec") / 1e6,
                        (double) int_member(reply, "writerMaintainUsec") / 1e6);
        fprintf(f, "drops:     %s%" JSON_INTEGER_FORMAT "%s\n", int_member(reply, "drops") ? on(style, RED) : "",
                int_member(reply, "drops"), int_member(reply, "drops") ? off(style) : "");
        /* Each kind that happened, with what one occurrence lost. */
        json_array_foreach (json_object_get(reply, "dropsByKind"), i, s)
                if (int_member(s, "count") > 0)
                        fprintf(f, "  %-16s %s%" JSON_INTEGER_FORMAT "%s: %s\n", string_member(s, "kind", "?"),
                                on(style, RED), int_member(s, "count"), off(style), string_member(s, "lost", ""));
        /* Whose processes lost what: "uid 1000: fault_map_full 12, trap_map_full 1". */
        json_array_foreach (json_object_get(reply, "dropsByUser"), i, s) {
                json_t *k;
                size_t j;

                fprintf(f, "  uid %-12" JSON_INTEGER_FORMAT, int_member(s, "uid"));
                json_array_foreach (json_object_get(s, "dropsByKind"), j, k)
                        fprintf(f, "%s%s %s%" JSON_INTEGER_FORMAT "%s", j ? ", " : " ", string_member(k, "kind", "?"),
                                on(style, RED), int_member(k, "count"), off(style));
                fputc('\n', f);
        }
        if (json_object_get(reply, "unsavedSamples"))
                fprintf(f, "unsaved:   %s%" JSON_INTEGER_FORMAT "%s samples (database writes failed)\n",
                        int_member(reply, "unsavedSamples") ? on(style, RED) : "", int_member(reply, "unsavedSamples"),
                        int_member(reply, "unsavedSamples") ? off(style) : "");
        print_sources(f, style, "sources", json_object_get(reply, "sources"));
        /* What the kernel's BPF capabilities allow beyond the counts (a daemon before them has none). */
        if (json_is_array(json_object_get(reply, "features")))
                print_sources(f, style, "features", json_object_get(reply, "features"));
}

/* SPDX-License-Identifier: MIT */
/* trapstat top: options, batch mode and the stream; the live view is top-live.c.
 *
 *   live (a terminal, no -b):  the rows of the last --window from Top, then Watch; rates per
 *                              second over each refresh (every tick, or ticks summed over -d)
 *                              and totals since the view started; rows stay (top-table.h).
 *   -b:                        Top over the last --window (default 60s) every -d (default 2s):
 *                              the first table comes at once and shows processes that exited
 *                              within the window, like top -b shows the current state.
 *   -b --stream:               Watch ticks summed over -d, as rates, like top -b -d.
 *   --json:                    the replies themselves, one per line: Watch per tick, or with -b
 *                              the Top reply per iteration.
 * Filters (-p, -u, --unit, --comm, --container) are the daemon's (Top's and Watch's members);
 * grouping (--by, g) is done here over the rows. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "counters.h"
#include "json-util.h"
#include "output.h"
#include "time-util.h"
#include "top-common.h"
#include "top-live.h"
#include "top.h"

/* Rows asked of each Watch tick with -b --stream when --limit does not say: every process that
 * matters in a table summed over several ticks. */
#define STREAM_LIMIT 1000

static const char *const top_usage =
        "Usage: trapstat top [-b [--stream]] [-n N] [-d SECONDS] [--window DURATION] [--sort FIELD] [--limit N]\n"
        "                    [-p PID[,PID...]] [-u USER] [--unit NAME] [--comm GLOB] [--container NAME|ID]\n"
        "                    [--by unit|comm|user|container] [--reconnect-timeout DURATION]";

/* Prints t as a table: rates of the last refresh (the stream), with the totals beside them. */
static int print_rate_table(const TopTable *t, const TopOptions *o, const OutputStyle *style) {
        TopRow *rows = NULL;
        TopLayout layout;
        char line[1024];
        size_t n = 0;
        int x, r = 0;

        if (top_table_view(t, &PROCESS_FILTER_NONE, o->group, &o->sort, &rows, &n) < 0)
                return -ENOMEM;
        /* The columns of the rows printed, not of those beyond --limit. */
        top_rows_layout(rows, o->limit_set ? MIN(n, (size_t) o->limit) : n, o->group, &o->sort, style->utf8, &layout);
        top_format_summary(line, sizeof(line), t);
        printf("%s\n", line);
        top_format_header(line, sizeof(line), &o->sort, o->group, &layout, false, &x);
        printf("%s%s%s\n", style->color ? "\033[1m" : "", line, style->color ? "\033[0m" : "");
        for (size_t i = 0; i < n && (!o->limit_set || (long long) i < o->limit); i++) {
                _cleanup_free_ char *row = NULL;

                r = top_format_row(&rows[i], o->group, &layout, t->interval_usec, rows[i].exited ? 'X' : ' ',
                                   style->utf8, &row);
                if (r < 0)
                        break;
                printf("%s\n", row);
        }
        top_rows_free(rows, n);
        return r;
}

/* Waits until the daemon answers again, or the reconnect timeout passed since gone_usec.
 * 0 when it is back (in *ret), or a negative errno, reported. */
static int stream_reconnect(const TopOptions *o, uint64_t gone_usec, unsigned limit, TrapstatClient **ret) {
        for (;;) {
                struct timespec ts = { .tv_sec = 1 };
                int r;

                r = top_watch_open(&o->sort, &o->filter, limit, CALL_TIMEOUT_USEC, ret);
                if (r >= 0)
                        return 0;
                if (o->reconnect_timeout_usec != RECONNECT_NEVER &&
                    now_usec(CLOCK_MONOTONIC) - gone_usec >= o->reconnect_timeout_usec) {
                        char span[32];

                        return report_errno(r, "trapstatd went away and did not come back within %s (--reconnect-timeout)",
                                            format_duration_usec(o->reconnect_timeout_usec, span));
                }
                nanosleep(&ts, NULL);
        }
}

/* The stream of -b --stream and live --json: its connection, and the table summing its ticks. */
typedef struct Stream {
        const TopOptions *o;
        OutputStyle style;
        unsigned limit; /* rows asked of each tick */
        TrapstatClient *c;
        TopTable table;
        long long printed; /* tables, or replies with --json */
} Stream;

/* The stream ended, or the daemon went away: wait for it as --reconnect-timeout says. 0 when it
 * is back, or EXIT_FAILURE reported. */
static int stream_lost(Stream *s) {
        s->c = trapstat_client_free(s->c);
        if (s->o->reconnect_timeout_usec == 0)
                return fail("trapstatd closed the Watch stream (did it stop? see journalctl -u trapstatd)");
        fprintf(stderr, "trapstat: trapstatd went away; reconnecting\n");
        return stream_reconnect(s->o, now_usec(CLOCK_MONOTONIC), s->limit, &s->c) < 0 ? EXIT_FAILURE : 0;
}

/* Prints the ticks summed since the last table as rates, and starts the next table. 0, or
 * EXIT_FAILURE reported. */
static int stream_print_table(Stream *s) {
        const TopOptions *o = s->o;
        TopTable *t = &s->table;
        char now[32], span[32];

        top_table_refresh(t, t->time_usec);
        printf("%strapstat top - %s - rates over %s (%u tick%s), sorted by %s%s%s\n", s->printed ? "\n" : "",
               format_time_usec(t->time_usec, now), format_duration_usec(t->interval_usec, span), t->ticks,
               t->ticks == 1 ? "" : "s", o->sort.name, o->group != TOP_GROUP_PROCESS ? ", by " : "",
               o->group != TOP_GROUP_PROCESS ? top_group_name(o->group) : "");
        if (print_rate_table(t, o, &s->style) < 0)
                return fail("out of memory");
        if (fflush(stdout) != 0)
                return fail("writing to stdout failed: %m");
        /* Each table its own: the rows of this one start over. */
        top_table_done(t);
        top_table_init(t, SIZE_MAX, 0);
        s->printed++;
        return 0;
}

/* One tick of the stream: printed (--json), or added to the table, which is printed once it
 * sums the delay. 0, or EXIT_FAILURE reported. */
static int stream_take(Stream *s, json_t *reply) {
        if (arg_json) {
                print_json(reply);
                s->printed++;
                return 0;
        }
        if (top_table_add_tick(&s->table, reply) < 0)
                return fail("trapstatd sent a malformed Watch reply");
        if (s->table.pending_interval_usec >= s->o->delay_usec)
                return stream_print_table(s);
        return 0;
}

/* Watch replies as they come (--json), or summed into a rate table every delay (-b --stream). */
static int top_stream(const TopOptions *o) {
        Stream s = {
                .o = o,
                .style = { .tty = isatty(STDOUT_FILENO), .color = use_color(stdout), .utf8 = locale_is_utf8() },
                /* With --json the replies are the output: as many rows as a Watch gives by default. */
                .limit = (unsigned) (o->limit_set ? o->limit : arg_json ? TOP_DEFAULT_LIMIT : STREAM_LIMIT),
        };
        int r, ret = 0;

        top_table_init(&s.table, SIZE_MAX, 0);
        if (cli_connect(CALL_TIMEOUT_USEC, &s.c) < 0)
                return EXIT_FAILURE;
        r = top_watch_start(s.c, &o->sort, &o->filter, s.limit);
        if (r < 0) {
                trapstat_client_free(s.c);
                return fail("io.trapstat.Watch on %s failed: %s", arg_socket, strerror(-r));
        }
        while (ret == 0 && (o->iterations < 0 || s.printed < o->iterations)) {
                _cleanup_(trapstat_error_done) TrapstatError error = {};
                _cleanup_(trapstat_watch_reply_done) TrapstatWatchReply reply = {};

                r = trapstat_watch_read(s.c, &reply, &error);
                if (r == TRAPSTAT_ERROR_REPLY) {
                        report_error_reply("io.trapstat.Watch", &error);
                        ret = EXIT_FAILURE;
                } else if (r == -ETIMEDOUT)
                        ret = fail("no reply from trapstatd's Watch stream in %" PRIu64 "s", CALL_TIMEOUT_USEC / USEC_PER_SEC);
                else if (r < 0 || !reply.continues)
                        ret = stream_lost(&s);
                else
                        ret = stream_take(&s, reply.json);
        }
        top_table_done(&s.table);
        trapstat_client_free(s.c);
        return ret;
}

/* Top rows grouped: PROCS, the counts of each Faults member (as history has them), %STALL over
 * the window where the layout has it (top_rows_layout()), traps, vectors, the key. */
static void print_group_table(const TopOptions *o, const OutputStyle *style, json_t *reply, long long limit) {
        char key[16] = "", cells[FAULT_COLUMNS_SIZE];
        TopRow *rows = NULL;
        TopLayout layout;
        TopTable t;
        size_t n = 0;

        top_table_init(&t, SIZE_MAX, 0);
        if (top_table_seed(&t, reply) < 0 || top_table_view(&t, &PROCESS_FILTER_NONE, o->group, &o->sort, &rows, &n) < 0) {
                top_table_done(&t);
                fprintf(stderr, "trapstat: trapstatd sent a malformed Top reply\n");
                return;
        }
        top_rows_layout(rows, n, o->group, &o->sort, style->utf8, &layout);
        for (size_t i = 0; i < sizeof(key) - 1 && top_group_name(o->group)[i]; i++)
                key[i] = (char) (top_group_name(o->group)[i] - 'a' + 'A');
        printf("%s  PROCS %s%s  TRAPS  VECTORS          %s%s\n", style->color ? "\033[1m" : "",
               format_faults_header(FAULTS_KNOWN_ALL, cells), layout.stall ? " %STALL" : "", key,
               style->color ? "\033[0m" : "");
        for (size_t i = 0; i < n; i++) {
                const TopCounts *c = &rows[i].total;
                _cleanup_free_ char *cell = NULL;
                char buf[16], vectors[64];

                printf("%7zu%s", rows[i].processes, format_faults_cells(&c->faults, FAULTS_KNOWN_ALL, cells));
                if (layout.stall)
                        printf(" %6s",
                               top_format_stall_share(c->stall_unknown ? NULL : &c->stall, o->window_usec, buf));
                format_busiest(rows[i].total.vectors, 2, 1.0, vectors, sizeof(vectors));
                (void) escape_untrusted(rows[i].key, style->utf8, &cell);
                printf(" %6s  %-16s %s\n", format_count(rows[i].total.traps, buf), vectors[0] ? vectors : "-", cell ?: "?");
        }
        /* Said, not hidden: past the limit the groups lack the quieter processes. */
        if ((long long) json_array_size(json_object_get(reply, "rows")) >= limit)
                printf("(the groups sum the %lld busiest processes of the window; --limit sets how many)\n", limit);
        top_rows_free(rows, n);
        top_table_done(&t);
}

/* Top over the window on *c, the connection of the table before (NULL for the first), which
 * the daemon may have closed since (idle, a restart). While the daemon is away, waits for it as
 * long as --reconnect-timeout says. 0 and *ret; TRAPSTAT_ERROR_REPLY and *ret_error; or a
 * negative errno, *c then closed. */
static int batch_call(const TopOptions *o, long long limit, TrapstatClient **c, TrapstatTopReply *ret,
                      TrapstatError *ret_error) {
        uint64_t gone = 0;
        int r;

        if (*c) {
                r = top_call_top(*c, &o->filter, &o->sort, o->window_usec, limit, ret, ret_error);
                if (r != -ECONNRESET && r != -EPIPE)
                        return r;
                *c = trapstat_client_free(*c);
        }
        for (;;) {
                r = trapstat_client_connect(arg_socket, CALL_TIMEOUT_USEC, c);
                if (r >= 0) {
                        r = top_call_top(*c, &o->filter, &o->sort, o->window_usec, limit, ret, ret_error);
                        if (r < 0 && r != TRAPSTAT_ERROR_REPLY)
                                *c = trapstat_client_free(*c);
                }
                if (r != -ECONNREFUSED && r != -ENOENT && r != -ECONNRESET && r != -EPIPE)
                        return r;
                /* The daemon is away: wait for it as long as --reconnect-timeout says. */
                if (!gone)
                        gone = now_usec(CLOCK_MONOTONIC);
                if (o->reconnect_timeout_usec != RECONNECT_NEVER && now_usec(CLOCK_MONOTONIC) - gone >= o->reconnect_timeout_usec)
                        return r;
                nanosleep(&(struct timespec) { .tv_sec = 1 }, NULL);
        }
}

/* The table of iteration v: the reply itself (--json), or its rows, per process or grouped. */
static void batch_print(const TopOptions *o, const OutputStyle *style, json_t *reply, long long v, long long limit) {
        char now[32], window[32];

        if (arg_json) {
                print_json(reply);
                return;
        }
        printf("%strapstat top - %s - counts over the last %s, sorted by %s%s%s\n", v > 0 ? "\n" : "",
               format_time_usec(now_usec(CLOCK_REALTIME), now), format_duration_usec(o->window_usec, window), o->sort.name,
               o->group != TOP_GROUP_PROCESS ? ", by " : "", o->group != TOP_GROUP_PROCESS ? top_group_name(o->group) : "");
        if (o->group == TOP_GROUP_PROCESS)
                print_top_table(stdout, style, json_object_get(reply, "rows"), -1, o->window_usec, &o->sort);
        else
                print_group_table(o, style, reply, limit);
}

/* Top over the window, every delay, on one connection while the daemon keeps it. */
static int top_batch(const TopOptions *o) {
        OutputStyle style = { .tty = isatty(STDOUT_FILENO), .color = use_color(stdout), .utf8 = locale_is_utf8() };
        /* Grouped, the groups sum every process of the window (up to Top's limit). */
        long long limit = o->group != TOP_GROUP_PROCESS && !o->limit_set ? TOP_MAX_LIMIT : o->limit;
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;

        for (long long v = 0; o->iterations < 0 || v < o->iterations; v++) {
                _cleanup_(trapstat_error_done) TrapstatError error = {};
                _cleanup_(trapstat_top_reply_done) TrapstatTopReply reply = {};
                int r;

                if (v > 0) {
                        struct timespec ts = usec_to_timespec(o->delay_usec);
                        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                                ;
                }
                r = batch_call(o, limit, &c, &reply, &error);
                if (r == TRAPSTAT_ERROR_REPLY) {
                        report_error_reply("io.trapstat.Top", &error);
                        return EXIT_FAILURE;
                }
                if (r < 0) {
                        report_unreachable(r);
                        return EXIT_FAILURE;
                }
                batch_print(o, &style, reply.json, v, limit);
                if (fflush(stdout) != 0)
                        return fail("writing to stdout failed: %m");
                if (!arg_json)
                        print_cut_note(stderr, reply.json, "otherProcesses", json_array_size(reply.rows), "processes",
                                       "--pid/--user/--unit/--comm/--container", limit, TOP_MAX_LIMIT);
        }
        return 0;
}

/* What top was asked on its command line: the options, and what the mode decides when unset. */
typedef struct TopArgs {
        TopOptions o;
        uint64_t delay;
        bool delay_set, reconnect_set;
} TopArgs;

static void top_help(void) {
        printf("%s\n\n"
               "Processes faulting and trapping. On a terminal: a live view that keeps every process\n"
               "that faulted or trapped since it started (and those of the last --window before), with\n"
               "per-second rates over each refresh (every tick, or every -d) and totals beside them; an\n"
               "exited process is marked X and stays for --window, one that trapped is marked T.\n"
               "Columns: pid (and NSPID, its pid in its container's pid namespace, when one differs),\n"
               "state, command, user-mode, kernel-mode and major page faults per second, the major ones\n"
               "by cause once a row had one (FILE/s: a file read in; ANON/s, SHMEM/s: anonymous or\n"
               "shared memory swapped in), traps per second, the share of time spent waiting on page\n"
               "faults (as %%CPU: 100 is one thread always in a fault), the share waiting on memory\n"
               "(%%STALL: swap-in, thrashing, direct reclaim and compaction, as the kernel's delay\n"
               "accounting says; shown while it keeps it, kernel.task_delayacct=1), total faults and\n"
               "traps, the trap vectors, the container (when one is in one), the systemd unit. With -b:\n"
               "the counts of every kind of page fault, as history shows them, and %%STALL over the window.\n\n"
               "Keys: q quit; p (or space) pause and resume; < and > move the sort column; u, k, m, f, a,\n"
               "s, t, w, d sort by user, kernel, major faults, major faults of a file, of anonymous or of\n"
               "shared memory, traps, fault time or memory stall; g group by unit, comm, user, container;\n"
               "P, U, N, C filter by pids, user, unit, comm; = clear the filters (--container too); h help.\n"
               "Ctrl-C also restores the terminal. When trapstatd goes away the view says so, reconnects\n"
               "and keeps its totals.\n\n"
               "  -b, --batch         plain tables on stdout, as top -b: counts of the last --window,\n"
               "                      from the history (also processes that exited), every -d\n"
               "      --stream        with -b: rates from the Watch stream summed over -d instead\n"
               "  -n, --iterations N  stop after N tables, N live refreshes, or N replies (--json)\n"
               "  -d, --delay SECONDS between tables, e.g. 2 or 500ms (default 2s with -b; live: every tick)\n"
               "  -w, --window DURATION  look-back of each table with -b; live: of the first rows, and how\n"
               "                      long an exited process stays (default %ds)\n"
               "  -s, --sort FIELD    user (default), kernel, minor, major, file, anon, shmem (major faults\n"
               "                      by cause), read, write, exec, protection, traps, time (time spent in\n"
               "                      page faults), stall (time waited on memory)\n"
               "  -l, --limit N       at most N rows (default %d with -b)\n"
               "  -p, --pid PID[,PID...]  only these processes (at most %d)\n"
               "  -u, --user USER     only processes of this user (name or uid)\n"
               "      --unit NAME     only processes of this systemd unit; a shell glob; a name without a\n"
               "                      dot gets .service (nginx: nginx.service)\n"
               "      --comm GLOB     only processes whose command name matches, e.g. 'postgres*'\n"
               "      --container NAME|ID  only processes of this container: its name, its id or the start\n"
               "                      of its id (as docker ps shows it)\n"
               "      --by KEY        with -b: one row per unit, comm, user or container, summed\n"
               "      --reconnect-timeout DURATION  how long to wait for trapstatd when it went away\n"
               "                      (default: infinity live, 0 with -b; 0 exits at once)\n"
               "      --json          the replies as JSON, one per line: a Watch reply per tick, or with -b\n"
               "                      the Top reply per table\n\n"
               "Without a terminal on stdin and stdout, top behaves as with -b.\n",
               top_usage, TOP_DEFAULT_WINDOW_SEC, TOP_DEFAULT_LIMIT, MAX_FILTER_PIDS);
}

/* One option of top that picks processes (-p, -u, --unit, --comm, --container) into *a; returns
 * as parse_argv() (argv-util.h). */
static int top_filter_option(int c, TopArgs *a) {
        char **field;

        switch (c) {
        case 'p':
                if (process_filter_parse_pids(&a->o.filter, optarg) < 0)
                        return usage_error(top_usage, "invalid -p '%s': expected PID[,PID...], at most %d pids", optarg,
                                           MAX_FILTER_PIDS);
                return 1;
        case 'u':
                if (top_parse_user(optarg, &a->o.filter.uid) < 0)
                        return usage_error(top_usage, "invalid -u '%s': no such user", optarg);
                return 1;
        case 'K':
                if (parse_container_arg(top_usage, optarg) < 0)
                        return -EINVAL;
                field = &a->o.filter.container;
                break;
        default:
                if (optarg[0] == '\0' || strlen(optarg) > MAX_UNIT_NAME)
                        return usage_error(top_usage, "invalid --%s '%s': expected 1 to %d bytes",
                                           c == 'U' ? "unit" : "comm", optarg, MAX_UNIT_NAME);
                field = c == 'U' ? &a->o.filter.unit : &a->o.filter.comm;
        }
        free(*field);
        *field = c == 'U' ? top_unit_glob(optarg) : strdup(optarg);
        if (!*field)
                return report_errno(-ENOMEM, "out of memory");
        return 1;
}

/* One option of top into *a; returns as parse_argv() (argv-util.h). */
static int top_option(int c, TopArgs *a) {
        uint64_t v;

        switch (c) {
        case 'b':
                a->o.batch = true;
                return 1;
        case 'S':
                a->o.stream = true;
                return 1;
        case 'n':
                if (parse_integer(optarg, 1, INT32_MAX, 0, &v) < 0)
                        return usage_error(top_usage, "invalid -n '%s': expected a positive count", optarg);
                a->o.iterations = (long long) v;
                return 1;
        case 'd':
                if (parse_duration_usec(optarg, &a->delay) < 0 || a->delay < 100 * USEC_PER_MSEC || a->delay > 86400 * USEC_PER_SEC)
                        return usage_error(top_usage, "invalid -d '%s': expected seconds (0.1s to 1d), e.g. 2 or 500ms", optarg);
                a->delay_set = true;
                return 1;
        case 'w':
                if (parse_duration_usec(optarg, &a->o.window_usec) < 0 || a->o.window_usec < USEC_PER_SEC ||
                    a->o.window_usec / USEC_PER_SEC > INT32_MAX)
                        return usage_error(top_usage, "invalid --window '%s': expected a duration of 1s or more", optarg);
                return 1;
        case 's':
                /* "time", "file" are what people type; the IDL's names work too. */
                if (top_sort_from_arg(optarg, &a->o.sort) < 0)
                        return usage_error(top_usage,
                                           "invalid --sort '%s': expected user, kernel, minor, major, file, anon, shmem, read, "
                                           "write, exec, protection, traps, time or stall",
                                           optarg);
                return 1;
        case 'l':
                if (parse_integer(optarg, 1, TOP_MAX_LIMIT, 0, &v) < 0)
                        return usage_error(top_usage, "invalid --limit '%s': expected 1 to %d", optarg, TOP_MAX_LIMIT);
                a->o.limit = (long long) v;
                a->o.limit_set = true;
                return 1;
        case 'p':
        case 'u':
        case 'U':
        case 'C':
        case 'K':
                return top_filter_option(c, a);
        case 'g':
                if (top_group_from_name(optarg, &a->o.group) < 0 || a->o.group == TOP_GROUP_PROCESS)
                        return usage_error(top_usage, "invalid --by '%s': expected unit, comm, user or container",
                                           optarg);
                return 1;
        case 'R':
                if (strcmp(optarg, "infinity") == 0 || strcmp(optarg, "never") == 0)
                        a->o.reconnect_timeout_usec = RECONNECT_NEVER;
                else if (parse_duration_usec(optarg, &a->o.reconnect_timeout_usec) < 0)
                        return usage_error(top_usage,
                                           "invalid --reconnect-timeout '%s': expected a duration (0: do not wait) or infinity",
                                           optarg);
                a->reconnect_set = true;
                return 1;
        default:
                return common_option(c, top_usage, top_help, NULL);
        }
}

/* top's command line into *a; returns as parse_argv() (argv-util.h). */
static int top_parse_argv(int argc, char *argv[], TopArgs *a) {
        static const struct option options[] = {
                { "batch", no_argument, NULL, 'b' },       { "iterations", required_argument, NULL, 'n' },
                { "delay", required_argument, NULL, 'd' }, { "window", required_argument, NULL, 'w' },
                { "sort", required_argument, NULL, 's' },  { "limit", required_argument, NULL, 'l' },
                { "stream", no_argument, NULL, 'S' },      { "json", no_argument, NULL, 'j' },
                { "pid", required_argument, NULL, 'p' },   { "user", required_argument, NULL, 'u' },
                { "unit", required_argument, NULL, 'U' },  { "comm", required_argument, NULL, 'C' },
                { "by", required_argument, NULL, 'g' },    { "reconnect-timeout", required_argument, NULL, 'R' },
                { "container", required_argument, NULL, 'K' }, { "help", no_argument, NULL, 'h' },
                {},
        };
        int c, r;

        /* The default sort, a Faults member: this cannot fail. */
        (void) sort_key_from_name("user", &a->o.sort);
        optind = 0;
        while ((c = getopt_long(argc, argv, "bn:d:w:s:l:p:u:h", options, NULL)) >= 0)
                if ((r = top_option(c, a)) <= 0)
                        return r;
        if (optind < argc)
                return usage_error(top_usage, "top: unexpected argument '%s'", argv[optind]);
        if (a->o.stream && !a->o.batch)
                return usage_error(top_usage, "top: --stream goes with -b");

        if (a->o.group != TOP_GROUP_PROCESS && arg_json)
                return usage_error(top_usage, "top: --by goes without --json (the replies are per process)");
        return 1;
}

/* Runs the mode the options and the terminal choose, with the defaults of that mode. */
static int top_run(TopArgs *a) {
        TopOptions *o = &a->o;

        if (arg_json && !o->batch) {
                o->stream = true;
                o->reconnect_timeout_usec = a->reconnect_set ? o->reconnect_timeout_usec : 0;
                return top_stream(o);
        }
        if (!o->batch && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO)) {
                /* A person watching: wait for the daemon as long as they keep the view open. */
                o->delay_usec = a->delay_set ? a->delay : 0;
                o->reconnect_timeout_usec = a->reconnect_set ? o->reconnect_timeout_usec : RECONNECT_NEVER;
                return top_live(o);
        }
        /* A script: a daemon that is away is an error at once, unless asked to wait. */
        o->delay_usec = a->delay_set ? a->delay : 2 * USEC_PER_SEC;
        o->reconnect_timeout_usec = a->reconnect_set ? o->reconnect_timeout_usec : 0;
        return o->stream ? top_stream(o) : top_batch(o);
}

int verb_top(int argc, char *argv[]) {
        TopArgs a = {
                .o = { .iterations = -1,
                       .window_usec = TOP_DEFAULT_WINDOW_SEC * USEC_PER_SEC,
                       .limit = TOP_DEFAULT_LIMIT,
                       .filter = PROCESS_FILTER_NONE },
        };
        int ret;

        ret = top_parse_argv(argc, argv, &a);
        ret = ret > 0 ? top_run(&a) : parse_argv_exit_code(ret);
        process_filter_done(&a.o.filter);
        return ret;
}

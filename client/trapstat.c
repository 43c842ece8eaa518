/* SPDX-License-Identifier: MIT */
/* trapstat: the command line client of trapstatd. A verb table; each verb makes varlink calls
 * and prints the replies as tables (or, with --json, as the reply objects themselves).
 *
 * Exit codes: 0 success, 1 failure (daemon unreachable, permission denied, unknown pid, error
 * reply), 2 usage error. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "counters.h"
#include "json-util.h"
#include "output.h"
#include "time-util.h"
#include "top.h"

/* How standard output is, asked once per run: the tables' look, and whether CSV escapes its text
 * (on a terminal) or is exact (a file or a pipe). */
static OutputStyle output_style(void) {
        return (OutputStyle) {
                .tty = isatty(STDOUT_FILENO),
                .color = use_color(stdout),
                .utf8 = locale_is_utf8(),
                .columns = terminal_columns(),
        };
}

/* Parses --since/--until; 0, or -EINVAL when the usage error is printed. */
static int parse_time_arg(const char *usage, const char *option, const char *value, uint64_t now, uint64_t *ret) {
        int r = parse_timestamp_usec(value, now, ret);

        if (r == -ERANGE)
                return usage_error(usage, "invalid %s '%s': out of range", option, value);
        if (r < 0)
                return usage_error(usage,
                                   "invalid %s '%s': expected a duration before now (90s, 15m, 2h, 3d) or a local time "
                                   "(2026-11-22T10:00, \"2026-11-22 10:00:00\", 10:00)",
                                   option, value);
        return 0;
}

/* The one operand of history and sites, a pid, once getopt_long() moved the options after it
 * ("history 4242 --since 2h") before it; -EINVAL when the usage error is printed. */
static int parse_pid_operand(const char *usage, const char *verb, int argc, char *argv[], uint32_t *ret) {
        uint64_t v;

        if (optind >= argc)
                return usage_error(usage, "%s: missing PID", verb);
        if (parse_integer(argv[optind], 1, UINT32_MAX, 0, &v) < 0)
                return usage_error(usage, "%s: invalid pid '%s': expected a process id (a positive integer)", verb,
                                   argv[optind]);
        if (optind + 1 < argc)
                return usage_error(usage, "%s: unexpected argument '%s'", verb, argv[optind + 1]);
        *ret = (uint32_t) v;
        return 0;
}

static const char *const history_usage =
        "Usage: trapstat history PID [--since TIME] [--until TIME] [--step DURATION] [--start-time NS] [--histogram]\n"
        "                        [--json|--csv]\n"
        "       trapstat history --unit NAME [--since TIME] [--until TIME] [--step DURATION] [--histogram]\n"
        "                        [--json|--csv]\n"
        "       trapstat history --container NAME|ID [--since TIME] [--until TIME] [--step DURATION] [--histogram]\n"
        "                        [--json|--csv]";

/* The unit NAME of history --unit names: as systemctl reads it, a name without a dot (and
 * without a glob character) is a service's. 0; -EINVAL when the usage error is printed; -ENOMEM. */
static int parse_unit_arg(const char *usage, const char *value, char **ret) {
        _cleanup_free_ char *unit = NULL;

        if (!*value)
                return usage_error(usage, "invalid --unit '': expected a unit name or glob, e.g. nginx.service");
        if (strpbrk(value, ".*?["))
                unit = strdup(value);
        else if (asprintf(&unit, "%s.service", value) < 0)
                unit = NULL;
        if (!unit)
                return -ENOMEM;
        if (strlen(unit) > MAX_UNIT_NAME)
                return usage_error(usage, "invalid --unit: longer than %d bytes", MAX_UNIT_NAME);
        *ret = TAKE_PTR(unit);
        return 0;
}

/* What history was asked on its command line. */
typedef struct HistoryArgs {
        uint64_t since, until, step;
        bool has_since, has_until, csv, histogram;
        long long start_time; /* -1: the newest process of the pid */
        char *unit;           /* --unit; NULL: a pid or a container */
        const char *container; /* --container; NULL: a pid or a unit */
        uint32_t pid;
} HistoryArgs;

static void history_help(void) {
        printf("%s\n\n"
               "What process PID did over time, also after it exited: a header, one line per sample,\n"
               "totals, and a sparkline per non-zero counter. FTIME is the time spent waiting on page\n"
               "faults, P99 the range of the histogram bucket that holds the 99th percentile of their\n"
               "durations. With --unit, the same summed over the processes of systemd units; with\n"
               "--container, over those of a container.\n\n"
               "  --since TIME        samples from TIME on (default: the whole history)\n"
               "  --until TIME        samples before TIME (default: now)\n"
               "  --step DURATION     width of a sample, a multiple of 10s (default: by the window:\n"
               "                      10s up to 6h, 1m up to 7d, else 1h)\n"
               "  --start-time NS     one incarnation of a reused pid (ns since boot; see trapstat procs)\n"
               "  --unit NAME         instead of PID: all processes of the units matching NAME, a unit\n"
               "                      or a shell glob ('user@*.service'); a NAME without a dot or\n"
               "                      glob character means NAME.service, as in systemctl\n"
               "  --container NAME|ID instead of PID: all processes of a container, by its name, its id\n"
               "                      or the start of its id (as docker ps shows it)\n"
               "  --json              the varlink reply as one JSON object\n"
               "  --csv               one line per sample, exact counts\n"
               "  --histogram         the distribution of fault durations over the window as bars,\n"
               "                      with p50, p99 and the longest fault marked\n\n"
               "TIME is a duration before now (90s, 15m, 2h, 3d), or a local time: 2026-11-22T10:00,\n"
               "\"2026-11-22 10:00:00\", 10:00 (today); Z or +01:00 after it for another zone; @EPOCH.\n",
               history_usage);
}

/* One option of history into *a; returns as parse_argv() (argv-util.h). */
static int history_option(int c, HistoryArgs *a, uint64_t now) {
        uint64_t v;
        int r;

        switch (c) {
        case 's':
                r = parse_time_arg(history_usage, "--since", optarg, now, &a->since);
                a->has_since = true;
                return r < 0 ? r : 1;
        case 'u':
                r = parse_time_arg(history_usage, "--until", optarg, now, &a->until);
                a->has_until = true;
                return r < 0 ? r : 1;
        case 't':
                if (parse_duration_usec(optarg, &a->step) < 0 || a->step == 0 || a->step % (10 * USEC_PER_SEC) != 0 ||
                    a->step / USEC_PER_SEC > INT32_MAX)
                        return usage_error(history_usage, "invalid --step '%s': expected a multiple of 10s, e.g. 10s, 1m, 1h",
                                           optarg);
                return 1;
        case 'T':
                if (parse_integer(optarg, 0, INT64_MAX, 0, &v) < 0)
                        return usage_error(history_usage,
                                           "invalid --start-time '%s': expected nanoseconds since boot (trapstat procs --exited lists them)",
                                           optarg);
                a->start_time = (long long) v;
                return 1;
        case 'U':
                free(a->unit);
                a->unit = NULL;
                r = parse_unit_arg(history_usage, optarg, &a->unit);
                if (r == -ENOMEM)
                        return report_errno(r, "out of memory");
                return r < 0 ? r : 1;
        case 'K':
                if (parse_container_arg(history_usage, optarg) < 0)
                        return -EINVAL;
                a->container = optarg;
                return 1;
        case 'H':
                a->histogram = true;
                return 1;
        default:
                return common_option(c, history_usage, history_help, &a->csv);
        }
}

/* history's command line into *a; returns as parse_argv() (argv-util.h). */
static int history_parse_argv(int argc, char *argv[], HistoryArgs *a) {
        static const struct option options[] = {
                { "since", required_argument, NULL, 's' }, { "until", required_argument, NULL, 'u' },
                { "step", required_argument, NULL, 't' },  { "start-time", required_argument, NULL, 'T' },
                { "unit", required_argument, NULL, 'U' },  { "json", no_argument, NULL, 'j' },
                { "csv", no_argument, NULL, OPT_CSV },         { "help", no_argument, NULL, 'h' },
                { "histogram", no_argument, NULL, 'H' },   { "container", required_argument, NULL, 'K' },
                {},
        };
        uint64_t now = now_usec(CLOCK_REALTIME);
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                if ((r = history_option(c, a, now)) <= 0)
                        return r;
        if (a->unit && a->container)
                return usage_error(history_usage, "history: --unit and --container exclude each other");
        if ((a->unit || a->container) && optind < argc)
                return usage_error(history_usage, "history: a PID and --%s exclude each other",
                                   a->unit ? "unit" : "container");
        if ((a->unit || a->container) && a->start_time >= 0)
                return usage_error(history_usage, "history: --start-time names a process, not a %s",
                                   a->unit ? "unit" : "container");
        if (!a->unit && !a->container && (r = parse_pid_operand(history_usage, "history", argc, argv, &a->pid)) < 0)
                return r;
        if (a->csv && arg_json)
                return usage_error(history_usage, "history: --json and --csv exclude each other");
        if (a->has_since && a->has_until && a->since >= a->until)
                return usage_error(history_usage, "history: --since must be before --until");
        return 1;
}

/* What history --unit and --container print of their reply (a UnitHistory or ContainerHistory). */
static int print_group_history(json_t *reply, const HistoryArgs *a) {
        OutputStyle style = output_style();

        if (arg_json)
                print_json(reply);
        else if (a->csv)
                print_history_csv(stdout, &style, reply);
        else if (a->container)
                print_container_history(stdout, &style, reply, a->step, a->histogram);
        else
                print_unit_history(stdout, &style, reply, a->step, a->histogram);
        return fflush(stdout) == 0 ? 0 : fail("writing to stdout failed: %m");
}

/* history --unit: the processes of the units summed, as one history. */
static int unit_history(TrapstatClient *c, const HistoryArgs *a) {
        _cleanup_(trapstat_unit_history_reply_done) TrapstatUnitHistoryReply reply = {};
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        TrapstatUnitHistoryRequest q = {
                .unit = a->unit,
                .since_usec = a->since,
                .until_usec = a->until,
                .resolution_sec = a->step / USEC_PER_SEC,
        };
        int r;

        r = trapstat_unit_history(c, &q, &reply, &error);
        if (r < 0) {
                report_call_failure("io.trapstat.UnitHistory", r, &error);
                return EXIT_FAILURE;
        }
        return print_group_history(reply.json, a);
}

/* history --container: the processes of the containers it names summed, as one history. */
static int container_history(TrapstatClient *c, const HistoryArgs *a) {
        _cleanup_(trapstat_container_history_reply_done) TrapstatContainerHistoryReply reply = {};
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        TrapstatContainerHistoryRequest q = {
                .container = a->container,
                .since_usec = a->since,
                .until_usec = a->until,
                .resolution_sec = a->step / USEC_PER_SEC,
        };
        int r;

        r = trapstat_container_history(c, &q, &reply, &error);
        if (r < 0) {
                report_call_failure("io.trapstat.ContainerHistory", r, &error);
                return EXIT_FAILURE;
        }
        return print_group_history(reply.json, a);
}

/* The sites of the most traps of the process shown, for the table under its history; none
 * (reported) when the call fails, and none from a daemon older than the method, which is no
 * failure. */
static void history_trap_sites(TrapstatClient *c, const HistoryArgs *a, uint64_t start_time, TrapstatSitesReply *ret) {
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        TrapstatSitesQuery q = {
                .pid = a->pid,
                .start_time = start_time,
                .since_usec = a->since,
                .until_usec = a->until,
                .kind = SITE_TRAP,
                .limit = 3,
        };
        int r;

        r = trapstat_sites(c, &q, ret, &error);
        if (r == TRAPSTAT_ERROR_REPLY && strcmp(error.name, TRAPSTAT_ERROR_METHOD_NOT_FOUND) != 0)
                (void) report_error_reply("io.trapstat.Sites", &error);
        else if (r == -EBADMSG)
                (void) fail("trapstatd sent a malformed reply to io.trapstat.Sites, trap sites not shown");
        else if (r < 0 && r != TRAPSTAT_ERROR_REPLY)
                (void) report_errno(r, "io.trapstat.Sites on %s failed, trap sites not shown: %m", arg_socket);
}

/* history PID: the process's samples, with its other incarnations and its trap sites. */
static int process_history(TrapstatClient *c, const HistoryArgs *a) {
        _cleanup_(trapstat_history_reply_done) TrapstatHistoryReply reply = {};
        _cleanup_(trapstat_list_processes_reply_done) TrapstatListProcessesReply list = {};
        _cleanup_(trapstat_sites_reply_done) TrapstatSitesReply sites = {};
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        TrapstatHistoryRequest q = {
                .pid = a->pid,
                .start_time = a->start_time,
                .since_usec = a->since,
                .until_usec = a->until,
                .resolution_sec = a->step / USEC_PER_SEC,
        };
        OutputStyle style = output_style();
        int r;

        r = trapstat_history(c, &q, &reply, &error);
        if (r < 0) {
                report_call_failure("io.trapstat.History", r, &error);
                return EXIT_FAILURE;
        }
        if (arg_json) {
                print_json(reply.json);
                return 0;
        }
        if (a->csv) {
                print_history_csv(stdout, &style, reply.json);
                return fflush(stdout) == 0 ? 0 : fail("writing to stdout failed: %m");
        }

        /* Other incarnations of the pid, to say how to select them; not worth failing over. On a
         * connection that failed (not an error reply) a late reply would be the next call's. */
        trapstat_error_done(&error);
        r = trapstat_list_processes(c, &(TrapstatListProcessesRequest) { .pid = a->pid, .include_exited = true }, &list,
                                    &error);
        if (r < 0 && r != TRAPSTAT_ERROR_REPLY)
                (void) report_errno(r, "io.trapstat.ListProcesses on %s failed, trap sites not shown: %m", arg_socket);
        else
                history_trap_sites(c, a, reply.start_time, &sites);

        print_history(stdout, &style, reply.json, list.processes, a->step, a->histogram, sites.sites, sites.n_sites);
        return fflush(stdout) == 0 ? 0 : fail("writing to stdout failed: %m");
}

static int verb_history(int argc, char *argv[]) {
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        HistoryArgs a = { .start_time = -1 };
        int r;

        r = history_parse_argv(argc, argv, &a);
        if (r <= 0)
                r = parse_argv_exit_code(r);
        /* One connection for every call of the command. */
        else if (cli_connect(CALL_TIMEOUT_USEC, &c) < 0)
                r = EXIT_FAILURE;
        else
                r = a.unit ? unit_history(c, &a) : a.container ? container_history(c, &a) : process_history(c, &a);
        free(a.unit);
        return r;
}

static const char *const sites_usage =
        "Usage: trapstat sites PID [--since TIME] [--until TIME] [--start-time NS] [--traps|--faults|--major] [--limit N]\n"
        "                      [--json|--csv]";

/* What sites was asked on its command line. */
typedef struct SitesArgs {
        TrapstatSitesQuery q;
        bool has_since, has_until, traps, faults, major, csv;
} SitesArgs;

static void sites_help(void) {
        printf("%s\n\n"
               "Where process PID trapped and faulted, also after it exited: one line per site (an\n"
               "instruction: the file it is in and where in it), most events first, with the memory\n"
               "the faulting address was in. Every trap and every major fault is counted; page faults\n"
               "are sampled (trapstat status says how), so their counts are estimates, marked ~.\n\n"
               "  --since TIME        events from TIME on (default: the whole history)\n"
               "  --until TIME        events before TIME (default: now)\n"
               "  --start-time NS     one incarnation of a reused pid (ns since boot; see trapstat procs)\n"
               "  --traps             only trap sites\n"
               "  --faults            only page fault sites\n"
               "  --major             only major fault sites: the instructions that waited on a major\n"
               "                      fault, MEMORY what for (a file read, or swap: [anon], a memfd...)\n"
               "  -n, --limit N       at most N sites (default %d, at most %d)\n"
               "  --json              the varlink reply as one JSON object\n"
               "  --csv               one line per site, exact counts\n\n"
               "TIME as for trapstat history: 90s, 15m, 2h, 3d, 2026-11-22T10:00, ...\n",
               sites_usage, SITES_DEFAULT_LIMIT, SITES_MAX_LIMIT);
}

/* One option of sites into *a; returns as parse_argv() (argv-util.h). */
static int sites_option(int c, SitesArgs *a, uint64_t now) {
        uint64_t v;
        int r;

        switch (c) {
        case 's':
                r = parse_time_arg(sites_usage, "--since", optarg, now, &a->q.since_usec);
                a->has_since = true;
                return r < 0 ? r : 1;
        case 'u':
                r = parse_time_arg(sites_usage, "--until", optarg, now, &a->q.until_usec);
                a->has_until = true;
                return r < 0 ? r : 1;
        case 'T':
                if (parse_integer(optarg, 0, INT64_MAX, 0, &v) < 0)
                        return usage_error(sites_usage,
                                           "invalid --start-time '%s': expected nanoseconds since boot (trapstat procs --exited lists them)",
                                           optarg);
                a->q.start_time = v;
                return 1;
        case 't':
                a->traps = true;
                return 1;
        case 'f':
                a->faults = true;
                return 1;
        case 'm':
                a->major = true;
                return 1;
        case 'n':
                if (parse_integer(optarg, 1, SITES_MAX_LIMIT, 0, &v) < 0)
                        return usage_error(sites_usage, "invalid --limit '%s': expected 1 to %d", optarg, SITES_MAX_LIMIT);
                a->q.limit = (unsigned) v;
                return 1;
        default:
                return common_option(c, sites_usage, sites_help, &a->csv);
        }
}

/* sites' command line into *a; returns as parse_argv() (argv-util.h). */
static int sites_parse_argv(int argc, char *argv[], SitesArgs *a) {
        static const struct option options[] = {
                { "since", required_argument, NULL, 's' }, { "until", required_argument, NULL, 'u' },
                { "start-time", required_argument, NULL, 'T' }, { "traps", no_argument, NULL, 't' },
                { "faults", no_argument, NULL, 'f' },      { "major", no_argument, NULL, 'm' },
                { "limit", required_argument, NULL, 'n' },
                { "json", no_argument, NULL, 'j' },        { "csv", no_argument, NULL, OPT_CSV },
                { "help", no_argument, NULL, 'h' },        {},
        };
        uint64_t now = now_usec(CLOCK_REALTIME);
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "n:h", options, NULL)) >= 0)
                if ((r = sites_option(c, a, now)) <= 0)
                        return r;
        r = parse_pid_operand(sites_usage, "sites", argc, argv, &a->q.pid);
        if (r < 0)
                return r;
        if (a->traps + a->faults + a->major > 1)
                return usage_error(sites_usage,
                                   "sites: --traps, --faults and --major exclude each other (without any: all)");
        if (a->csv && arg_json)
                return usage_error(sites_usage, "sites: --json and --csv exclude each other");
        if (a->has_since && a->has_until && a->q.since_usec >= a->q.until_usec)
                return usage_error(sites_usage, "sites: --since must be before --until");
        if (a->traps)
                a->q.kind = SITE_TRAP;
        else if (a->faults)
                a->q.kind = SITE_FAULT;
        else if (a->major)
                a->q.kind = SITE_MAJOR;
        return 1;
}

static int verb_sites(int argc, char *argv[]) {
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        _cleanup_(trapstat_sites_reply_done) TrapstatSitesReply reply = {};
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        SitesArgs a = { .q.kind = -1 };
        OutputStyle style;
        int r;

        r = sites_parse_argv(argc, argv, &a);
        if (r <= 0)
                return parse_argv_exit_code(r);
        if (cli_connect(CALL_TIMEOUT_USEC, &c) < 0)
                return EXIT_FAILURE;
        r = trapstat_sites(c, &a.q, &reply, &error);
        if (r == -EBADMSG)
                return fail("trapstatd sent a malformed reply to io.trapstat.Sites");
        if (r < 0) {
                report_call_failure("io.trapstat.Sites", r, &error);
                return EXIT_FAILURE;
        }
        if (arg_json) {
                print_json(reply.json);
                return 0;
        }
        style = output_style();
        if (a.csv)
                print_sites_csv(stdout, &style, reply.process, reply.sites, reply.n_sites);
        else
                print_sites(stdout, &style, reply.process, reply.sites, reply.n_sites);
        if (fflush(stdout) != 0)
                return fail("writing to stdout failed: %m");
        print_cut_note(stderr, reply.json, "otherSites", reply.n_sites, "sites", "--traps/--faults/--major/--since/--until",
                       a.q.limit ? (long long) a.q.limit : SITES_DEFAULT_LIMIT, SITES_MAX_LIMIT);
        return 0;
}

static const char *const procs_usage =
        "Usage: trapstat procs [--exited] [--comm GLOB] [--unit NAME] [--container NAME|ID] [--pid PID] [--limit N]\n"
        "                      [--json|--csv]";

/* What procs was asked on its command line. */
typedef struct ProcsArgs {
        TrapstatListProcessesRequest q;
        bool csv;
} ProcsArgs;

static void procs_help(void) {
        printf("%s\n\n"
               "Processes trapstatd has counted, newest first (running ones unless --exited).\n\n"
               "  -a, --exited        also processes that have exited\n"
               "  -c, --comm GLOB     only commands matching a shell glob, e.g. 'postgres*'\n"
               "  -u, --unit NAME     only processes of this systemd unit, e.g. nginx.service\n"
               "      --container NAME|ID  only processes of this container: its name, its id or the start\n"
               "                      of its id (as docker ps shows it)\n"
               "  -p, --pid PID       only the incarnations of this pid\n"
               "  -l, --limit N       at most N processes (default %d, at most %d); when more match,\n"
               "                      a line on stderr says how many (--json: otherProcesses)\n"
               "      --json          the varlink reply as one JSON object\n"
               "      --csv           one line per process\n",
               procs_usage, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT);
}

/* One option of procs into *a; returns as parse_argv() (argv-util.h). */
static int procs_option(int c, ProcsArgs *a) {
        uint64_t v;

        switch (c) {
        case 'a':
                a->q.include_exited = true;
                return 1;
        case 'c':
                if (!*optarg)
                        return usage_error(procs_usage, "invalid --comm '': expected a command name or shell glob");
                a->q.comm = optarg;
                return 1;
        case 'u':
                if (!*optarg)
                        return usage_error(procs_usage, "invalid --unit '': expected a unit name, e.g. nginx.service");
                a->q.unit = optarg;
                return 1;
        case 'K':
                if (parse_container_arg(procs_usage, optarg) < 0)
                        return -EINVAL;
                a->q.container = optarg;
                return 1;
        case 'p':
                if (parse_integer(optarg, 1, UINT32_MAX, 0, &v) < 0)
                        return usage_error(procs_usage, "invalid --pid '%s': expected a process id", optarg);
                a->q.pid = (uint32_t) v;
                return 1;
        case 'l':
                if (parse_integer(optarg, 1, LIST_MAX_LIMIT, 0, &v) < 0)
                        return usage_error(procs_usage, "invalid --limit '%s': expected 1 to %d", optarg, LIST_MAX_LIMIT);
                a->q.limit = (unsigned) v;
                return 1;
        default:
                return common_option(c, procs_usage, procs_help, &a->csv);
        }
}

/* procs' command line into *a; returns as parse_argv() (argv-util.h). */
static int procs_parse_argv(int argc, char *argv[], ProcsArgs *a) {
        static const struct option options[] = {
                { "exited", no_argument, NULL, 'a' },    { "all", no_argument, NULL, 'a' },
                { "comm", required_argument, NULL, 'c' }, { "unit", required_argument, NULL, 'u' },
                { "pid", required_argument, NULL, 'p' },  { "limit", required_argument, NULL, 'l' },
                { "json", no_argument, NULL, 'j' },       { "csv", no_argument, NULL, OPT_CSV },
                { "container", required_argument, NULL, 'K' }, { "help", no_argument, NULL, 'h' },
                {},
        };
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "ac:u:p:l:h", options, NULL)) >= 0)
                if ((r = procs_option(c, a)) <= 0)
                        return r;
        if (optind < argc)
                return usage_error(procs_usage, "procs: unexpected argument '%s'", argv[optind]);
        if (a->csv && arg_json)
                return usage_error(procs_usage, "procs: --json and --csv exclude each other");
        return 1;
}

/* Processes procs asks for in one call: a larger --limit is read page by page, so that no reply
 * grows past the daemon's cap on its size (each process's command line may take 1 KiB). */
#define PROCS_PAGE 1000

/* The processes procs was asked for, in pages of PROCS_PAGE: *ret is the last page's reply with
 * the processes of all pages, as one reply of them all would be. A daemon that cannot page (no
 * next) is asked once more, for them all at once. */
static int procs_list(TrapstatClient *vc, const TrapstatListProcessesRequest *q, TrapstatListProcessesReply *ret,
                      TrapstatError *error) {
        _cleanup_json_ json_t *all = json_array();
        TrapstatListProcessesRequest page = *q;
        unsigned limit = q->limit ?: LIST_DEFAULT_LIMIT;
        TrapstatListProcessesReply reply = {};
        int r;

        if (!all)
                return -ENOMEM;
        for (;;) {
                TrapstatListProcessesReply next = {};

                page.limit = MIN(limit - (unsigned) json_array_size(all), PROCS_PAGE);
                page.after = reply.next;
                r = trapstat_list_processes(vc, &page, &next, error);
                trapstat_list_processes_reply_done(&reply);
                if (r < 0)
                        return r;
                reply = next;
                if (!json_is_array(reply.processes)) { /* printed as it came */
                        *ret = reply;
                        return 0;
                }
                if (json_array_extend(all, reply.processes) < 0) {
                        trapstat_list_processes_reply_done(&reply);
                        return -ENOMEM;
                }
                if (json_array_size(all) >= limit || reply.other_processes <= 0 || json_array_size(reply.processes) == 0)
                        break;
                if (!reply.next) { /* an older daemon: all at once, as before pages */
                        trapstat_list_processes_reply_done(&reply);
                        return trapstat_list_processes(vc, q, ret, error);
                }
        }
        if (json_object_set(reply.json, "processes", all) < 0) {
                trapstat_list_processes_reply_done(&reply);
                return -ENOMEM;
        }
        reply.processes = json_object_get(reply.json, "processes");
        *ret = reply;
        return 0;
}

static int verb_procs(int argc, char *argv[]) {
        _cleanup_(trapstat_client_freep) TrapstatClient *vc = NULL;
        _cleanup_(trapstat_list_processes_reply_done) TrapstatListProcessesReply reply = {};
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        ProcsArgs a = {};
        OutputStyle style;
        int r;

        r = procs_parse_argv(argc, argv, &a);
        if (r <= 0)
                return parse_argv_exit_code(r);
        if (cli_connect(CALL_TIMEOUT_USEC, &vc) < 0)
                return EXIT_FAILURE;
        r = procs_list(vc, &a.q, &reply, &error);
        if (r < 0) {
                report_call_failure("io.trapstat.ListProcesses", r, &error);
                return EXIT_FAILURE;
        }
        if (arg_json) {
                print_json(reply.json);
                return fflush(stdout) == 0 ? 0 : fail("writing to stdout failed: %m");
        }
        style = output_style();
        if (a.csv)
                print_processes_csv(stdout, &style, reply.processes);
        else
                print_processes(stdout, &style, reply.processes);
        if (fflush(stdout) != 0)
                return fail("writing to stdout failed: %m");
        /* After the rows, so that it is the last line a terminal shows. */
        print_cut_note(stderr, reply.json, "otherProcesses", json_array_size(reply.processes), "processes",
                       "--comm/--unit/--container/--pid", a.q.limit ? (long long) a.q.limit : LIST_DEFAULT_LIMIT,
                       LIST_MAX_LIMIT);
        return 0;
}

static const char *const traps_usage = "Usage: trapstat traps [--since TIME] [--json]";

static void traps_help(void) {
        printf("%s\n\n"
               "CPU exceptions of every process you may see, summed, by x86 vector (\"#UD invalid\n"
               "opcode\") and by signal and si_code, since TIME (default 1h ago).\n"
               "TIME as for trapstat history: 90s, 15m, 2h, 3d, 2026-11-22T10:00, ...\n",
               traps_usage);
}

/* traps' command line: --since into *since; returns as parse_argv() (argv-util.h). */
static int traps_parse_argv(int argc, char *argv[], uint64_t now, uint64_t *since) {
        static const struct option options[] = {
                { "since", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "s:h", options, NULL)) >= 0) {
                if (c != 's') {
                        if ((r = common_option(c, traps_usage, traps_help, NULL)) <= 0)
                                return r;
                        continue;
                }
                r = parse_time_arg(traps_usage, "--since", optarg, now, since);
                if (r < 0)
                        return r;
                if (*since >= now)
                        return usage_error(traps_usage, "invalid --since '%s': not in the past", optarg);
        }
        if (optind < argc)
                return usage_error(traps_usage, "traps: unexpected argument '%s'", argv[optind]);
        return 1;
}

static int verb_traps(int argc, char *argv[]) {
        uint64_t now = now_usec(CLOCK_REALTIME), since = now - TRAPS_DEFAULT_WINDOW_SEC * USEC_PER_SEC, window;
        _cleanup_(trapstat_client_freep) TrapstatClient *vc = NULL;
        _cleanup_(trapstat_traps_reply_done) TrapstatTrapsReply reply = {};
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        int r;

        r = traps_parse_argv(argc, argv, now, &since);
        if (r <= 0)
                return parse_argv_exit_code(r);

        /* Whole seconds, rounded up so the window covers --since. */
        window = (now - since + USEC_PER_SEC - 1) / USEC_PER_SEC;
        if (window > INT32_MAX)
                window = INT32_MAX;
        if (cli_connect(CALL_TIMEOUT_USEC, &vc) < 0)
                return EXIT_FAILURE;
        r = trapstat_traps(vc, &(TrapstatTrapsRequest) { .window_sec = window }, &reply, &error);
        if (r < 0) {
                report_call_failure("io.trapstat.Traps", r, &error);
                return EXIT_FAILURE;
        }
        if (arg_json)
                print_json(reply.json);
        else {
                OutputStyle style = output_style();
                print_traps(stdout, &style, reply.json, window * USEC_PER_SEC);
        }
        return fflush(stdout) == 0 ? 0 : fail("writing to stdout failed: %m");
}

/* status' command line; returns as parse_argv() (argv-util.h). */
static int status_parse_argv(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        printf("Usage: trapstat status [--json]\n\n"
                               "State of trapstatd: version, event sources (and why one is inactive), tick,\n"
                               "database, tracked processes, drops.\n");
                        return 0;
                }
                if (strcmp(argv[i], "--json") == 0)
                        arg_json = true;
                else
                        return usage_error("Usage: trapstat status [--json]", "status: unexpected argument '%s'", argv[i]);
        }
        return 1;
}

static int verb_status(int argc, char *argv[]) {
        _cleanup_(trapstat_client_freep) TrapstatClient *vc = NULL;
        _cleanup_(trapstat_status_reply_done) TrapstatStatusReply reply = {};
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        int r;

        r = status_parse_argv(argc, argv);
        if (r <= 0)
                return parse_argv_exit_code(r);
        if (cli_connect(CALL_TIMEOUT_USEC, &vc) < 0)
                return EXIT_FAILURE;
        r = trapstat_get_status(vc, &reply, &error);
        if (r < 0) {
                report_call_failure("io.trapstat.GetStatus", r, &error);
                return EXIT_FAILURE;
        }
        if (arg_json)
                print_json(reply.json);
        else {
                OutputStyle style = output_style();
                print_status(stdout, &style, reply.json);
        }
        return fflush(stdout) == 0 ? 0 : fail("writing to stdout failed: %m");
}

static const char *const call_usage = "Usage: trapstat call [--more] METHOD [PARAMETERS-JSON]";

/* What call was asked on its command line. */
typedef struct CallArgs {
        const char *method;
        json_t *params; /* NULL: none */
        bool more;
} CallArgs;

/* call's command line into *a; returns as parse_argv() (argv-util.h). */
static int call_parse_argv(int argc, char *argv[], CallArgs *a) {
        static const struct option options[] = {
                { "more", no_argument, NULL, 'm' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        json_error_t error;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "+mh", options, NULL)) >= 0)
                switch (c) {
                case 'm':
                        a->more = true;
                        break;
                case 'h':
                        printf("%s\n\n"
                               "Calls a varlink method of trapstatd and prints the reply parameters as JSON, e.g.\n"
                               "  trapstat call io.trapstat.ListProcesses '{\"pid\": 1}'\n"
                               "  trapstat call --more io.trapstat.Watch '{\"limit\": 5}'\n\n"
                               "  -m, --more    a streaming call: print every reply, one per line\n",
                               call_usage);
                        return 0;
                default:
                        return usage_hint(call_usage);
                }
        argc -= optind - 1;
        argv += optind - 1;
        if (argc < 2)
                return usage_error(call_usage, "call: missing METHOD");
        if (argc > 3)
                return usage_error(call_usage, "call: unexpected argument '%s'", argv[3]);
        if (!strchr(argv[1], '.') || argv[1][0] == '.' || argv[1][strlen(argv[1]) - 1] == '.')
                return usage_error(call_usage, "call: '%s' is not a qualified method name (interface.Method)", argv[1]);
        a->method = argv[1];
        if (argc == 3) {
                a->params = json_loads(argv[2], JSON_REJECT_DUPLICATES, &error);
                if (!json_is_object(a->params))
                        return usage_error(call_usage, "call: parameters must be a JSON object: %s",
                                           a->params ? "not an object" : error.text);
        }
        return 1;
}

/* Makes the call and prints each reply's parameters as JSON; the verb's exit code. */
static int call_run(const CallArgs *a) {
        _cleanup_(trapstat_client_freep) TrapstatClient *vc = NULL;
        bool continues = true;
        int r;

        /* A stream has no end of its own: no timeout between its replies. */
        if (cli_connect(a->more ? 0 : CALL_TIMEOUT_USEC, &vc) < 0)
                return EXIT_FAILURE;
        r = trapstat_client_start(vc, a->method, a->params, a->more);
        while (r >= 0 && continues) {
                _cleanup_(trapstat_error_done) TrapstatError reply_error = {};
                _cleanup_json_ json_t *reply = NULL;

                r = trapstat_client_read(vc, &reply, &continues, &reply_error);
                if (r == TRAPSTAT_ERROR_REPLY) {
                        report_error_reply(a->method, &reply_error);
                        return EXIT_FAILURE;
                }
                if (r < 0)
                        break;
                print_json(reply);
        }
        if (r == -ECONNRESET)
                return fail("trapstatd closed the connection during %s", a->method);
        if (r < 0)
                return fail("%s on %s failed: %s", a->method, arg_socket, strerror(-r));
        return 0;
}

/* Raw varlink, for debugging and scripts: prints each reply's parameters as JSON. */
static int verb_call(int argc, char *argv[]) {
        CallArgs a = {};
        int r;

        r = call_parse_argv(argc, argv, &a);
        r = r > 0 ? call_run(&a) : parse_argv_exit_code(r);
        json_decref(a.params);
        return r;
}

static const struct {
        const char *name;
        int (*run)(int argc, char *argv[]);
        const char *help;
} verbs[] = {
        { "top", verb_top, "live view of the processes faulting and trapping now; -b for plain tables" },
        { "history", verb_history, "what a process (or a unit, a container) did over time, also after it exited" },
        { "sites", verb_sites, "where one process trapped and faulted: instructions, files, memory" },
        { "procs", verb_procs, "processes trapstatd has counted (--exited: also the gone ones)" },
        { "traps", verb_traps, "CPU exceptions of all processes by vector, signal and si_code" },
        { "status", verb_status, "state of the daemon and its event sources" },
        { "call", verb_call, "call a varlink method and print the reply as JSON" },
};

static void help(void) {
        printf("%s\n\nCPU traps and page faults per process, from trapstatd.\n\n", global_usage);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-8s %s\n", verbs[i].name, verbs[i].help);
        printf("\n  -S, --socket PATH  trapstatd's socket (default %s)\n"
               "  -j, --json         print the replies as JSON, one object per line\n"
               "  -h, --help         this help; 'trapstat VERB --help' for a verb's\n"
               "  -V, --version      print the version\n"
               "\nColor only on a terminal, never when NO_COLOR is set.\n"
               "Exit status: 0 success; 1 failure (daemon unreachable, permission denied, unknown pid,\n"
               "error reply); 2 usage error. See trapstat(1).\n",
               TRAPSTAT_DEFAULT_SOCKET);
}

/* The options before the verb; returns as parse_argv() (argv-util.h). optind is the verb's. */
static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 'S' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        int c;

        /* "+": stop at the verb; its own options follow it. */
        while ((c = getopt_long(argc, argv, "+S:jhV", options, NULL)) >= 0)
                switch (c) {
                case 'S':
                        if (!*optarg)
                                return usage_error(global_usage, "invalid --socket '': expected a path");
                        arg_socket = optarg;
                        break;
                case 'j':
                        arg_json = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("trapstat %s\n", TRAPSTAT_VERSION);
                        return 0;
                default:
                        return usage_hint(global_usage);
                }
        if (optind >= argc)
                return usage_error(global_usage, "missing command");
        return 1;
}

int main(int argc, char *argv[]) {
        int r;

        /* Only the character set: numbers stay in the C locale, as scripts expect. */
        setlocale(LC_CTYPE, "");

        r = parse_argv(argc, argv);
        if (r <= 0)
                return parse_argv_exit_code(r);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(argv[optind], verbs[i].name) == 0) {
                        /* getopt names the program by argv[0] in its messages: "trapstat top: ...". */
                        char name[32];

                        snprintf(name, sizeof(name), "trapstat %s", verbs[i].name);
                        argv[optind] = name;
                        return verbs[i].run(argc - optind, argv + optind);
                }
        if (strcmp(argv[optind], "help") == 0) {
                help();
                return 0;
        }
        return parse_argv_exit_code(usage_error(global_usage, "unknown command '%s'", argv[optind]));
}

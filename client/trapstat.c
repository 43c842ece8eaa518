/* SPDX-License-Identifier: MIT */
/* trapstat: the command line client of trapstatd. A verb table; each verb makes varlink calls
 * and prints the replies as tables (or, with --json, as the reply objects themselves).
 *
 * Exit codes: 0 success, 1 failure (daemon unreachable, error reply), 2 usage error. */

#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "counters.h"
#include "json-util.h"
#include "macro.h"
#include "output.h"
#include "time-util.h"
#include "varlink.h"

#define DEFAULT_SOCKET "/run/trapstatd/io.trapstat"
#define CALL_TIMEOUT_USEC (30 * USEC_PER_SEC)

enum { EXIT_USAGE = 2 };

static const char *arg_socket = DEFAULT_SOCKET;
static bool arg_json = false;

static void usage_line(FILE *f) {
        fprintf(f, "Usage: trapstat [--socket PATH] [--json] {top|history|status|call} [ARGS]...\n");
}

static void print_error(const char *fmt, va_list ap) {
        fputs("trapstat: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
}

/* Bad arguments: the message, the usage line, exit status 2. */
static int usage_error(const char *fmt, ...) _printf_(1, 2);
static int usage_error(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        print_error(fmt, ap);
        va_end(ap);
        usage_line(stderr);
        return EXIT_USAGE;
}

/* Anything else that went wrong: one line, exit status 1. */
static int fail(const char *fmt, ...) _printf_(1, 2);
static int fail(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        print_error(fmt, ap);
        va_end(ap);
        return EXIT_FAILURE;
}

/* One call, one reply. On an error reply prints it and returns EXIT_FAILURE. */
static int call(const char *method, json_t *parameters, json_t **ret) {
        _cleanup_free_ char *error = NULL;
        VarlinkClient *c = NULL;
        json_t *reply = NULL;
        bool continues;
        int r;

        r = varlink_client_connect(arg_socket, CALL_TIMEOUT_USEC, &c);
        if (r < 0)
                return fail("cannot reach trapstatd at %s: %s (is it running? try: systemctl start trapstatd)",
                            arg_socket, strerror(-r));
        r = varlink_client_call(c, method, parameters, 0);
        if (r >= 0)
                r = varlink_client_read_reply(c, &reply, &error, &continues);
        varlink_client_free(c);
        if (r < 0)
                return fail("%s on %s failed: %s", method, arg_socket, strerror(-r));

        if (error) {
                json_t *pid = json_object_get(reply, "pid");
                json_t *param = json_object_get(reply, "parameter");
                json_t *message = json_object_get(reply, "message");

                if (strcmp(error, "io.trapstat.NoSuchProcess") == 0)
                        r = fail("no process with pid %" JSON_INTEGER_FORMAT " is known to trapstatd", json_integer_value(pid));
                else if (strcmp(error, "org.varlink.service.PermissionDenied") == 0)
                        r = fail("permission denied: that process belongs to another user (root and group trapstat see all)");
                else if (strcmp(error, "org.varlink.service.InvalidParameter") == 0 && json_is_string(param))
                        r = fail("trapstatd rejected parameter '%s' of %s", json_string_value(param), method);
                else
                        r = fail("%s failed: %s%s%s", method, error, json_is_string(message) ? ": " : "",
                                 json_is_string(message) ? json_string_value(message) : "");
                json_decref(reply);
                return r;
        }
        *ret = reply;
        return 0;
}

static void print_json(json_t *reply) {
        char *s = json_dumps(reply, JSON_COMPACT);

        if (s) {
                puts(s);
                free(s);
        }
        fflush(stdout);
}

/* Whole numbers only, within [min, max]. */
static int parse_int_arg(const char *s, long long min, long long max, long long *ret) {
        char *end;
        long long v;

        errno = 0;
        if (!s || !*s)
                return -EINVAL;
        v = strtoll(s, &end, 10);
        if (errno != 0 || *end != '\0' || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static volatile sig_atomic_t quit = 0;

static void on_quit(int sig _unused_) {
        quit = 1;
}

/* Full-screen view: redraws every delay seconds, q quits. */
static int top_live(json_t *params, uint64_t delay_usec) {
        int r = 0;

        signal(SIGINT, on_quit);
        signal(SIGTERM, on_quit);
        initscr();
        cbreak();
        noecho();
        curs_set(0);
        timeout((int) (delay_usec / USEC_PER_MSEC));

        while (!quit) {
                json_t *reply = NULL;
                char *text = NULL, now[32];
                size_t size = 0;
                FILE *f;
                int ch;

                r = call("io.trapstat.Top", params, &reply);
                if (r != 0)
                        break;
                f = open_memstream(&text, &size);
                if (!f) {
                        json_decref(reply);
                        r = EXIT_FAILURE;
                        break;
                }
                fprintf(f, "trapstat top - %s - faults over the last %" JSON_INTEGER_FORMAT "s, sorted by %s   (q: quit)\n\n",
                        format_time_usec(now_usec(CLOCK_REALTIME), now),
                        json_integer_value(json_object_get(params, "windowSec")),
                        json_string_value(json_object_get(params, "sortBy")));
                print_top_table(f, json_object_get(reply, "rows"), LINES > 3 ? LINES - 3 : 0);
                fclose(f);
                json_decref(reply);
                erase();
                mvaddnstr(0, 0, text, (int) size);
                free(text);
                refresh();

                ch = getch();
                if (ch == 'q' || ch == 'Q')
                        break;
        }
        endwin();
        return r;
}

static int verb_top(int argc, char *argv[]) {
        static const struct option options[] = {
                { "batch", no_argument, NULL, 'b' },  { "iterations", required_argument, NULL, 'n' },
                { "delay", required_argument, NULL, 'd' }, { "window", required_argument, NULL, 'w' },
                { "sort", required_argument, NULL, 's' }, { "limit", required_argument, NULL, 'l' },
                { "help", no_argument, NULL, 'h' },   {},
        };
        long long iterations = -1, limit = 20, v;
        uint64_t delay = 2 * USEC_PER_SEC, window = 60 * USEC_PER_SEC;
        const char *sort = "user";
        _cleanup_json_ json_t *params = NULL;
        bool batch = false;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "bn:d:w:s:l:h", options, NULL)) >= 0)
                switch (c) {
                case 'b':
                        batch = true;
                        break;
                case 'n':
                        if (parse_int_arg(optarg, 1, INT32_MAX, &iterations) < 0)
                                return usage_error("invalid -n '%s': expected a positive count", optarg);
                        break;
                case 'd':
                        if (parse_duration_usec(optarg, &delay) < 0 || delay < 100 * USEC_PER_MSEC)
                                return usage_error("invalid -d '%s': expected seconds (at least 0.1s), e.g. 2 or 500ms", optarg);
                        break;
                case 'w':
                        if (parse_duration_usec(optarg, &window) < 0 || window < USEC_PER_SEC)
                                return usage_error("invalid --window '%s': expected a duration of 1s or more", optarg);
                        break;
                case 's':
                        if (!fault_field_by_name(optarg) && strcmp(optarg, "traps") != 0)
                                return usage_error("invalid --sort '%s': expected user, kernel, minor, major, read, write, exec, protection or traps", optarg);
                        sort = optarg;
                        break;
                case 'l':
                        if (parse_int_arg(optarg, 1, 10000, &limit) < 0)
                                return usage_error("invalid --limit '%s': expected 1 to 10000", optarg);
                        break;
                case 'h':
                        printf("Usage: trapstat top [-b] [-n N] [-d DELAY] [--window DURATION] [--sort FIELD] [--limit N]\n"
                               "Processes with the most page faults over the window (default 60s), refreshed every DELAY (2s).\n"
                               "  -b, --batch        plain tables on stdout, as top -b\n"
                               "  -n, --iterations N stop after N refreshes\n");
                        return 0;
                default:
                        usage_line(stderr);
                        return EXIT_USAGE;
                }
        if (optind < argc)
                return usage_error("top: unexpected argument '%s'", argv[optind]);

        params = json_pack("{s:I, s:s, s:I}", "windowSec", (json_int_t) (window / USEC_PER_SEC), "sortBy", sort,
                           "limit", (json_int_t) limit);
        if (!batch && !arg_json && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO))
                return top_live(params, delay);

        for (v = 0; iterations < 0 || v < iterations; v++) {
                json_t *reply;
                char now[32];
                int r;

                if (v > 0)
                        usleep((useconds_t) delay);
                r = call("io.trapstat.Top", params, &reply);
                if (r != 0)
                        return r;
                if (arg_json)
                        print_json(reply);
                else {
                        printf("%strapstat top - %s - faults over the last %" PRIu64 "s, sorted by %s\n", v > 0 ? "\n" : "",
                               format_time_usec(now_usec(CLOCK_REALTIME), now), window / USEC_PER_SEC, sort);
                        print_top_table(stdout, json_object_get(reply, "rows"), -1);
                        fflush(stdout);
                }
                json_decref(reply);
        }
        return 0;
}

static int verb_history(int argc, char *argv[]) {
        static const struct option options[] = {
                { "since", required_argument, NULL, 's' }, { "until", required_argument, NULL, 'u' },
                { "step", required_argument, NULL, 't' },  { "start-time", required_argument, NULL, 'T' },
                { "help", no_argument, NULL, 'h' },        {},
        };
        uint64_t since = 0, until = 0, step = 0, now = now_usec(CLOCK_REALTIME);
        long long pid, start_time = 0;
        _cleanup_json_ json_t *params = NULL, *reply = NULL;
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        if (parse_duration_usec(optarg, &since) < 0)
                                return usage_error("invalid --since '%s': expected a duration such as 90s, 15m, 2h, 3d", optarg);
                        break;
                case 'u':
                        if (parse_duration_usec(optarg, &until) < 0)
                                return usage_error("invalid --until '%s': expected a duration such as 90s, 15m, 2h, 3d", optarg);
                        break;
                case 't':
                        if (parse_duration_usec(optarg, &step) < 0 || step == 0 || step % (10 * USEC_PER_SEC) != 0)
                                return usage_error("invalid --step '%s': expected a multiple of 10s, e.g. 10s, 1m, 1h", optarg);
                        break;
                case 'T':
                        if (parse_int_arg(optarg, 1, INT64_MAX, &start_time) < 0)
                                return usage_error("invalid --start-time '%s': expected nanoseconds since boot", optarg);
                        break;
                case 'h':
                        printf("Usage: trapstat history PID [--since DURATION] [--until DURATION] [--step DURATION] [--start-time NS]\n"
                               "What process PID did over time; --since/--until are durations before now (e.g. 2h).\n");
                        return 0;
                default:
                        usage_line(stderr);
                        return EXIT_USAGE;
                }
        if (optind >= argc)
                return usage_error("history: missing PID");
        if (parse_int_arg(argv[optind], 1, UINT32_MAX, &pid) < 0)
                return usage_error("history: invalid pid '%s': expected a process id (a positive integer)", argv[optind]);
        if (optind + 1 < argc)
                return usage_error("history: unexpected argument '%s'", argv[optind + 1]);

        params = json_pack("{s:I}", "pid", (json_int_t) pid);
        if (start_time)
                json_object_set_new(params, "startTime", json_integer(start_time));
        if (since)
                json_object_set_new(params, "sinceUsec", json_integer_u64(since < now ? now - since : 0));
        if (until)
                json_object_set_new(params, "untilUsec", json_integer_u64(until < now ? now - until : 0));
        if (step)
                json_object_set_new(params, "resolutionSec", json_integer_u64(step / USEC_PER_SEC));

        r = call("io.trapstat.History", params, &reply);
        if (r != 0)
                return r;
        if (arg_json)
                print_json(reply);
        else
                print_history(stdout, reply);
        return 0;
}

static int verb_status(int argc, char *argv[]) {
        _cleanup_json_ json_t *reply = NULL;
        int r;

        if (argc > 1 && strcmp(argv[1], "--help") == 0) {
                printf("Usage: trapstat status\nState of trapstatd: sources, database, tick.\n");
                return 0;
        }
        if (argc > 1)
                return usage_error("status: unexpected argument '%s'", argv[1]);
        r = call("io.trapstat.GetStatus", NULL, &reply);
        if (r != 0)
                return r;
        if (arg_json)
                print_json(reply);
        else
                print_status(stdout, reply);
        return 0;
}

/* Raw varlink, for debugging and scripts: prints the reply's parameters as JSON. */
static int verb_call(int argc, char *argv[]) {
        _cleanup_json_ json_t *params = NULL, *reply = NULL;
        json_error_t error;
        int r;

        if (argc > 1 && strcmp(argv[1], "--help") == 0) {
                printf("Usage: trapstat call METHOD [PARAMETERS-JSON]\n"
                       "Calls a varlink method, e.g. trapstat call io.trapstat.ListProcesses '{\"pid\": 1}'.\n");
                return 0;
        }
        if (argc < 2)
                return usage_error("call: missing METHOD");
        if (argc > 3)
                return usage_error("call: unexpected argument '%s'", argv[3]);
        if (!strchr(argv[1], '.'))
                return usage_error("call: '%s' is not a qualified method name (interface.Method)", argv[1]);
        if (argc == 3) {
                params = json_loads(argv[2], JSON_REJECT_DUPLICATES, &error);
                if (!json_is_object(params))
                        return usage_error("call: parameters must be a JSON object: %s",
                                           params ? "not an object" : error.text);
        }
        r = call(argv[1], params, &reply);
        if (r != 0)
                return r;
        print_json(reply);
        return 0;
}

static const struct {
        const char *name;
        int (*run)(int argc, char *argv[]);
        const char *help;
} verbs[] = {
        { "top", verb_top, "processes with the most page faults, live or in batch (-b)" },
        { "history", verb_history, "what one process did over time, also after it exited" },
        { "status", verb_status, "state of the daemon and its event sources" },
        { "call", verb_call, "call a varlink method and print the reply as JSON" },
};

static void help(void) {
        usage_line(stdout);
        printf("\nCPU traps and page faults per process, from trapstatd.\n\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-8s %s\n", verbs[i].name, verbs[i].help);
        printf("\n  -S, --socket PATH  trapstatd's socket (default %s)\n"
               "  -j, --json         print the replies as JSON, one object per line\n"
               "  -h, --help         this help; 'trapstat VERB --help' for a verb's\n"
               "\nExit status: 0 success, 1 failure, 2 usage error.\n",
               DEFAULT_SOCKET);
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 'S' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        /* "+": stop at the verb; its own options follow it. */
        while ((c = getopt_long(argc, argv, "+S:jh", options, NULL)) >= 0)
                switch (c) {
                case 'S':
                        arg_socket = optarg;
                        break;
                case 'j':
                        arg_json = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_line(stderr);
                        return EXIT_USAGE;
                }
        if (optind >= argc)
                return usage_error("missing command");

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(argv[optind], verbs[i].name) == 0)
                        return verbs[i].run(argc - optind, argv + optind);
        return usage_error("unknown command '%s'", argv[optind]);
}

/* SPDX-License-Identifier: MIT */
/* trapstat top: the live view (ncurses, fed by the io.trapstat.Watch stream) and batch mode.
 *
 *   live (a terminal, no -b):  Watch; rates per second over each refresh (every tick, or ticks
 *                              summed over -d); keys change the sort, pause, quit.
 *   -b:                        Top over the last --window (default 60s) every -d (default 2s):
 *                              the first table comes at once and shows processes that exited
 *                              within the window, like top -b shows the current state.
 *   -b --stream:               Watch ticks summed over -d, as rates, like top -b -d.
 *   --json:                    the replies themselves, one per line: Watch per tick, or with -b
 *                              the Top reply per iteration. */

#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "counters.h"
#include "json-util.h"
#include "output.h"
#include "time-util.h"

/* How long a read of the stream blocks before the live view looks at the keyboard again. */
#define LIVE_POLL_USEC (100 * USEC_PER_MSEC)
/* Rows asked of the stream when --limit does not say: sorting is done here over the summed
 * ticks, so enough to fill any screen (live), or every process that matters in a table summed
 * over several ticks (-b --stream). */
#define LIVE_LIMIT 200
#define STREAM_LIMIT 1000

/* The sort columns of the rate table, in screen order, for the < and > keys. */
static const struct {
        const char *sort;  /* Watch/Top sortBy */
        const char *title; /* column header */
        int key;           /* letter selecting it */
} columns[] = {
        { "user", "USER/s", 'u' },
        { "kernel", "KERNEL/s", 'k' },
        { "major", "MAJOR/s", 'm' },
        { "traps", "TRAPS/s", 't' },
};

static const char *const top_usage =
        "Usage: trapstat top [-b [--stream]] [-n N] [-d SECONDS] [--window DURATION] [--sort FIELD] [--limit N]";

/* One process's counts summed over the ticks of a refresh. */
typedef struct TopRow {
        json_t *process; /* reference into a reply */
        int64_t pid, start_time;
        Faults faults;
        json_t *traps; /* owned: vector -> count */
        uint64_t n_traps;
} TopRow;

typedef struct TopFrame {
        TopRow *rows;
        size_t n_rows, n_alloc;
        Faults total;
        uint64_t total_traps;
        uint64_t interval_usec, time_usec, missed;
        uint64_t processes; /* most in one tick, also those past the limit */
        unsigned ticks;
} TopFrame;

static void top_frame_clear(TopFrame *f) {
        for (size_t i = 0; i < f->n_rows; i++) {
                json_decref(f->rows[i].process);
                json_decref(f->rows[i].traps);
        }
        free(f->rows);
        *f = (TopFrame) {};
}

static uint64_t json_u64(json_t *j) {
        return json_is_integer(j) && json_integer_value(j) > 0 ? (uint64_t) json_integer_value(j) : 0;
}

static int map_add(json_t *sum, json_t *add) {
        const char *key;
        json_t *v;

        json_object_foreach (add, key, v) {
                uint64_t n = json_u64(v) + json_u64(json_object_get(sum, key));

                if (json_object_set_new(sum, key, json_integer_u64(n)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Adds one Watch reply to the frame. -EBADMSG when it is not one. */
static int top_frame_add_tick(TopFrame *f, json_t *reply) {
        json_t *rows = json_object_get(reply, "rows"), *row, *total = json_object_get(reply, "total");
        Faults faults;
        size_t i;

        if (!json_is_array(rows) || !json_is_integer(json_object_get(reply, "intervalUsec")) ||
            faults_from_json(json_object_get(total, "faults"), &faults) < 0)
                return -EBADMSG;
        faults_add(&f->total, &faults);
        f->total_traps += map_total(json_object_get(total, "traps"));
        f->interval_usec += json_u64(json_object_get(reply, "intervalUsec"));
        f->time_usec = json_u64(json_object_get(reply, "timeUsec"));
        f->missed += json_u64(json_object_get(reply, "missedTicks"));
        f->processes = MAX(f->processes, json_u64(json_object_get(reply, "processes")));
        f->ticks++;

        json_array_foreach (rows, i, row) {
                json_t *p = json_object_get(row, "process"), *counters = json_object_get(row, "counters");
                int64_t pid = json_integer_value(json_object_get(p, "pid"));
                int64_t start = json_integer_value(json_object_get(p, "startTime"));
                TopRow *r = NULL;

                if (faults_from_json(json_object_get(counters, "faults"), &faults) < 0)
                        return -EBADMSG;
                for (size_t k = 0; k < f->n_rows; k++)
                        if (f->rows[k].pid == pid && f->rows[k].start_time == start) {
                                r = &f->rows[k];
                                break;
                        }
                if (!r) {
                        if (f->n_rows == f->n_alloc) {
                                size_t n = f->n_alloc ? f->n_alloc * 2 : 64;
                                TopRow *a = realloc(f->rows, n * sizeof(TopRow));

                                if (!a)
                                        return -ENOMEM;
                                f->rows = a;
                                f->n_alloc = n;
                        }
                        r = &f->rows[f->n_rows];
                        *r = (TopRow) { .pid = pid, .start_time = start, .traps = json_object() };
                        if (!r->traps)
                                return -ENOMEM;
                        f->n_rows++;
                }
                /* The newest tick's process (its comm may have changed at exec). */
                json_decref(r->process);
                r->process = json_incref(p);
                faults_add(&r->faults, &faults);
                r->n_traps += map_total(json_object_get(counters, "traps"));
                if (map_add(r->traps, json_object_get(counters, "traps")) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static uint64_t row_key(const TopRow *r, const SortKey *sort) {
        return sort->field ? faults_get(&r->faults, sort->field) : r->n_traps;
}

static int compare_rows(const void *a, const void *b, void *userdata) {
        const TopRow *x = a, *y = b;
        uint64_t kx = row_key(x, userdata), ky = row_key(y, userdata);

        if (kx != ky)
                return kx > ky ? -1 : 1;
        /* Then by all faults, then by pid: a stable order between refreshes. */
        if (x->faults.user + x->faults.kernel != y->faults.user + y->faults.kernel)
                return x->faults.user + x->faults.kernel > y->faults.user + y->faults.kernel ? -1 : 1;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void top_frame_sort(TopFrame *f, const SortKey *sort) {
        if (f->n_rows > 1)
                qsort_r(f->rows, f->n_rows, sizeof(TopRow), compare_rows, (void *) sort);
}

static double per_sec(uint64_t n, uint64_t interval_usec) {
        return interval_usec ? (double) n * (double) USEC_PER_SEC / (double) interval_usec : 0.0;
}

static int column_of(const SortKey *sort) {
        for (size_t i = 0; i < ELEMENTSOF(columns); i++)
                if (strcmp(columns[i].sort, sort->name) == 0)
                        return (int) i;
        return -1;
}

/* The column header; the sorted column is marked with a '*' when marks is set (no colors). */
static void format_header(char *buf, size_t size, const SortKey *sort, bool marks) {
        char cells[ELEMENTSOF(columns)][16];
        int sorted = column_of(sort);

        for (size_t i = 0; i < ELEMENTSOF(columns); i++)
                snprintf(cells[i], sizeof(cells[i]), "%s%s", marks && (int) i == sorted ? "*" : "", columns[i].title);
        snprintf(buf, size, "%7s %-15s %9s %9s %9s %9s  %-20s %s", "PID", "COMM", cells[0], cells[1], cells[2], cells[3],
                 "VECTORS/s", "UNIT");
}

/* One row of the rate table, malloc'd. comm and unit come from the process: escaped (for a
 * terminal that reads UTF-8 when utf8), comm fitted to its column by width, not bytes. */
static int format_row(const TopRow *r, uint64_t interval, bool utf8, char **ret) {
        char user[16], kernel[16], major[16], traps[16], vectors[64];
        const char *unit = json_string_value(json_object_get(r->process, "unit"));
        const char *comm = json_string_value(json_object_get(r->process, "comm"));
        _cleanup_free_ char *comm_cell = NULL, *unit_cell = NULL;

        if (format_cell(comm ?: "?", utf8, 15, 15, &comm_cell) < 0 || escape_untrusted(unit ?: "-", utf8, &unit_cell) < 0)
                return -ENOMEM;
        format_busiest(r->traps, 2, interval ? (double) interval / (double) USEC_PER_SEC : 1.0, vectors, sizeof(vectors));
        if (asprintf(ret, "%7" PRId64 " %s %9s %9s %9s %9s  %-20s %s", r->pid, comm_cell,
                     format_rate(per_sec(r->faults.user, interval), user),
                     format_rate(per_sec(r->faults.kernel, interval), kernel),
                     format_rate(per_sec(r->faults.major, interval), major), format_rate(per_sec(r->n_traps, interval), traps),
                     vectors, unit_cell) < 0)
                return -ENOMEM;
        return 0;
}

static void format_summary(char *buf, size_t size, const TopFrame *f) {
        char user[16], kernel[16], minor[16], major[16], traps[16];
        /* Over several ticks, the rows (every process up to the limit) or the busiest tick. */
        uint64_t processes = MAX((uint64_t) f->n_rows, f->processes);

        snprintf(buf, size, "all: user %s/s  kernel %s/s  minor %s/s  major %s/s  traps %s/s  %" PRIu64 " process%s%s",
                 format_rate(per_sec(f->total.user, f->interval_usec), user),
                 format_rate(per_sec(f->total.kernel, f->interval_usec), kernel),
                 format_rate(per_sec(f->total.minor, f->interval_usec), minor),
                 format_rate(per_sec(f->total.major, f->interval_usec), major),
                 format_rate(per_sec(f->total_traps, f->interval_usec), traps), processes,
                 processes == 1 ? "" : "es", f->missed ? "  (ticks missed: reading too slowly)" : "");
}

/* Opens a Watch stream; 0, or a negative errno, reported. */
static int watch_open(const SortKey *sort, long long limit, uint64_t timeout_usec, TrapstatClient **ret) {
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        int r;

        r = cli_connect(timeout_usec, &c);
        if (r < 0)
                return r;
        r = trapstat_client_watch(c, sort, (unsigned) limit);
        if (r == -ENOMEM)
                return report_errno(r, "out of memory");
        if (r < 0)
                return report_errno(r, "io.trapstat.Watch on %s failed: %s", arg_socket, strerror(-r));
        *ret = TAKE_PTR(c);
        return 0;
}

/* Reads the next reply of a stream: 0 and *ret; -ETIMEDOUT when none came within the
 * connection's timeout, not reported (the live view polls); or another negative errno,
 * reported. */
static int watch_read(TrapstatClient *c, json_t **ret, bool *ret_continues) {
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        int r;

        r = trapstat_client_read(c, ret, ret_continues, &error);
        if (r == -ETIMEDOUT)
                return r;
        if (r == -ECONNRESET)
                return report_errno(r, "trapstatd closed the Watch stream (did it stop? see journalctl -u trapstatd)");
        if (r < 0)
                return report_errno(r, "io.trapstat.Watch on %s failed: %s", arg_socket, strerror(-r));
        if (r == TRAPSTAT_ERROR_REPLY)
                return report_error_reply("io.trapstat.Watch", &error);
        return 0;
}

static volatile sig_atomic_t quit = 0;

static void on_quit(int sig _unused_) {
        quit = 1;
}

typedef struct TopOptions {
        bool batch, stream;
        long long iterations; /* -1: no end */
        uint64_t delay_usec;  /* 0: every tick (live) */
        uint64_t window_usec;
        SortKey sort;
        long long limit;
        bool limit_set;
} TopOptions;

static void draw_live(const TopFrame *f, const SortKey *sort, bool paused, bool color, bool utf8, const char *message) {
        char line[512], now[32];
        int sorted = column_of(sort);

        erase();
        if (f->ticks) {
                char span[32];

                snprintf(line, sizeof(line), "trapstat top - %s - %u tick%s over %s, sorted by %s%s",
                         format_time_usec(f->time_usec, now), f->ticks, f->ticks == 1 ? "" : "s",
                         format_duration_usec(f->interval_usec, span), sort->name, paused ? "   [PAUSED]" : "");
        } else
                snprintf(line, sizeof(line), "trapstat top - waiting for the first tick from %s%s", arg_socket,
                         paused ? "   [PAUSED]" : "");
        mvaddnstr(0, 0, line, COLS);
        format_summary(line, sizeof(line), f);
        mvaddnstr(1, 0, line, COLS);

        format_header(line, sizeof(line), sort, !color);
        attron(A_REVERSE);
        mvaddnstr(3, 0, line, COLS);
        for (int x = (int) strlen(line); x < COLS; x++)
                mvaddch(3, x, ' ');
        if (sorted >= 0) {
                /* Emphasize the sorted column: bold (and colored where allowed). */
                int x = 7 + 1 + 15 + 1 + sorted * 10;

                attron(A_BOLD);
                if (color)
                        attron(COLOR_PAIR(1));
                mvaddnstr(3, x, line + x, 9);
                if (color)
                        attroff(COLOR_PAIR(1));
                attroff(A_BOLD);
        }
        attroff(A_REVERSE);

        for (size_t i = 0; i < f->n_rows && (int) i + 4 < LINES - 1; i++) {
                _cleanup_free_ char *row = NULL;

                if (format_row(&f->rows[i], f->interval_usec, utf8, &row) < 0)
                        continue;
                if (color && f->rows[i].n_traps > 0)
                        attron(COLOR_PAIR(2));
                /* Cut at the screen's width in columns, never inside a character or an escape. */
                mvaddnstr((int) i + 4, 0, row, (int) text_prefix(row, (size_t) MAX(COLS, 0), NULL));
                if (color && f->rows[i].n_traps > 0)
                        attroff(COLOR_PAIR(2));
        }
        if (f->ticks && f->n_rows == 0)
                mvaddnstr(4, 0, "(no process faulted or trapped)", COLS);

        attron(A_BOLD);
        mvaddnstr(LINES - 1, 0,
                  message ?: "q quit  p pause  < > sort column  u k m t sort by user/kernel/major faults or traps  h help", COLS);
        attroff(A_BOLD);
        refresh();
}

static const char *live_help =
        "keys: q quit, p pause/resume, < > move the sort column, u user, k kernel, m major, t traps (any key: back)";

static int top_live(const TopOptions *o) {
        struct sigaction sa = { .sa_handler = on_quit }, old_int, old_term;
        TopFrame shown = {}, pending = {};
        SortKey sort = o->sort;
        TrapstatClient *c = NULL;
        bool paused = false, color, help = false, utf8 = locale_is_utf8();
        long long limit, refreshes = 0;
        int r, ret = 0;

        /* Without SA_RESTART: a blocked read ends early so the screen is restored promptly. */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);

        limit = o->limit_set ? o->limit : LIVE_LIMIT;
        if (watch_open(&sort, limit, LIVE_POLL_USEC, &c) < 0)
                return EXIT_FAILURE;

        if (!initscr()) {
                trapstat_client_free(c);
                return fail("cannot initialize the terminal (TERM=%s)", getenv("TERM") ?: "");
        }
        errors_hold();
        cbreak();
        noecho();
        nodelay(stdscr, TRUE);
        keypad(stdscr, TRUE);
        curs_set(0);
        color = use_color(stdout) && has_colors();
        if (color) {
                start_color();
                use_default_colors();
                init_pair(1, COLOR_CYAN, -1);
                init_pair(2, COLOR_RED, -1);
        }
        draw_live(&shown, &sort, paused, color, utf8, NULL);

        while (!quit) {
                json_t *reply = NULL;
                bool continues = true, redraw = false;
                int ch;

                r = watch_read(c, &reply, &continues);
                if (r < 0 && r != -ETIMEDOUT) {
                        ret = EXIT_FAILURE;
                        break;
                }
                if (r >= 0) {
                        r = top_frame_add_tick(&pending, reply);
                        json_decref(reply);
                        if (r < 0) {
                                ret = fail("trapstatd sent a malformed Watch reply");
                                break;
                        }
                        if (pending.interval_usec >= o->delay_usec) {
                                if (!paused) {
                                        top_frame_clear(&shown);
                                        shown = pending;
                                        top_frame_sort(&shown, &sort);
                                        redraw = true;
                                        /* -n: like top, leave after that many refreshes. */
                                        if (o->iterations > 0 && ++refreshes >= o->iterations)
                                                quit = 1;
                                } else
                                        top_frame_clear(&pending);
                                pending = (TopFrame) {};
                        }
                        if (!continues)
                                break;
                }

                while ((ch = getch()) != ERR) {
                        int col = column_of(&sort);
                        const char *new_sort = sort.name;

                        if (help) {
                                help = false;
                                redraw = true;
                                if (ch != 'q' && ch != 'Q')
                                        continue;
                        }
                        switch (ch) {
                        case 'q':
                        case 'Q':
                                quit = 1;
                                break;
                        case 'p':
                        case 'P':
                        case ' ':
                                paused = !paused;
                                redraw = true;
                                break;
                        case '<':
                                new_sort = columns[col <= 0 ? 0 : col - 1].sort;
                                break;
                        case '>':
                                new_sort = columns[col < 0 ? 0 : MIN(col + 1, (int) ELEMENTSOF(columns) - 1)].sort;
                                break;
                        case 'h':
                        case '?':
                                help = true;
                                break;
                        case KEY_RESIZE:
                                redraw = true;
                                break;
                        default:
                                for (size_t i = 0; i < ELEMENTSOF(columns); i++)
                                        if (ch == columns[i].key || ch == columns[i].key - 'a' + 'A')
                                                new_sort = columns[i].sort;
                        }
                        /* The sort already shown changes nothing; columns[] names only sort keys, so
                         * the parse cannot fail. */
                        if (strcmp(new_sort, sort.name) != 0 && sort_key_from_name(new_sort, &sort) == 0) {
                                /* The daemon picks each tick's rows by the sort: restart the stream,
                                 * and re-sort what is on screen right away. */
                                top_frame_sort(&shown, &sort);
                                top_frame_clear(&pending);
                                c = trapstat_client_free(c);
                                if (watch_open(&sort, limit, LIVE_POLL_USEC, &c) < 0) {
                                        ret = EXIT_FAILURE;
                                        quit = 1;
                                        break;
                                }
                                redraw = true;
                        }
                }
                if (help)
                        draw_live(&shown, &sort, paused, color, utf8, live_help);
                else if (redraw && !quit)
                        draw_live(&shown, &sort, paused, color, utf8, NULL);
        }

        endwin();
        errors_release();
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        trapstat_client_free(c);
        top_frame_clear(&shown);
        top_frame_clear(&pending);
        return ret;
}

/* Watch replies as they come (--json), or summed into a rate table every delay (-b --stream). */
static int top_stream(const TopOptions *o) {
        OutputStyle style = { .tty = isatty(STDOUT_FILENO), .color = use_color(stdout), .utf8 = locale_is_utf8() };
        TrapstatClient *c = NULL;
        TopFrame frame = {};
        long long printed = 0;
        int r, ret = 0;

        /* With --json the replies are the output: as many rows as a Watch gives by default. */
        if (watch_open(&o->sort, o->limit_set ? o->limit : arg_json ? TOP_DEFAULT_LIMIT : STREAM_LIMIT, CALL_TIMEOUT_USEC,
                       &c) < 0)
                return EXIT_FAILURE;
        while (o->iterations < 0 || printed < o->iterations) {
                json_t *reply = NULL;
                bool continues = true;

                r = watch_read(c, &reply, &continues);
                if (r < 0) {
                        if (r == -ETIMEDOUT)
                                fail("no reply from trapstatd's Watch stream in %" PRIu64 "s", CALL_TIMEOUT_USEC / USEC_PER_SEC);
                        ret = EXIT_FAILURE;
                        break;
                }
                if (arg_json) {
                        print_json(reply);
                        printed++;
                } else {
                        r = top_frame_add_tick(&frame, reply);
                        if (r < 0) {
                                json_decref(reply);
                                ret = fail("trapstatd sent a malformed Watch reply");
                                break;
                        }
                        if (frame.interval_usec >= o->delay_usec) {
                                char line[512], now[32], span[32];

                                top_frame_sort(&frame, &o->sort);
                                printf("%strapstat top - %s - rates over %s (%u tick%s), sorted by %s\n", printed ? "\n" : "",
                                       format_time_usec(frame.time_usec, now), format_duration_usec(frame.interval_usec, span),
                                       frame.ticks, frame.ticks == 1 ? "" : "s", o->sort.name);
                                format_summary(line, sizeof(line), &frame);
                                printf("%s\n", line);
                                format_header(line, sizeof(line), &o->sort, false);
                                printf("%s%s%s\n", style.color ? "\033[1m" : "", line, style.color ? "\033[0m" : "");
                                for (size_t i = 0; i < frame.n_rows && (!o->limit_set || (long long) i < o->limit); i++) {
                                        _cleanup_free_ char *row = NULL;

                                        if (format_row(&frame.rows[i], frame.interval_usec, style.utf8, &row) < 0) {
                                                ret = fail("out of memory");
                                                break;
                                        }
                                        printf("%s\n", row);
                                }
                                if (ret == 0 && fflush(stdout) != 0)
                                        ret = fail("writing to stdout failed: %m");
                                if (ret != 0) {
                                        json_decref(reply);
                                        break;
                                }
                                top_frame_clear(&frame);
                                printed++;
                        }
                }
                json_decref(reply);
                if (!continues)
                        break;
        }
        top_frame_clear(&frame);
        trapstat_client_free(c);
        return ret;
}

/* Top over the window, every delay. */
static int top_batch(const TopOptions *o) {
        OutputStyle style = { .tty = isatty(STDOUT_FILENO), .color = use_color(stdout), .utf8 = locale_is_utf8() };
        _cleanup_json_ json_t *params = json_pack("{s:I, s:s, s:I}", "windowSec", (json_int_t) (o->window_usec / USEC_PER_SEC),
                                                  "sortBy", o->sort.name, "limit", (json_int_t) o->limit);

        if (!params)
                return fail("out of memory");
        for (long long v = 0; o->iterations < 0 || v < o->iterations; v++) {
                json_t *reply;
                char now[32], window[32];

                if (v > 0) {
                        struct timespec ts = { .tv_sec = (time_t) (o->delay_usec / USEC_PER_SEC),
                                               .tv_nsec = (long) (o->delay_usec % USEC_PER_SEC * 1000) };
                        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                                ;
                }
                if (cli_call("io.trapstat.Top", params, &reply) < 0)
                        return EXIT_FAILURE;
                if (arg_json)
                        print_json(reply);
                else {
                        printf("%strapstat top - %s - counts over the last %s, sorted by %s\n", v > 0 ? "\n" : "",
                               format_time_usec(now_usec(CLOCK_REALTIME), now), format_duration_usec(o->window_usec, window),
                               o->sort.name);
                        print_top_table(stdout, &style, json_object_get(reply, "rows"), -1);
                }
                json_decref(reply);
                if (fflush(stdout) != 0)
                        return fail("writing to stdout failed: %m");
        }
        return 0;
}

int verb_top(int argc, char *argv[]) {
        static const struct option options[] = {
                { "batch", no_argument, NULL, 'b' },       { "iterations", required_argument, NULL, 'n' },
                { "delay", required_argument, NULL, 'd' }, { "window", required_argument, NULL, 'w' },
                { "sort", required_argument, NULL, 's' },  { "limit", required_argument, NULL, 'l' },
                { "stream", no_argument, NULL, 'S' },      { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },        {},
        };
        TopOptions o = { .iterations = -1, .window_usec = TOP_DEFAULT_WINDOW_SEC * USEC_PER_SEC, .limit = TOP_DEFAULT_LIMIT };
        bool delay_set = false;
        uint64_t delay = 0;
        int c;

        /* The default sort, a Faults member: this cannot fail. */
        (void) sort_key_from_name("user", &o.sort);
        optind = 0;
        while ((c = getopt_long(argc, argv, "bn:d:w:s:l:h", options, NULL)) >= 0)
                switch (c) {
                case 'b':
                        o.batch = true;
                        break;
                case 'S':
                        o.stream = true;
                        break;
                case 'j':
                        arg_json = true;
                        break;
                case 'n':
                        if (parse_int_arg(optarg, 1, INT32_MAX, &o.iterations) < 0)
                                return usage_error(top_usage, "invalid -n '%s': expected a positive count", optarg);
                        break;
                case 'd':
                        if (parse_duration_usec(optarg, &delay) < 0 || delay < 100 * USEC_PER_MSEC || delay > 86400 * USEC_PER_SEC)
                                return usage_error(top_usage, "invalid -d '%s': expected seconds (0.1s to 1d), e.g. 2 or 500ms", optarg);
                        delay_set = true;
                        break;
                case 'w':
                        if (parse_duration_usec(optarg, &o.window_usec) < 0 || o.window_usec < USEC_PER_SEC ||
                            o.window_usec / USEC_PER_SEC > INT32_MAX)
                                return usage_error(top_usage, "invalid --window '%s': expected a duration of 1s or more", optarg);
                        break;
                case 's':
                        if (sort_key_from_name(optarg, &o.sort) < 0)
                                return usage_error(top_usage,
                                                   "invalid --sort '%s': expected user, kernel, minor, major, read, write, exec, protection or traps",
                                                   optarg);
                        break;
                case 'l':
                        if (parse_int_arg(optarg, 1, TOP_MAX_LIMIT, &o.limit) < 0)
                                return usage_error(top_usage, "invalid --limit '%s': expected 1 to %d", optarg, TOP_MAX_LIMIT);
                        o.limit_set = true;
                        break;
                case 'h':
                        printf("%s\n\n"
                               "Processes faulting and trapping now. On a terminal: a live view fed by trapstatd's\n"
                               "Watch stream, per-second rates refreshed every tick (or every -d). Columns: pid, command,\n"
                               "user-mode, kernel-mode and major page faults per second, traps per second, the busiest\n"
                               "trap vectors, the systemd unit.\n\n"
                               "Keys: q quit; p (or space) pause and resume; < and > move the sort column; u, k, m, t\n"
                               "sort by user, kernel, major faults or traps; h help. Ctrl-C also restores the terminal.\n\n"
                               "  -b, --batch         plain tables on stdout, as top -b: counts of the last --window,\n"
                               "                      from the history (also processes that exited), every -d\n"
                               "      --stream        with -b: rates from the Watch stream summed over -d instead\n"
                               "  -n, --iterations N  stop after N tables, N live refreshes, or N replies (--json)\n"
                               "  -d, --delay SECONDS between tables, e.g. 2 or 500ms (default 2s with -b; live: every tick)\n"
                               "  -w, --window DURATION  with -b: look-back of each table (default %ds)\n"
                               "  -s, --sort FIELD    user (default), kernel, minor, major, read, write, exec, protection, traps\n"
                               "  -l, --limit N       at most N rows (default %d with -b)\n"
                               "      --json          the replies as JSON, one per line: a Watch reply per tick, or with -b\n"
                               "                      the Top reply per table\n\n"
                               "Without a terminal on stdin and stdout, top behaves as with -b.\n",
                               top_usage, TOP_DEFAULT_WINDOW_SEC, TOP_DEFAULT_LIMIT);
                        return 0;
                default:
                        fprintf(stderr, "%s\n", top_usage);
                        return EXIT_USAGE;
                }
        if (optind < argc)
                return usage_error(top_usage, "top: unexpected argument '%s'", argv[optind]);
        if (o.stream && !o.batch)
                return usage_error(top_usage, "top: --stream goes with -b");

        if (arg_json && !o.batch) {
                o.stream = true;
                return top_stream(&o);
        }
        if (!o.batch && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO)) {
                o.delay_usec = delay_set ? delay : 0;
                return top_live(&o);
        }
        o.delay_usec = delay_set ? delay : 2 * USEC_PER_SEC;
        if (o.stream)
                return top_stream(&o);
        return top_batch(&o);
}

/* SPDX-License-Identifier: MIT */
/* trapstat top's live view: ncurses over a TopTable, seeded from Top and fed by Watch.
 *
 * Rows stay: a process that trapped once is still listed minutes later with its total, marked
 * when it exited. When trapstatd goes away the view says so and reconnects (a restart, socket
 * activation), keeping its totals. Keys sort, pause, group, filter; h lists them all. */

#include <curses.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json-util.h"
#include "output.h"
#include "top-common.h"
#include "top-live.h"

/* How long a read of the stream blocks before the view looks at the keyboard again. */
#define LIVE_POLL_USEC (100 * USEC_PER_MSEC)
/* Rows asked of each Watch tick: every process that matters on a screen, summed here. */
#define LIVE_WATCH_LIMIT 1000
/* Rows of the seed (Top over --window) and most rows kept. */
#define LIVE_SEED_LIMIT 1000
#define LIVE_MAX_ROWS 10000
/* A row that trapped is highlighted for this many refreshes. */
#define LIVE_TRAP_HIGHLIGHT 5
/* Between two attempts to reach a daemon that went away: what the daemon counts between its
 * start and the view's return is in its history, not in the view's totals. */
#define LIVE_RECONNECT_USEC (500 * USEC_PER_MSEC)
/* How long a message about a key (a bad filter) stays on the status line. */
#define LIVE_MESSAGE_USEC (4 * USEC_PER_SEC)

static volatile sig_atomic_t quit = 0;

static void on_quit(int sig _unused_) {
        quit = 1;
}

/* A filter being typed at the bottom line. */
typedef struct Prompt {
        int key; /* 0: none; 'P', 'U', 'N', 'C' */
        char text[MAX_UNIT_NAME + 1];
        size_t len;
} Prompt;

typedef struct Live {
        const TopOptions *o;
        TopTable table;
        ProcessFilter filter;
        TopGroup group;
        SortKey sort;
        TrapstatClient *c;
        uint64_t started_usec;     /* totals count from here (the seed's window before the view) */
        uint64_t gone_usec;        /* when the daemon went away; 0: connected */
        uint64_t next_attempt_usec;
        unsigned attempts;
        char message[256]; /* shown on the status line until message_until */
        uint64_t message_until;
        bool paused, help, color, utf8;
        TopLayout layout; /* of the rows last drawn: the columns < and > move over */
        Prompt prompt;
        long long refreshes;
} Live;

static void live_message(Live *l, const char *fmt, ...) _printf_(2, 3);
static void live_message(Live *l, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(l->message, sizeof(l->message), fmt, ap);
        va_end(ap);
        l->message_until = now_usec(CLOCK_MONOTONIC) + LIVE_MESSAGE_USEC;
}

/* The filter as the command line would give it, for the header: " -p 1,2 --unit x", or "". */
static void format_filter(const ProcessFilter *f, char *buf, size_t size) {
        size_t n = 0;
        char user[32];

#define APPEND(...) (n += (size_t) snprintf(buf + MIN(n, size - 1), size - MIN(n, size - 1), __VA_ARGS__))
        buf[0] = '\0';
        for (size_t i = 0; i < f->n_pids; i++)
                APPEND("%s%" PRIu32, i == 0 ? " -p " : ",", f->pids[i]);
        if (f->uid >= 0)
                APPEND(" -u %s", format_user((uint64_t) f->uid, user));
        if (f->unit)
                APPEND(" --unit %s", f->unit);
        if (f->comm)
                APPEND(" --comm %s", f->comm);
        if (f->container)
                APPEND(" --container %s", f->container);
#undef APPEND
}

/* (Re)starts the view's data for the current filter: Top over the window as the seed, then the
 * Watch stream, both on one new connection. 0, or a negative errno with the reason in *ret_why
 * (reported by the caller). */
static int live_start(Live *l, char *why, size_t why_size) {
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        _cleanup_(trapstat_top_reply_done) TrapstatTopReply seed = {};
        _cleanup_free_ char *message = NULL;
        int r;

        top_table_done(&l->table);
        top_table_init(&l->table, LIVE_MAX_ROWS, l->o->window_usec);
        l->started_usec = now_usec(CLOCK_REALTIME) - l->o->window_usec;

        /* Reads of the stream wait LIVE_POLL_USEC, to look at the keyboard between them; the seed
         * waits as long as any call. */
        l->c = trapstat_client_free(l->c);
        r = trapstat_client_connect(arg_socket, LIVE_POLL_USEC, &l->c);
        if (r >= 0) {
                trapstat_client_set_call_timeout(l->c, CALL_TIMEOUT_USEC);
                r = top_call_top(l->c, &l->filter, &l->sort, l->o->window_usec, LIVE_SEED_LIMIT, &seed, &error);
        }
        if (r == TRAPSTAT_ERROR_REPLY) {
                (void) trapstat_error_message("io.trapstat.Top", &error, &message);
                snprintf(why, why_size, "%s", message ?: error.name);
                return -EBADR;
        }
        if (r < 0) {
                snprintf(why, why_size, "cannot reach trapstatd at %s: %s", arg_socket, strerror(-r));
                return r;
        }
        r = top_table_seed(&l->table, seed.json);
        if (r < 0) {
                snprintf(why, why_size, "trapstatd sent a malformed Top reply");
                return r;
        }
        r = top_watch_start(l->c, &l->sort, &l->filter, LIVE_WATCH_LIMIT);
        if (r < 0) {
                snprintf(why, why_size, "io.trapstat.Watch on %s failed: %s", arg_socket, strerror(-r));
                return r;
        }
        return 0;
}

static char row_state(const Live *l, const TopRow *r) {
        if (r->exited)
                return 'X';
        if (top_row_trapped_recently(&l->table, r, LIVE_TRAP_HIGHLIGHT))
                return 'T';
        return ' ';
}

static const char *live_keys_line =
        "q quit  p pause  < > sort  u k m f a s t w d sort by  g group  P U N C filter  = clear  h help";

static const char *const live_help[] = {
        "trapstat top: keys",
        "",
        "  q, Ctrl-C     quit",
        "  p, space      pause and resume the screen (counting goes on)",
        "  < >           move the sort column left, right",
        "  u k m t w     sort by user, kernel, major faults, traps, fault time (then by total)",
        "  f a s         sort by major faults of a file, of anonymous memory, of shared memory",
        "  d             sort by memory stall (%STALL)",
        "  g             group rows: per process, by unit, by comm, by user, by container",
        "  P             show only these pids (e.g. 123,456; empty: all)",
        "  U             show only this user (name or uid; empty: all)",
        "  N             show only this unit (a glob; a name without a dot gets .service)",
        "  C             show only commands matching this glob (e.g. post*)",
        "  =             clear every filter (--container too)",
        "  h, ?          this help",
        "",
        "Columns: rates over the last refresh (per second), then totals since the view started",
        "(the --window before it included). S: X exited, T trapped in the last 5 refreshes.",
        "%FAULT: time spent waiting on page faults, per second, as %CPU (100: one thread always).",
        "FILE/s ANON/s SHMEM/s: major faults by cause, a file read in or memory swapped in; shown",
        "once a row has one (Linux 5.17 and later) or sorted by one; they can sum to less than MAJOR/s.",
        "%STALL: time waited on memory (swap-in, thrashing, direct reclaim and compaction), per second,",
        "as %CPU; the kernel's delay accounting: shown while it keeps it (sysctl kernel.task_delayacct=1),",
        "\"-\" for a process it did not count.",
        "",
        "Any key returns to the view.",
};

static void draw_help(void) {
        erase();
        for (size_t i = 0; i < ELEMENTSOF(live_help) && (int) i < LINES; i++)
                mvaddnstr((int) i, 0, live_help[i], COLS);
        refresh();
}

static const char *prompt_title(int key) {
        switch (key) {
        case 'P':
                return "pids (e.g. 123,456; empty: all)";
        case 'U':
                return "user (name or uid; empty: all)";
        case 'N':
                return "unit (glob; empty: all)";
        default:
                return "comm (glob; empty: all)";
        }
}

/* The first two lines: what the view shows, and the "all:" line. */
static void draw_title(Live *l) {
        char line[1024], now[32], since[32], filter[512];

        format_filter(&l->filter, filter, sizeof(filter));
        if (l->table.refreshes > 0) {
                char span[32];

                snprintf(line, sizeof(line), "trapstat top - %s - rates over %s, totals since %s, sorted by %s%s%s%s%s",
                         format_time_usec(l->table.time_usec, now), format_duration_usec(l->table.interval_usec, span),
                         format_time_usec(l->started_usec, since), l->sort.name,
                         l->group != TOP_GROUP_PROCESS ? ", by " : "",
                         l->group != TOP_GROUP_PROCESS ? top_group_name(l->group) : "", filter,
                         l->paused ? "   [PAUSED]" : "");
        } else
                snprintf(line, sizeof(line), "trapstat top - waiting for the first tick from %s%s%s", arg_socket, filter,
                         l->paused ? "   [PAUSED]" : "");
        mvaddnstr(0, 0, line, COLS);
        top_format_summary(line, sizeof(line), &l->table);
        mvaddnstr(1, 0, line, COLS);
}

/* The status line: the daemon's absence, or a message about a key. */
static void draw_status(Live *l) {
        char line[1024];

        if (l->gone_usec) {
                char at[32];

                snprintf(line, sizeof(line), "trapstatd went away at %s: reconnecting to %s (attempt %u); totals kept",
                         format_time_usec(l->gone_usec, at), arg_socket, l->attempts);
                attron(A_BOLD);
                mvaddnstr(2, 0, line, COLS);
                attroff(A_BOLD);
        } else if (l->message[0] && now_usec(CLOCK_MONOTONIC) < l->message_until)
                mvaddnstr(2, 0, l->message, COLS);
}

/* The column header, reversed, the sorted column in bold (and color). */
static void draw_header(Live *l, const TopLayout *layout) {
        char line[1024];
        int sorted_x;

        top_format_header(line, sizeof(line), &l->sort, l->group, layout, !l->color, &sorted_x);
        attron(A_REVERSE);
        mvaddnstr(3, 0, line, COLS);
        for (int x = (int) strlen(line); x < COLS; x++)
                mvaddch(3, x, ' ');
        if (sorted_x >= 0 && sorted_x < (int) strlen(line)) {
                attron(A_BOLD);
                if (l->color)
                        attron(COLOR_PAIR(1));
                mvaddnstr(3, sorted_x, line + sorted_x, 9);
                if (l->color)
                        attroff(COLOR_PAIR(1));
                attroff(A_BOLD);
        }
        attroff(A_REVERSE);
}

/* The rows from line 4 down to the last but one. */
static void draw_rows(Live *l, const TopLayout *layout, const TopRow *view, size_t n_view) {
        int y = 4;

        for (size_t i = 0; i < n_view && y < LINES - 1; i++, y++) {
                _cleanup_free_ char *row = NULL;
                char state = l->group == TOP_GROUP_PROCESS ? row_state(l, &view[i])
                                                           : (view[i].exited_processes == view[i].processes ? 'X'
                                                              : top_row_trapped_recently(&l->table, &view[i], LIVE_TRAP_HIGHLIGHT) ? 'T'
                                                                                                                                        : ' ');
                attr_t attr = state == 'T' ? A_BOLD : state == 'X' ? A_DIM : A_NORMAL;

                if (top_format_row(&view[i], l->group, layout, l->table.interval_usec, state, l->utf8, &row) < 0)
                        continue;
                attron(attr);
                if (l->color && state == 'T')
                        attron(COLOR_PAIR(2));
                /* Cut at the screen's width in columns, never inside a character or an escape. */
                mvaddnstr(y, 0, row, (int) text_prefix(row, (size_t) MAX(COLS, 0), NULL));
                if (l->color && state == 'T')
                        attroff(COLOR_PAIR(2));
                attroff(attr);
        }
        if (l->table.refreshes > 0 && n_view == 0)
                mvaddnstr(4, 0,
                          process_filter_is_empty(&l->filter) ? "(no process faulted or trapped since the view started)"
                                                              : "(no process of the filter faulted or trapped since the view started)",
                          COLS);
}

/* The bottom line: the filter prompt being typed, or the keys. */
static void draw_bottom(Live *l) {
        char line[1024];

        attron(A_BOLD);
        if (l->prompt.key) {
                snprintf(line, sizeof(line), "%s: %.*s", prompt_title(l->prompt.key), (int) l->prompt.len, l->prompt.text);
                mvaddnstr(LINES - 1, 0, line, COLS);
        } else
                mvaddnstr(LINES - 1, 0, live_keys_line, COLS);
        attroff(A_BOLD);
}

static void draw_live(Live *l) {
        TopRow *view = NULL;
        TopLayout layout;
        size_t n_view = 0;

        if (l->help) {
                draw_help();
                return;
        }
        if (top_table_view(&l->table, &l->filter, l->group, &l->sort, &view, &n_view) < 0)
                return;
        /* The columns of the rows on the screen (lines 4 to the last but one). */
        top_rows_layout(view, MIN(n_view, (size_t) MAX(LINES - 5, 0)), l->group, &l->sort, l->utf8, &layout);
        l->layout = layout;

        erase();
        draw_title(l);
        draw_status(l);
        draw_header(l, &layout);
        draw_rows(l, &layout, view, n_view);
        draw_bottom(l);
        refresh();
        top_rows_free(view, n_view);
}

/* Applies what was typed at a filter prompt: true when the filter changed. */
static bool prompt_apply(Live *l) {
        ProcessFilter f = l->filter;
        char *text = l->prompt.text;
        int64_t uid;

        text[l->prompt.len] = '\0';
        switch (l->prompt.key) {
        case 'P':
                if (text[0] == '\0')
                        f.n_pids = 0;
                else if (process_filter_parse_pids(&f, text) < 0) {
                        live_message(l, "not a list of pids: '%s' (e.g. 123,456; at most %d)", text, MAX_FILTER_PIDS);
                        return false;
                }
                break;
        case 'U':
                if (text[0] == '\0')
                        f.uid = -1;
                else if (top_parse_user(text, &uid) < 0) {
                        live_message(l, "no such user: '%s'", text);
                        return false;
                } else
                        f.uid = uid;
                break;
        case 'N':
        case 'C': {
                char **field = l->prompt.key == 'N' ? &l->filter.unit : &l->filter.comm;
                char *v = NULL;

                if (text[0] && !(v = l->prompt.key == 'N' ? top_unit_glob(text) : strdup(text))) {
                        live_message(l, "out of memory");
                        return false;
                }
                free(*field);
                *field = v;
                return true;
        }
        default:
                return false;
        }
        /* Only pids and uid changed: the strings are still l->filter's own. */
        l->filter = f;
        return true;
}

/* A key typed while a prompt is open. true when the prompt was applied and changed the filter. */
static bool prompt_key(Live *l, int ch) {
        switch (ch) {
        case '\n':
        case '\r':
        case KEY_ENTER: {
                bool changed = prompt_apply(l);

                l->prompt.key = 0;
                return changed;
        }
        case 27: /* Esc */
                l->prompt.key = 0;
                return false;
        case KEY_BACKSPACE:
        case 127:
        case 8:
                if (l->prompt.len > 0)
                        l->prompt.len--;
                return false;
        default:
                if (ch >= 32 && ch < 127 && l->prompt.len < sizeof(l->prompt.text) - 1)
                        l->prompt.text[l->prompt.len++] = (char) ch;
                return false;
        }
}

/* The daemon went away (or a call on it failed): start reconnecting. */
static void live_gone(Live *l) {
        l->c = trapstat_client_free(l->c);
        if (!l->gone_usec) {
                l->gone_usec = now_usec(CLOCK_REALTIME);
                l->attempts = 0;
        }
        l->next_attempt_usec = now_usec(CLOCK_MONOTONIC) + LIVE_RECONNECT_USEC;
}

/* One attempt to reach the daemon again; the totals stay. 0 when back, or a negative errno. */
static int live_reconnect(Live *l) {
        int r;

        l->attempts++;
        l->next_attempt_usec = now_usec(CLOCK_MONOTONIC) + LIVE_RECONNECT_USEC;
        r = top_watch_open(&l->sort, &l->filter, LIVE_WATCH_LIMIT, LIVE_POLL_USEC, &l->c);
        if (r < 0)
                return r;
        l->gone_usec = 0;
        live_message(l, "reconnected to trapstatd");
        return 0;
}

/* Reads what the stream has. 0 to go on, or EXIT_FAILURE with the reason reported. */
static int live_read(Live *l, bool *redraw) {
        _cleanup_(trapstat_error_done) TrapstatError error = {};
        _cleanup_(trapstat_watch_reply_done) TrapstatWatchReply reply = {};
        int r;

        r = trapstat_watch_read(l->c, &reply, &error);
        if (r == -ETIMEDOUT)
                return 0;
        if (r == TRAPSTAT_ERROR_REPLY) {
                /* A refusal (a bad filter, a limit) does not go away by reconnecting. */
                if (strcmp(error.name, TRAPSTAT_ERROR_TOO_MANY_CONNECTIONS) != 0) {
                        report_error_reply("io.trapstat.Watch", &error);
                        return EXIT_FAILURE;
                }
                live_gone(l);
                *redraw = true;
                return 0;
        }
        if (r < 0 || !reply.continues) {
                live_gone(l);
                *redraw = true;
                return 0;
        }
        if (top_table_add_tick(&l->table, reply.json) < 0)
                return fail("trapstatd sent a malformed Watch reply");
        if (l->table.pending_interval_usec >= l->o->delay_usec && !l->paused) {
                top_table_refresh(&l->table, l->table.time_usec);
                *redraw = true;
                /* -n: like top, leave after that many refreshes. */
                if (l->o->iterations > 0 && ++l->refreshes >= l->o->iterations)
                        quit = 1;
        }
        return 0;
}

/* Restarts the view's data for a new filter or sort. 0, or EXIT_FAILURE reported. */
static int live_restart(Live *l) {
        char why[512];
        int r;

        r = live_start(l, why, sizeof(why));
        if (r == -EBADR || r == -EBADMSG || r == -ENOMEM)
                return fail("%s", why);
        if (r < 0)
                live_gone(l);
        return 0;
}

/* Why top_columns[i], hidden, has nothing to sort by: no row knows what it shows (an older
 * trapstatd would refuse the sort, one that does not count it has nothing to sort by). NULL when
 * a row knows it. */
static const char *column_unknown(const Live *l, size_t i) {
        SortKey key;

        if (sort_key_from_name(top_columns[i].sort, &key) < 0)
                return "unknown column";
        if (key.what == SORT_STALL)
                return top_table_knows_stall(&l->table)
                               ? NULL
                               : "no row here knows the memory stall: the kernel keeps its delay accounting only with "
                                 "sysctl kernel.task_delayacct=1 (trapstat status says why)";
        return top_table_knows_major_causes(&l->table)
                       ? NULL
                       : "no row here knows major faults by cause: trapstatd counts them on Linux 5.17 and later, "
                         "unless --disable-source major_cause";
}

/* The sort a key picks: < and > the column shown next to the sorted one, a column's letter its
 * column (a major cause's and %STALL shown once sorted by); NULL for another key, and for a
 * hidden column no row knows (said on the status line). */
static const char *key_sort(Live *l, int ch) {
        if (ch == '<' || ch == '>')
                return top_columns[top_column_step(top_column_of(&l->sort), ch == '<' ? -1 : 1, &l->layout)].sort;
        for (size_t i = 0; i < ELEMENTSOF(top_columns); i++) {
                const char *why;

                if (ch != top_columns[i].key)
                        continue;
                if (top_column_shown(i, &l->layout) || !(why = column_unknown(l, i)))
                        return top_columns[i].sort;
                live_message(l, "%s", why);
                return NULL;
        }
        return NULL;
}

/* Sorts by new_sort (NULL: as it is). The daemon picks each tick's rows by the sort: the stream
 * starts over (the totals stay). */
static void live_sort(Live *l, const char *new_sort) {
        if (!new_sort || strcmp(new_sort, l->sort.name) == 0 || sort_key_from_name(new_sort, &l->sort) < 0 ||
            l->gone_usec)
                return;
        l->c = trapstat_client_free(l->c);
        if (top_watch_open(&l->sort, &l->filter, LIVE_WATCH_LIMIT, LIVE_POLL_USEC, &l->c) < 0)
                live_gone(l);
}

/* A key in the view. 0 to go on, or EXIT_FAILURE reported. */
static int live_key(Live *l, int ch, bool *redraw) {
        *redraw = true;
        if (l->prompt.key) {
                if (prompt_key(l, ch))
                        return l->gone_usec ? 0 : live_restart(l);
                return 0;
        }
        if (l->help) {
                l->help = false;
                if (ch != 'q' && ch != 'Q')
                        return 0;
        }
        switch (ch) {
        case 'q':
        case 'Q':
                quit = 1;
                return 0;
        case 'p':
        case ' ':
                l->paused = !l->paused;
                return 0;
        case 'g':
                l->group = (l->group + 1) % _TOP_GROUP_MAX;
                return 0;
        case 'P':
        case 'U':
        case 'N':
        case 'C':
                l->prompt = (Prompt) { .key = ch };
                return 0;
        case '=':
                if (process_filter_is_empty(&l->filter))
                        return 0;
                process_filter_done(&l->filter);
                return l->gone_usec ? 0 : live_restart(l);
        case 'h':
        case '?':
                l->help = true;
                return 0;
        case KEY_RESIZE:
                return 0;
        default:
                live_sort(l, key_sort(l, ch));
                return 0;
        }
}

/* Takes the terminal: curses, keys without waiting, colors where wanted. 0, or EXIT_FAILURE
 * reported. */
static int live_screen_init(Live *l) {
        if (!initscr())
                return fail("cannot initialize the terminal (TERM=%s)", getenv("TERM") ?: "");
        errors_hold();
        cbreak();
        noecho();
        nodelay(stdscr, TRUE);
        keypad(stdscr, TRUE);
        set_escdelay(25);
        curs_set(0);
        l->color = use_color(stdout) && has_colors();
        if (l->color) {
                start_color();
                use_default_colors();
                init_pair(1, COLOR_CYAN, -1);
                init_pair(2, COLOR_RED, -1);
        }
        return 0;
}

/* The daemon is away: one more attempt when it is time, else a pause. 0 to go on, or
 * EXIT_FAILURE reported once --reconnect-timeout has passed. */
static int live_wait(Live *l, bool *redraw) {
        const TopOptions *o = l->o;

        if (o->reconnect_timeout_usec != RECONNECT_NEVER &&
            now_usec(CLOCK_REALTIME) - l->gone_usec >= o->reconnect_timeout_usec) {
                char span[32];

                return fail("trapstatd went away and did not come back within %s (--reconnect-timeout)",
                            format_duration_usec(o->reconnect_timeout_usec, span));
        }
        if (now_usec(CLOCK_MONOTONIC) >= l->next_attempt_usec) {
                (void) live_reconnect(l);
                *redraw = true; /* the attempt's count, or the view back */
        } else
                napms(LIVE_POLL_USEC / USEC_PER_MSEC);
        return 0;
}

/* The keys typed since the last turn. 0 to go on, or EXIT_FAILURE reported. */
static int live_keys(Live *l, bool *redraw) {
        int ch;

        while ((ch = getch()) != ERR) {
                bool key_redraw = false;

                if (live_key(l, ch, &key_redraw) != 0)
                        return EXIT_FAILURE;
                *redraw = *redraw || key_redraw;
        }
        return 0;
}

/* One turn of the view: the stream (or the wait for the daemon), the keys, the screen. 0 to go
 * on, or EXIT_FAILURE reported. */
static int live_turn(Live *l) {
        bool redraw = false;

        if (l->c ? live_read(l, &redraw) != 0 : live_wait(l, &redraw) != 0)
                return EXIT_FAILURE;
        if (live_keys(l, &redraw) != 0) {
                quit = 1;
                return EXIT_FAILURE;
        }
        /* A message that just expired. */
        if (l->message[0] && now_usec(CLOCK_MONOTONIC) >= l->message_until) {
                l->message[0] = '\0';
                redraw = true;
        }
        if (redraw && !quit)
                draw_live(l);
        return 0;
}

int top_live(const TopOptions *o) {
        struct sigaction sa = { .sa_handler = on_quit }, old_int, old_term;
        Live l = { .o = o, .sort = o->sort, .group = o->group, .utf8 = locale_is_utf8() };
        char why[512];
        int ret = 0;

        l.filter = o->filter;
        l.filter.unit = o->filter.unit ? strdup(o->filter.unit) : NULL;
        l.filter.comm = o->filter.comm ? strdup(o->filter.comm) : NULL;
        l.filter.container = o->filter.container ? strdup(o->filter.container) : NULL;
        if ((o->filter.unit && !l.filter.unit) || (o->filter.comm && !l.filter.comm) ||
            (o->filter.container && !l.filter.container)) {
                process_filter_done(&l.filter);
                return fail("out of memory");
        }

        /* Without SA_RESTART: a blocked read ends early so the screen is restored promptly. */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);

        /* The daemon must be there when the view starts: a typo in --socket is an error, not a
         * screen waiting for ever. */
        if (live_start(&l, why, sizeof(why)) < 0) {
                ret = fail("%s%s", why, strstr(why, "cannot reach") ? " (is it running? try: systemctl start trapstatd; or pass --socket PATH)" : "");
                goto finish;
        }
        ret = live_screen_init(&l);
        if (ret != 0)
                goto finish;
        draw_live(&l);
        while (!quit && ret == 0)
                ret = live_turn(&l);
        endwin();
        errors_release();
finish:
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        trapstat_client_free(l.c);
        top_table_done(&l.table);
        process_filter_done(&l.filter);
        return ret;
}

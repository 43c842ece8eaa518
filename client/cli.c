/* SPDX-License-Identifier: MIT */
/* What the verbs of trapstat share: messages on stderr, the calls of libtrapstat-client with
 * their failures told in words a person can act on, and parsing of arguments. */

#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "container-util.h"

const char *arg_socket = TRAPSTAT_DEFAULT_SOCKET;
bool arg_json = false;

const char *const global_usage = "Usage: trapstat [--socket PATH] [--json] {top|history|sites|procs|traps|status|call} [ARGS]...";

/* While the live view owns the terminal, messages written to it would vanish with the screen
 * at endwin(): they are held here and printed after it (errors_hold, errors_release). */
static FILE *held_errors;
static char *held_buf;
static size_t held_size;

void errors_hold(void) {
        if (!held_errors)
                held_errors = open_memstream(&held_buf, &held_size); /* NULL: print at once */
}

void errors_release(void) {
        if (!held_errors)
                return;
        fclose(held_errors);
        held_errors = NULL;
        fputs(held_buf, stderr);
        free(held_buf);
        held_buf = NULL;
}

static void print_error(const char *fmt, va_list ap) {
        _cleanup_free_ char *message = NULL;

        /* The line in one write. (Also: gcc 12 with -fsanitize=undefined warns of a "null format
         * string" when vfprintf and fputc go to a stream chosen at run time.) */
        if (vasprintf(&message, fmt, ap) < 0)
                message = NULL;
        fprintf(held_errors ?: stderr, "trapstat: %s\n", message ?: "(out of memory formatting the message)");
}

int parse_container_arg(const char *usage, const char *value) {
        if (!*value)
                return usage_error(usage, "invalid --container '': expected a container's name, its id or the start of "
                                          "its id (at least %d hex digits)", CONTAINER_PREFIX_MIN);
        if (!container_query_valid(value))
                return usage_error(usage, "invalid --container: longer than %d bytes (a container's name or id)",
                                   CONTAINER_ID_MAX);
        return 0;
}

int common_option(int c, const char *usage, void (*help)(void), bool *csv) {
        switch (c) {
        case OPT_JSON:
                arg_json = true;
                return 1;
        case OPT_CSV:
                if (!csv)
                        break;
                *csv = true;
                return 1;
        case OPT_HELP:
                help();
                return 0;
        }
        /* getopt_long() said what it was. */
        return usage_hint(usage);
}

int fail(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        print_error(fmt, ap);
        va_end(ap);
        return EXIT_FAILURE;
}

int report_errno(int r, const char *fmt, ...) {
        va_list ap;

        /* For a %m in fmt. */
        errno = -r;
        va_start(ap, fmt);
        print_error(fmt, ap);
        va_end(ap);
        return r;
}

int cli_connect(uint64_t timeout_usec, TrapstatClient **ret) {
        int r = trapstat_client_connect(arg_socket, timeout_usec, ret);

        if (r >= 0)
                return 0;
        return report_unreachable(r);
}

int report_unreachable(int r) {
        if (r == -EACCES || r == -EPERM)
                return report_errno(r, "cannot reach trapstatd at %s: permission denied (the socket or its directory is not accessible to you)",
                                    arg_socket);
        return report_errno(r, "cannot reach trapstatd at %s: %s (is it running? try: systemctl start trapstatd; or pass --socket PATH)",
                            arg_socket, strerror(-r));
}

int report_error_reply(const char *method, const TrapstatError *error) {
        _cleanup_free_ char *message = NULL;

        if (trapstat_error_message(method, error, &message) < 0)
                return report_errno(-EBADR, "%s failed: %s", method, error->name);
        return report_errno(-EBADR, "%s", message);
}

int report_call_failure(const char *method, int r, const TrapstatError *error) {
        if (r == TRAPSTAT_ERROR_REPLY)
                return report_error_reply(method, error);
        if (r == -ECONNRESET)
                return report_errno(r, "trapstatd closed the connection during %s (see its log: journalctl -u trapstatd)", method);
        return report_errno(r, "%s on %s failed: %s", method, arg_socket, strerror(-r));
}

void print_json(json_t *reply) {
        /* On a terminal, everything beyond ASCII as \uXXXX: the same JSON, but a C1 control in a
         * process's name (U+009B is CSI to some terminals) does not reach the terminal raw. */
        char *s = json_dumps(reply, JSON_COMPACT | (isatty(STDOUT_FILENO) ? JSON_ENSURE_ASCII : 0));

        if (s) {
                puts(s);
                free(s);
        }
        fflush(stdout);
}

bool use_color(FILE *f) {
        const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");

        /* https://no-color.org: any non-empty NO_COLOR disables color. */
        if (no_color && *no_color)
                return false;
        if (!term || strcmp(term, "dumb") == 0)
                return false;
        return isatty(fileno(f));
}

unsigned terminal_columns(void) {
        struct winsize ws;
        uint64_t v;

        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                return ws.ws_col;
        if (parse_integer(getenv("COLUMNS"), 20, 10000, 0, &v) == 0)
                return (unsigned) v;
        return 80;
}

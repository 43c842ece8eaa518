/* SPDX-License-Identifier: MIT */
#pragma once

/* What the verbs of trapstat share (cli.c): global options, the calls of libtrapstat-client with
 * their failures told to the person at the terminal, and argument parsing.
 *
 * Exit codes (0 success, 1 failure, 2 usage error) are the verbs' and main()'s alone: the verbs
 * return them, fail() hands one over. Command lines are parsed as in every program of trapstat
 * (argv-util.h): a verb's parse_argv() returns < 0 (usage_error(): -EINVAL), 0 (--help) or > 0
 * (go on), and the verb exits with parse_argv_exit_code() of what is not > 0. Every other function
 * here returns 0 or a negative errno; those that say "reported" have printed why already. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "argv-util.h"
#include "defaults.h"
#include "macro.h"
#include "time-util.h"
#include "trapstat-methods.h"

#define CALL_TIMEOUT_USEC (30 * USEC_PER_SEC)

extern const char *arg_socket;
extern bool arg_json;

extern const char *const global_usage;

/* Bad arguments: usage_error() (argv-util.h) with the verb's usage line, or global_usage. */
/* The value of --container (top, procs, history): a container's name, its id or the start of its
 * id, 1 to CONTAINER_ID_MAX bytes, as the daemon takes it. 0, or -EINVAL when the usage error
 * (with usage) is printed. */
int parse_container_arg(const char *usage, const char *value);
/* Anything else: "trapstat: <message>", returns EXIT_FAILURE. */
int fail(const char *fmt, ...) _printf_(1, 2);
/* The same, returning r (a negative errno) instead: for the functions below the verbs. */
int report_errno(int r, const char *fmt, ...) _printf_(2, 3);
/* Between the two, messages are kept back and then printed: for while curses owns the screen. */
void errors_hold(void);
void errors_release(void);

/* Connects to trapstatd at arg_socket; 0, or a negative errno, reported with what to do about
 * it. */
int cli_connect(uint64_t timeout_usec, TrapstatClient **ret);
/* Reports that trapstatd could not be reached (r: what connecting returned), with what to do
 * about it; returns r. */
int report_unreachable(int r);
/* Reports the daemon's error reply to a call of method; returns -EBADR. */
int report_error_reply(const char *method, const TrapstatError *error);
/* Reports what a typed call of method (trapstat-methods.h) returned when it failed: r, and the
 * daemon's error reply in error when r is TRAPSTAT_ERROR_REPLY; returns r. */
int report_call_failure(const char *method, int r, const TrapstatError *error);

/* Compact JSON and a newline, flushed: one object per line; on a terminal ASCII only (\uXXXX). */
void print_json(json_t *j);
/* The options every listing verb takes alike, by these values in its getopt_long() table: --json
 * (-j), --csv where the verb has it (csv not NULL), --help (-h, printed by help()). Anything else
 * is a usage error, with the verb's usage line. Returns as parse_argv() (argv-util.h). */
enum { OPT_JSON = 'j', OPT_CSV = 0x100, OPT_HELP = 'h' };
int common_option(int c, const char *usage, void (*help)(void), bool *csv);
/* Whether f is a terminal that gets color: a TTY, TERM not "dumb", NO_COLOR unset or empty. */
bool use_color(FILE *f);
/* Width of the terminal on stdout; COLUMNS or 80 when it is not one. */
unsigned terminal_columns(void);

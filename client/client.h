/* SPDX-License-Identifier: MIT */
#pragma once

/* What the verbs of trapstat share: global options, varlink calls with errors a person can act
 * on, and argument parsing. Exit codes: 0 success, 1 failure, 2 usage error. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "defaults.h"
#include "macro.h"
#include "varlink.h"

#define CALL_TIMEOUT_USEC (30 * USEC_PER_SEC)

enum { EXIT_USAGE = 2 };

extern const char *arg_socket;
extern bool arg_json;

/* Bad arguments: "trapstat: <message>", then the usage line (the verb's, or the global one when
 * NULL); returns EXIT_USAGE. */
int usage_error(const char *usage, const char *fmt, ...) _printf_(2, 3);
/* Anything else: "trapstat: <message>", returns EXIT_FAILURE. */
int fail(const char *fmt, ...) _printf_(1, 2);
/* Between the two, messages are kept back and then printed: for while curses owns the screen. */
void errors_hold(void);
void errors_release(void);

/* Connects to trapstatd; on failure prints what to do about it and returns EXIT_FAILURE. */
int client_connect(uint64_t timeout_usec, VarlinkClient **ret);
/* Prints an error reply of method as one line; returns EXIT_FAILURE. */
int client_error_reply(const char *method, const char *error, json_t *parameters);
/* One call, one reply; 0 or EXIT_FAILURE (already reported). */
int client_call(const char *method, json_t *parameters, json_t **ret);

/* Compact JSON and a newline, flushed: one object per line; on a terminal ASCII only (\uXXXX). */
void print_json(json_t *j);
/* Whole numbers in [min, max]; -EINVAL otherwise. */
int parse_int_arg(const char *s, long long min, long long max, long long *ret);
/* Whether f is a terminal that gets color: a TTY, TERM not "dumb", NO_COLOR unset or empty. */
bool use_color(FILE *f);
/* Width of the terminal on stdout; COLUMNS or 80 when it is not one. */
unsigned terminal_columns(void);

int verb_top(int argc, char *argv[]);

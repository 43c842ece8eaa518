/* SPDX-License-Identifier: MIT */
#pragma once

/* The harness's end of a connection to the varlink server under test, shared by the targets: the
 * input sent in pieces while the server runs, what comes back read as it comes, the half-close
 * that ends it. A failure aborts with a message (fuzz_fail()); the target makes it a crash that
 * libFuzzer and replay.c report. */

#include <event2/buffer.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "time-util.h"
#include "varlink.h"

/* The input is written in pieces of this size, a prime so that the boundaries fall at varied
 * offsets: short inputs arrive in one read (pipelined calls), longer ones split inside messages. */
#define FUZZ_WRITE_PIECE 509U
/* Without any progress for this long, the server counts as hung. */
#define FUZZ_HANG_USEC (20U * USEC_PER_SEC)

/* The target's name, which starts every message of fuzz_fail(). */
extern const char fuzz_target[];

/* "<fuzz_target>: <message>" on stderr, then abort(). */
_Noreturn _printf_(1, 2) void fuzz_fail(const char *fmt, ...);

/* Runs the server a little and takes what it sent: whether anything moved. */
typedef bool (*FuzzServeFn)(void *userdata);

/* Reads what the server sent into replies until the socket would block. Whether anything arrived;
 * *eof is set once the server closed its end (orderly, or ECONNRESET after a protocol error, what
 * it sent before having been read first). */
bool fuzz_receive(int fd, struct evbuffer *replies, bool *eof);

/* Sends data in FUZZ_WRITE_PIECE pieces, serve(userdata) after each, so that inputs larger than
 * the socket buffer work too. Stops early once *eof (set by serve) or the server closed: its
 * close makes the rest moot. Fails when nothing moved for FUZZ_HANG_USEC. */
void fuzz_send(int fd, const uint8_t *data, size_t size, const bool *eof, FuzzServeFn serve, void *userdata);

/* The client is done: half-closes fd, and serves until the server has answered what it read and
 * closed (*eof, and no connection left on server). Fails when nothing moved for FUZZ_HANG_USEC. */
void fuzz_finish(int fd, VarlinkServer *server, const bool *eof, FuzzServeFn serve, void *userdata);

/* SPDX-License-Identifier: MIT */
#pragma once

/* trapstat top's live view (top-live.c): ncurses over a TopTable, seeded from Top and fed by
 * Watch. top.c runs it on a terminal without -b. */

#include "top-common.h"

/* Runs the view until it is quit (q, SIGINT, SIGTERM) or fails; returns trapstat top's exit code. */
int top_live(const TopOptions *o);

/* SPDX-License-Identifier: MIT */
#pragma once

/* The verb trapstat top (top.c): its options, the batch mode and the stream; the live view is
 * top-live.h's. */

int verb_top(int argc, char *argv[]);

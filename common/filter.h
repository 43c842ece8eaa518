/* SPDX-License-Identifier: MIT */
#pragma once

/* Which processes a view asks for: Top and Watch take these members (pids, uid, unit, comm), the
 * daemon applies them to each tick's samples, and the live view to the rows it keeps. Globs are
 * those of SQLite's GLOB, which Top's query uses: *, ? and [...], case-sensitive, no backslash
 * escapes. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container-util.h"
#include "defaults.h"

typedef struct ProcessFilter {
        uint32_t pids[MAX_FILTER_PIDS];
        size_t n_pids; /* 0: any pid */
        int64_t uid;   /* -1: any user */
        char *unit;    /* glob over unit names; NULL: any (a process without a unit never matches one) */
        char *comm;    /* glob over comm; NULL: any */
        char *container; /* a container's name, id or id's prefix (container_matches()); NULL: any */
        /* The caller's pid namespace (an inode number): only processes in it, and pids are its
         * pids; 0: the caller sees every namespace. Set from the connection, never a member. */
        uint32_t pidns;
} ProcessFilter;

#define PROCESS_FILTER_NONE ((ProcessFilter) { .uid = -1 })

void process_filter_done(ProcessFilter *f);
bool process_filter_is_empty(const ProcessFilter *f);
bool process_filter_match(const ProcessFilter *f, uint32_t pid, int64_t uid, const char *unit, const char *comm);
/* The container member alone: whether a process in container c (NULL: in none) passes. */
bool process_filter_match_container(const ProcessFilter *f, const Container *c);
/* Whether text matches glob as SQLite's GLOB matches it. */
bool glob_match(const char *glob, const char *text);
/* Parses "PID[,PID...]" into f->pids: -EINVAL for anything but 1 to MAX_FILTER_PIDS pids in
 * 1..2^31-1, f unchanged then. */
int process_filter_parse_pids(ProcessFilter *f, const char *text);

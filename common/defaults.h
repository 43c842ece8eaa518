/* SPDX-License-Identifier: MIT */
#pragma once

/* Names and defaults that more than one program or layer knows: the daemon, the client, the
 * tests and the benchmarks take them from here, and --help prints them from here. Limits of one
 * layer stay in that layer's header (varlink.h, query-pool.h, store.h). */

#include <stdint.h>

/* Where trapstatd keeps its database and listens, unless told otherwise (or given
 * $STATE_DIRECTORY / $RUNTIME_DIRECTORY, or a socket by systemd). */
#define TRAPSTAT_DEFAULT_STATE_DIR "/var/lib/trapstatd"
#define TRAPSTAT_DEFAULT_SOCKET "/run/trapstatd/io.trapstat"
#define TRAPSTAT_DEFAULT_TICK_USEC (1000 * UINT64_C(1000))

/* Members of this group see every process, as root does, and share root's reserved
 * connections. */
#define TRAPSTAT_GROUP "trapstat"

/* The io.trapstat methods' defaults and bounds (schema/io.trapstat.varlink says the same). */
#define TOP_DEFAULT_WINDOW_SEC 60
#define TOP_DEFAULT_LIMIT 20
#define TOP_MAX_LIMIT 10000
#define TRAPS_DEFAULT_WINDOW_SEC 3600
#define LIST_DEFAULT_LIMIT 1000
#define LIST_MAX_LIMIT 100000
#define SITES_DEFAULT_LIMIT 20
#define SITES_MAX_LIMIT 10000
/* Longer windows (Top, Traps) are answered as this one: the hour tier keeps a year. */
#define MAX_WINDOW_SEC (366 * 24 * 3600)
/* Longest unit name a filter may give (systemd's own limit is 255 bytes plus the suffix). */
#define MAX_UNIT_NAME 256
/* UnitTotals: rows by default and at most; units the daemon keeps totals of before it sums the
 * newer ones into "other" (trapstatd --max-unit-totals). */
#define UNIT_TOTALS_DEFAULT_LIMIT 1000
#define UNIT_TOTALS_MAX_LIMIT 100000
#define DEFAULT_MAX_UNIT_TOTALS 10000
/* io.systemd.Metrics: most replies to one List (trapstatd --report-max-metrics). */
#define DEFAULT_REPORT_MAX_METRICS 1000
/* Most pids a Top or Watch filter may name (pids member, trapstat top -p). */
#define MAX_FILTER_PIDS 64

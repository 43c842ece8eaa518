/* SPDX-License-Identifier: MIT */
#pragma once

/* Human tables and CSV for the replies of trapstatd. JSON output is the reply itself. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "format-util.h"
#include "sites.h"

/* How a table is printed: colored (ANSI, only on a TTY without NO_COLOR), Unicode sparklines,
 * whether stdout is a terminal, and its width. */
typedef struct OutputStyle {
        bool tty;
        bool color;
        bool utf8;
        unsigned columns;
} OutputStyle;

/* Top rows (counts over a window): PID [NSPID] COMM, every Faults member (fault_columns: USER
 * KERNEL MINOR MAJOR FILE ANON SHMEM READ WRITE EXEC PROT), FTIME (time spent in faults),
 * [%STALL] (time waited on memory over window_usec), TRAPS VECTORS [CONTAINER] UNIT; NSPID,
 * CONTAINER and %STALL where a row needs them or, %STALL, the rows are sorted by stall
 * (top-table.h's TopLayout). At most max_rows rows, all when negative. */
void print_top_table(FILE *f, const OutputStyle *style, json_t *rows, int max_rows, uint64_t window_usec,
                     const SortKey *sort);


/* History: a process header, the incarnations of its pid when there are several (processes is
 * the ListProcesses reply's array, or NULL), the samples, the totals, the memory stall where the
 * total knows it (the kernel's delay accounting) and a sparkline per non-zero counter, and under the traps the sites of the most (trap_sites, n_trap_sites; none:
 * no such section). Each sample and the total show the time spent in faults and the bucket of
 * the 99th percentile; with histogram the total's distribution follows as bars, p50, p99 and the
 * longest fault marked. step_usec is the width of a sample (0: derived from the samples). */
void print_history(FILE *f, const OutputStyle *style, json_t *reply, json_t *processes, uint64_t step_usec, bool histogram,
                   const SiteCount *trap_sites, size_t n_trap_sites);
/* UnitHistory: a header naming the units, how many processes and how many still run, then the
 * samples as history's. step_usec as for print_history(). */
void print_unit_history(FILE *f, const OutputStyle *style, json_t *reply, uint64_t step_usec, bool histogram);
/* ContainerHistory: the same, the header naming the containers (key, runtime, id, pod, user). */
void print_container_history(FILE *f, const OutputStyle *style, json_t *reply, uint64_t step_usec, bool histogram);
/* The same samples as CSV with exact counts: a header line, then one line per sample (of a
 * UnitHistory or ContainerHistory reply without the process's columns: pid, startTime, nsPid,
 * pidNamespace, container.*), the stall's ten members as stall.swapinNs ... stall.blkioCount,
 * empty where not counted. Text as csv_field() writes it for
 * style->tty: escaped on a terminal, exact into a file or a pipe; so in every CSV here. */
void print_history_csv(FILE *f, const OutputStyle *style, json_t *reply);

/* Sites: the process (as history's header says it), then one line per site: KIND VECTOR COUNT
 * OBJECT WHERE MEMORY, fault counts marked "~" as estimates and the sampling said under them.
 * process is the reply's. */
void print_sites(FILE *f, const OutputStyle *style, json_t *process, const SiteCount *sites, size_t n);
/* The same as CSV with exact values: a header line, then one line per site with the members of the IDL's
 * Site (empty for null), after the process's pid, startTime, nsPid, pidNamespace and container.*. */
void print_sites_csv(FILE *f, const OutputStyle *style, json_t *process, const SiteCount *sites, size_t n);

/* A list reply that its limit cut (its member `other`, e.g. "otherProcesses", above zero; absent
 * from older daemons) gets one line on f: how many of how many `what` are shown, and how to get
 * the rest: the options that narrow the call (narrow, e.g. "--comm/--unit/--pid"), and --limit
 * while limit is below max. Nothing when nothing was left out. */
void print_cut_note(FILE *f, json_t *reply, const char *other, size_t shown, const char *what, const char *narrow,
                    long long limit, long long max);

/* ListProcesses: one line per process, with a CONTAINER column and, where a process needs it, NSPID.
 * CSV: the members of Process, then PROCESS_CSV_COLUMNS (output.c) as every CSV with process columns. */
void print_processes(FILE *f, const OutputStyle *style, json_t *processes);
void print_processes_csv(FILE *f, const OutputStyle *style, json_t *processes);
/* Traps: per vector with its name, per signal and si_code. */
void print_traps(FILE *f, const OutputStyle *style, json_t *reply, uint64_t window_usec);
void print_status(FILE *f, const OutputStyle *style, json_t *reply);

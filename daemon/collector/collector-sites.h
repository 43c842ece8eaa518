/* SPDX-License-Identifier: MIT */
#pragma once

/* The site reader (collector-sites.c), one of the collector's readers: its state is in the
 * CollectorReader (collector-read.h), these are its steps. Internal to the daemon
 * (daemon/collector*.c), not a public API. Returns negative errno, never logs. */

#include <stdint.h>

#include "collector-procs.h"
#include "collector-read.h"
#include "symbol-worker.h"
#include "trapstat.h"

/* A site of the epoch that is over, kept until its process's /proc/PID/maps is read: BPF could
 * not look up its instruction, or the process's maps have not named its file yet. */
typedef struct SitePending {
        struct ts_site_key key;
        struct ts_site value;
} SitePending;

/* A symbol to ask the worker for, once the drain knows who the process is: its uid (whose budget
 * pays) may change with an exec event applied after the sites were read. */
typedef struct SymbolAsk {
        SymbolRequest request; /* path owned; uid filled in from proc */
        const CollectorProc *proc; /* valid until the end of the drain (dead ones too); NULL once
                                    * the uid is filled in and the ask waits for room in the
                                    * worker's queue */
} SymbolAsk;

/* The site hash. Each tick the epoch flips, and each entry of the epoch that is over becomes a
 * SiteCount of its process (proc_table_count_site()), with the file's path and the symbol as far
 * as known, and leaves the hash. After the other maps, so that the processes are known. */
int reader_sites_init(CollectorReader *r, const SymbolWorkerConfig *symbols);
void reader_sites_done(CollectorReader *r);
int reader_drain_sites(CollectorReader *r, uint64_t now);
/* At the end of a drain, once exec and exit events gave every process its uid: asks the symbol
 * worker for the symbols the drain did not know; what its full queue cannot take waits for the
 * next drain's end. */
void reader_ask_symbols(CollectorReader *r);

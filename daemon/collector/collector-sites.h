/* SPDX-License-Identifier: MIT */
#pragma once

/* The site reader (collector-sites.c), one of the collector's parts beside the counts' reader
 * (collector-read.h): it drains the site hash into SiteCounts of the process table, names them
 * (files' paths, symbols from the symbol worker) and gives the symbols found for sites stored
 * before as fills, which collector_tick_end() returns with the counts. The collector owns it and
 * drains it after the counts' maps, so that the processes are known. Internal to the daemon
 * (daemon/collector*.c), not a public API. Returns negative errno, never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector-bpf.h"
#include "collector-procs.h"
#include "sites.h"
#include "symbol-worker.h"
#include "trapstat.h"

/* Where the drain of an epoch is between the steps of a tick: the site hash, then the two share
 * hashes, each walked in batches from a cursor (site_reader_drain_step()). */
typedef enum SiteWalkStage {
        SITE_WALK_BEGIN, /* the symbol worker's answers; the epoch flips */
        SITE_WALK_SITES,
        SITE_WALK_SHARES,
        SITE_WALK_USER_SHARES,
} SiteWalkStage;

typedef struct SiteWalk {
        SiteWalkStage stage; /* of the drain of SiteReader.old_epoch */
        bool started;        /* the cursor is set: the hash's walk goes on from it */
        struct ts_site_key site_cursor, site_next;
        struct ts_site_quota_key share_cursor, share_next;
} SiteWalk;

typedef struct SiteReader {
        CollectorBpf *bpf;                /* borrowed */
        ProcTable *procs;                 /* borrowed */
        /* Lines of /proc/PID/maps read per tick to name sites' files and failed VMA lookups
         * (--site-maps-lines); 0: none. */
        unsigned maps_lines_per_tick;
        struct ts_site_key *keys;         /* a batch of the site hash */
        struct ts_site *values;
        struct ts_site_key *drained;      /* the batch's entries of the epoch that is over */
        struct SitePending *pending;      /* this tick's sites waiting for their process's maps */
        size_t n_pending, pending_capacity;
        struct ts_site_quota_key *share_keys; /* a batch of a share hash */
        struct ts_site_quota *share_values;
        bool flipped;                     /* the epoch flipped; old_epoch is still to be drained */
        SiteWalk walk;
        uint64_t group_checked_usec;      /* group trapstat last looked up (0: never) */
        uint32_t old_epoch;
        void *file_paths;                 /* tsearch() tree: (dev, inode) -> path, with its version */
        uint64_t drains;                  /* epochs drained */
        size_t n_file_paths;
        void *symbols;                    /* tsearch() tree: (file version, offset) -> symbol */
        size_t n_symbols;
        SymbolWorker *symbol_worker;
        struct SymbolAsk *asks;           /* symbols to ask for at the end of this drain */
        size_t n_asks, asks_capacity;
        SiteCount *fills;                 /* symbols taken at this drain, for rows already stored */
        size_t n_fills, fills_capacity;
        /* Why the symbol worker could not open a process's mapping (map_files) when the kernel
         * refused it (-EPERM, -EACCES), the first time; 0 while it has not. */
        int mapping_refused;
} SiteReader;

/* Starts the symbol worker. maps_lines_per_tick: see SiteReader. */
int site_reader_init(SiteReader *r, CollectorBpf *bpf, ProcTable *procs, unsigned maps_lines_per_tick,
                     const SymbolWorkerConfig *symbols);
void site_reader_done(SiteReader *r);

/* First the symbol worker's answers since the last drain: the symbols that name this drain's
 * sites, and fills (r->fills, valid until the next drain) for the rows stored without them.
 * Then the site hash: each tick the epoch flips, and each entry of the epoch that is over
 * becomes a SiteCount of its process (proc_table_count_site()), with the file's path and the
 * symbol as far as known, and leaves the hash. In steps: each walks batches of the hashes until
 * the monotonic clock passes deadline (UINT64_MAX: none), and returns > 0 while the epoch is
 * not done; 0 when it is (or when the epoch is still busy: the next tick drains it). Between two
 * steps nothing may free a process (exits wait for the tick's end). */
int site_reader_drain_step(SiteReader *r, uint64_t now, uint64_t deadline);
/* At the end of a drain, once exec and exit events gave every process its uid: asks the symbol
 * worker for the symbols the drain did not know; what its full queue cannot take waits for the
 * next drain's end. */
void site_reader_ask_symbols(SiteReader *r);

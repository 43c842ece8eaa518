/* SPDX-License-Identifier: MIT */
#pragma once

/* The symbol worker: one thread of its own that symbolizes (file, offset) pairs for the
 * collector, so that the event loop never reads an ELF file. A thread of its own rather than the
 * query pool (daemon/query-pool.c): the pool's threads each hold a SQLite connection and its slots are
 * counted per uid for queries, and a hostile file must not take a query slot; the Symbolizer's
 * cache is not thread-safe, so one thread owns it.
 *
 * The collector submits a request and goes on (the site is stored with its file and offset at
 * once); it takes the answers at its next drain. Before anything is read, the file is opened and
 * proved to be the one the kernel named. First through the process's mapping, while the process
 * lives (/proc/PID/map_files/START-END, proc_open_map_file()): the file it mapped whatever its
 * path is now, checked to have the device and inode BPF saw. Where that cannot be (the process
 * is gone, its mapping too, or the kernel does not let this daemon open map_files: it needs
 * CAP_SYS_ADMIN, which the daemon under systemd does not have), by path, without following a
 * symlink: device, inode and change time as BPF saw them (symbolizer_open()). A file opened
 * neither way is not read: the result says why (unreadable), counted in
 * symbol_worker_unreadable(); the collector asks again at the site's next count. Each uid may
 * have files_per_minute files and bytes_per_minute bytes of symbol tables parsed in a minute
 * (tables already cached and remembered outcomes are free); a request past it is answered
 * -EDQUOT and counted in symbol_worker_refused().
 *
 * Ownership: requests and results are under the worker's lock; the Symbolizer and the budgets
 * are the thread's alone; the counters are atomic. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "collector.h"
#include "macro.h"

/* Requests waiting at once: past it symbol_worker_submit() says -EAGAIN and the collector keeps
 * the request until the end of its next drain. */
#define SYMBOL_WORKER_QUEUE_MAX 4096

typedef struct SymbolWorkerConfig {
        uint64_t files_per_minute; /* per uid; 0: default */
        uint64_t bytes_per_minute; /* per uid; 0: default */
        uint64_t max_bytes;        /* the Symbolizer's cache and the largest table read; 0: its default */
        /* The proc root, to open live processes' mappings (borrowed: it outlives the worker);
         * negative: files are opened by path only. Set it: 0 is a descriptor like any other. */
        int proc_fd;
} SymbolWorkerConfig;

typedef struct SymbolRequest {
        uint32_t uid;          /* whose budget pays */
        uint64_t dev, ino;     /* as stat() gives them */
        struct timespec ctime; /* the inode's change time when BPF named it */
        uint64_t offset;
        char *path;            /* owned; opened when the mapping cannot be, if absolute */
        /* A process that maps the file, and where: [map_start, map_end) of /proc/PID/maps;
         * map_end 0 when none is known (the file is then opened by path). */
        uint32_t pid;
        uint64_t start_time;   /* the process's, ns since boot */
        uint64_t map_start, map_end;
        uint32_t key_dev, key_generation; /* the caller's, returned as they are */
} SymbolRequest;

typedef struct SymbolResult {
        SymbolRequest request;
        int error;             /* 0: symbol set; else why not (-EDQUOT: the uid's budget) */
        /* The file could not be opened (error says why: -ENOENT, -ESTALE, -EACCES, ...): not an
         * answer about the file, to be asked again. */
        bool unreadable;
        /* 0: opened through the process's mapping; else why not: -ENODATA none was given,
         * -ESRCH the process was gone, -ENOENT its mapping was, -EPERM or -EACCES not
         * permitted, -ESTALE another file is mapped there now. */
        int mapping_error;
        char *symbol;          /* owned */
        uint64_t symbol_offset;
} SymbolResult;

typedef struct SymbolWorker SymbolWorker;

/* Starts the thread. */
int symbol_worker_new(const SymbolWorkerConfig *config, SymbolWorker **ret);
/* Stops and joins it; what is queued is dropped. */
SymbolWorker *symbol_worker_free(SymbolWorker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(SymbolWorker *, symbol_worker_free);

/* Queues a copy of request (the path is copied); -EAGAIN when SYMBOL_WORKER_QUEUE_MAX wait. */
int symbol_worker_submit(SymbolWorker *w, const SymbolRequest *request);
/* The results since the last call, the caller's to free with symbol_results_free(). */
void symbol_worker_take(SymbolWorker *w, SymbolResult **ret, size_t *ret_n);
void symbol_results_free(SymbolResult *results, size_t n);
/* Requests refused for their uid's budget since the start. */
uint64_t symbol_worker_refused(SymbolWorker *w);
/* Requests whose file could be opened neither through the mapping nor by path, since the start. */
uint64_t symbol_worker_unreadable(SymbolWorker *w);

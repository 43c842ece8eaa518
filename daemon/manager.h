/* SPDX-License-Identifier: MIT */
#pragma once

/* The Manager owns everything the daemon runs: the event loop, the collector (BPF), the store
 * (SQLite) and the varlink server; trapstatd.c only parses arguments and runs it. The state
 * directory's checks and lock are state-dir.c's. */

#include <stdint.h>

#include "collector.h"
#include "defaults.h"
#include "macro.h"
#include "query-pool.h"
#include "store.h"
#include "varlink.h"
#include "writer.h"


/* The daemon's configuration: its own few settings, and each part's config as that part defines
 * it, filled in place by trapstatd.c's options. The manager passes the parts on as they are and
 * sets only what it alone knows: the proc fd, the boot id, the database's path, the checkpointer,
 * the query sync, the server's name and group, root's and group trapstat's uids. A new option of
 * a part touches its option table entry, its field in the part's config and its use there. */
typedef struct ManagerConfig {
        const char *state_dir;
        const char *socket_path;
        const char *report_socket_path; /* io.systemd.Metrics; NULL: only one passed by systemd */
        uint64_t tick_usec;
        size_t max_unit_totals;    /* 0: DEFAULT_MAX_UNIT_TOTALS */
        size_t report_max_metrics; /* 0: DEFAULT_REPORT_MAX_METRICS */
        CollectorConfig collector;
        WriterConfig writer; /* the store's retention and size cap in .retention */
        VarlinkServerConfig server;
        QueryPoolConfig queries;
} ManagerConfig;

typedef struct Manager Manager;

/* Allocates the manager and opens what it owns: /proc, the state directory (locked, so a second
 * daemon stops here), the event loop and the varlink servers, not listening yet. Nothing runs
 * and nothing is counted. Logs its failures. */
int manager_new(const ManagerConfig *config, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);
/* Starts what runs: the database's writer and checkpointer threads, the BPF programs (counting
 * starts), the query threads, then listens on the sockets. Logs its failures; on one, the caller
 * frees the manager, which stops whatever was started. */
int manager_start(Manager *m);
/* Runs until SIGTERM/SIGINT, then drains and flushes one last time. */
int manager_run(Manager *m);

/* Every drop kind: the collector's, then the writer's (tick_merged). */
#define MANAGER_DROP_KINDS (COLLECTOR_DROP_KINDS + 1)

/* For the method handlers (methods.c). */
/* The database's writer: whether the database is open (methods answer DatabaseError while it
 * is not), its size, what could not be stored (writer_stats()). */
Writer *manager_writer(Manager *m);
const char *manager_database_path(Manager *m);
Collector *manager_collector(Manager *m);
uint64_t manager_tick_usec(Manager *m);
/* Fills ret with every drop kind, also those at zero; returns how many. */
size_t manager_drops(Manager *m, CollectorDrop ret[static MANAGER_DROP_KINDS]);
/* The Watch streams, answered on every tick. */
struct WatchSet *manager_watch_set(Manager *m);
/* The running totals per unit (UnitTotals), and since when they run (CLOCK_REALTIME). */
struct UnitTotals *manager_unit_totals(Manager *m);
uint64_t manager_start_usec(Manager *m);
/* Most replies to one io.systemd.Metrics.List. */
size_t manager_report_max_metrics(Manager *m);
/* The workers that answer history queries. */
struct QueryPool *manager_query_pool(Manager *m);

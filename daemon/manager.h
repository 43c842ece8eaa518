/* SPDX-License-Identifier: MIT */
#pragma once

/* The Manager owns everything the daemon runs: the event loop, the collector (BPF), the store
 * (SQLite) and the varlink server; trapstatd.c only parses arguments and runs it. The state
 * directory's checks and lock are state-dir.c's. */

#include <stdint.h>

#include "collector.h"
#include "defaults.h"
#include "macro.h"
#include "store.h"
#include "writer.h"


typedef struct ManagerConfig {
        const char *state_dir;
        const char *socket_path;
        uint64_t tick_usec;
        uint32_t slots;
        uint32_t max_processes;
        uint32_t event_buffer; /* bytes; 0: the collector's default */
        uint32_t max_sites;    /* 0: the collector's default */
        uint32_t max_sites_per_process; /* 0: the collector's default */
        uint32_t max_sites_per_user;    /* 0: the collector's default */
        uint32_t site_reserve;          /* 0: the collector's default; COLLECTOR_SITE_RESERVE_NONE: none */
        uint32_t site_maps_lines;       /* 0: the collector's default; COLLECTOR_SITE_MAPS_LINES_NONE: none */
        uint32_t fault_sample; /* as CollectorConfig.fault_sample */
        uint64_t symbol_files_per_minute; /* as CollectorConfig's; 0: default */
        uint64_t symbol_bytes_per_minute;
        const char *disable_sources;
        const char *enable_sources;
        StoreRetention retention;
        unsigned writer_queue; /* ticks waiting for the writer; 0: WRITER_DEFAULT_QUEUE */
        const char *writer_hold_file; /* tests only (writer_set_hold_file()); NULL: none */
        size_t max_cmdline; /* bytes of a command line stored (store_set_max_cmdline()) */
        size_t max_message_size;
        size_t max_buffer;
        unsigned max_connections;
        unsigned max_connections_per_uid;
        unsigned reserved_connections; /* (unsigned) -1: none; 0: default */
        unsigned idle_timeout_sec;
        unsigned query_threads, queries_per_uid;
        uint64_t query_cost_limit;
        uint64_t query_time_limit_usec; /* 0: QUERY_DEFAULT_TIME_LIMIT_USEC */
        size_t max_reply_size;          /* 0: QUERY_DEFAULT_MAX_REPLY_SIZE */
        uint64_t write_timeout_usec;    /* 0: idle_timeout_sec */
        size_t max_unit_totals; /* 0: DEFAULT_MAX_UNIT_TOTALS */
        const char *report_socket_path; /* io.systemd.Metrics; NULL: only one passed by systemd */
        size_t report_max_metrics;      /* 0: DEFAULT_REPORT_MAX_METRICS */
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

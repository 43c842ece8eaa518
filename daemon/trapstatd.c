/* SPDX-License-Identifier: MIT */
/* trapstatd: counts page faults per process in the kernel, keeps their history in SQLite and
 * answers queries over varlink. Arguments here; everything else in manager.c. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collector.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "query-pool.h"
#include "symbol-worker.h"
#include "systemd-metrics-util.h"
#include "time-util.h"
#include "trapstat.h"
#include "varlink.h"

static void help(void) {
        const StoreRetention retention = STORE_RETENTION_DEFAULT;

        printf("Usage: trapstatd [OPTION]...\n"
               "Count page faults per process in the kernel, keep their history, serve it over varlink.\n\n"
               "  -s, --state-dir DIR        database directory (default: $STATE_DIRECTORY or %s)\n"
               "  -S, --socket PATH          varlink socket (default: $RUNTIME_DIRECTORY/io.trapstat or %s);\n"
               "                             a socket passed by systemd wins\n"
               "      --report-socket PATH   also serve io.systemd.Metrics on PATH (mode 0600); one passed\n"
               "                             by systemd named \"report\" wins (default: none)\n"
               "      --report-max-metrics N  most replies to one io.systemd.Metrics.List (default: %u;\n"
               "                             %u to 1000000)\n"
               "  -t, --tick DURATION        drain interval, e.g. 1s, 250ms (default: 1s; 10ms to 1h)\n"
               "      --slots N              fast counting slots in the kernel, a power of two (default: %u)\n"
               "      --max-processes N      processes counted outside slots at once (default: %u)\n"
               "      --event-buffer SIZE    buffer of exit and exec events in the kernel, a power of two,\n"
               "                             e.g. 4M (default: %uM; page size to 1G)\n"
               "      --fault-sample N       record the site of one in N user page faults of a process on\n"
               "                             a CPU, a power of two; 0: no fault sites (default: %u)\n"
               "      --max-sites N          sites (process, instruction) held in the kernel at once\n"
               "                             (default: %u)\n"
               "      --max-sites-per-process N  of them, those one process creates in a tick (default: %u)\n"
               "      --max-sites-per-user N  those one user (not root, not group trapstat) creates in a\n"
               "                             tick (default: a quarter of --max-sites)\n"
               "      --site-reserve N       of --max-sites only for root and group trapstat (default: an\n"
               "                             eighth of --max-sites)\n"
               "      --site-maps-lines N    lines of /proc/PID/maps read per tick to name sites whose\n"
               "                             lookup failed; 0: none (default: 262144)\n"
               "      --symbol-files-per-minute N  files whose symbol tables are parsed for one user in\n"
               "                             a minute; past it their sites keep file and offset (default: 64)\n"
               "      --symbol-bytes-per-minute SIZE  bytes of symbol tables parsed for one user in a\n"
               "                             minute (default: 64M)\n"
               "      --max-unit-totals N    units the running totals (UnitTotals) are kept of; newer ones\n"
               "                             are summed into \"other\" (default: %u)\n"
               "      --disable-source LIST  event sources not to use, comma-separated (see trapstat status)\n"
               "      --enable-source LIST   sources off by default to use: fault_time (how long each page\n"
               "                             fault took; it costs more per fault than the counting)\n"
               "      --retention LIST       how long each tier keeps history\n"
               "                             (default: raw=%" PRIu64 "h,minute=%" PRIu64 "d,hour=%" PRIu64 "d)\n"
               "      --max-db-size SIZE     database size cap, WAL included, e.g. 256M, 2G (default: %" PRIu64 "M;\n"
               "                             0: none)\n"
               "      --db-reserve SIZE      of it, what root's and group trapstat's history keeps when\n"
               "                             others use more (default: %" PRIu64 "M)\n"
               "      --max-cmdline BYTES    longest command line stored; a longer one is cut and ends in an\n"
               "                             ellipsis, U+2026 (default: %u; 16 to 4096)\n"
               "      --max-message-size SIZE  largest varlink call accepted (default: %uK)\n"
               "      --max-buffer SIZE      calls and replies buffered for all clients together\n"
               "                             (default: %uM)\n"
               "      --max-connections N    concurrent client connections (default: %u)\n"
               "      --max-connections-per-uid N  of them from one user other than root and group\n"
               "                             trapstat (default: %u)\n"
               "      --reserved-connections N  of --max-connections only for root and group trapstat\n"
               "                             (default: %u)\n"
               "      --idle-timeout DURATION  close idle client connections after it (default: %us)\n"
               "      --write-timeout DURATION  close a connection whose reply has not gone out whole within\n"
               "                             it (default: the idle timeout)\n"
               "      --max-reply-size SIZE  largest reply to a history query; larger ones are refused\n"
               "                             with ReplyTooLarge (default: %zuM)\n"
               "      --query-threads N      threads answering history queries (default: %u)\n"
               "      --queries-per-uid N    queries of one user running at once (default: %u)\n"
               "      --query-cost-limit N   SQLite steps one query may take (default: %llu)\n"
               "      --query-time-limit DURATION  wall time one query may take (default: %us)\n"
               "      --writer-queue N       ticks waiting for the database's writer; more are merged\n"
               "                             into the last one waiting (default: %u; 1 to 1024)\n"
               "  -v, --verbose              debug logging\n"
               "  -h, --help                 this help\n"
               "      --version              print the version\n",
               TRAPSTAT_DEFAULT_STATE_DIR, TRAPSTAT_DEFAULT_SOCKET, DEFAULT_REPORT_MAX_METRICS, METRICS_MIN_MAX,
               TS_DEFAULT_SLOTS, TS_DEFAULT_MAX_PROCESSES,
               TS_DEFAULT_EVENT_BUFFER >> 20, TS_DEFAULT_FAULT_SAMPLE, TS_DEFAULT_MAX_SITES, TS_DEFAULT_MAX_SITES_PER_PROCESS, DEFAULT_MAX_UNIT_TOTALS, retention.raw_usec / (3600 * USEC_PER_SEC),
               retention.minute_usec / (86400 * USEC_PER_SEC), retention.hour_usec / (86400 * USEC_PER_SEC),
               retention.max_bytes >> 20, retention.reserve_bytes >> 20, STORE_MAX_CMDLINE_DEFAULT,
               VARLINK_DEFAULT_MAX_MESSAGE_SIZE / 1024,
               VARLINK_DEFAULT_MAX_BUFFER / (1024 * 1024), VARLINK_DEFAULT_MAX_CONNECTIONS,
               VARLINK_DEFAULT_MAX_CONNECTIONS_PER_UID, VARLINK_DEFAULT_RESERVED_CONNECTIONS,
               VARLINK_DEFAULT_IDLE_TIMEOUT_SEC, (size_t) QUERY_DEFAULT_MAX_REPLY_SIZE >> 20, QUERY_DEFAULT_THREADS,
               QUERY_DEFAULT_PER_UID, (unsigned long long) QUERY_DEFAULT_COST_LIMIT,
               QUERY_DEFAULT_TIME_LIMIT_USEC / 1000000U, WRITER_DEFAULT_QUEUE);
}

_Static_assert(METRICS_MIN_MAX == 99, "--report-max-metrics' message says 99");
_Static_assert(SYMBOL_WORKER_FILES_PER_MINUTE_DEFAULT == 64, "--symbol-files-per-minute's message says 64");
_Static_assert(SYMBOL_WORKER_BYTES_PER_MINUTE_DEFAULT == 64 << 20, "--symbol-bytes-per-minute's message says 64M");

static int usage_error(const char *fmt, const char *arg) {
        fprintf(stderr, "trapstatd: ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\nTry 'trapstatd --help'.\n");
        return 2;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        if (!s || *s == '\0' || *s == '-')
                return -EINVAL;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0' || v == 0 || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* "raw=24h,minute=14d,hour=365d", any subset; a coarser tier keeps at least as long as a
 * finer one (else its rows would be gone before the finer tier's are rolled into it). */
static int parse_retention(const char *s, StoreRetention *r) {
        StoreRetention n = *r;
        _cleanup_free_ char *copy = strdup(s);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(item, '=');
                uint64_t usec;

                if (!eq || parse_duration_usec(eq + 1, &usec) < 0 || usec < 60 * USEC_PER_SEC)
                        return -EINVAL;
                *eq = '\0';
                if (strcmp(item, "raw") == 0)
                        n.raw_usec = usec;
                else if (strcmp(item, "minute") == 0)
                        n.minute_usec = usec;
                else if (strcmp(item, "hour") == 0)
                        n.hour_usec = usec;
                else
                        return -EINVAL;
        }
        if (n.minute_usec < n.raw_usec || n.hour_usec < n.minute_usec)
                return -EINVAL;
        *r = n;
        return 0;
}

/* "256M", "2G", "1048576"; 0 turns the cap off. */
static int parse_size(const char *s, uint64_t *ret) {
        static const char units[] = "KMGT";
        unsigned long long v;
        char *end;
        uint64_t mult = 1;

        errno = 0;
        if (!s || *s == '\0' || *s == '-')
                return -EINVAL;
        v = strtoull(s, &end, 10);
        if (errno != 0 || end == s)
                return -EINVAL;
        if (*end) {
                const char *u = strchr(units, *end);
                if (!u || end[1] != '\0')
                        return -EINVAL;
                mult = UINT64_C(1) << (10 * (u - units + 1));
        }
        if (v > UINT64_MAX / mult)
                return -ERANGE;
        *ret = v * mult;
        return 0;
}

/* $STATE_DIRECTORY / $RUNTIME_DIRECTORY may list several directories separated by ':'. */
static char *first_of_env(const char *name) {
        const char *v = getenv(name);
        return v && *v ? strndup(v, strcspn(v, ":")) : NULL;
}

int main(int argc, char *argv[]) {
        enum { ARG_SLOTS = 0x100, ARG_MAX_PROCESSES, ARG_EVENT_BUFFER, ARG_DISABLE_SOURCE, ARG_RETENTION, ARG_MAX_DB_SIZE, ARG_MAX_MESSAGE_SIZE, ARG_MAX_CONNECTIONS, ARG_MAX_CONNECTIONS_PER_UID, ARG_IDLE_TIMEOUT, ARG_VERSION,
               ARG_MAX_BUFFER, ARG_RESERVED_CONNECTIONS, ARG_QUERY_THREADS, ARG_QUERIES_PER_UID, ARG_QUERY_COST_LIMIT, ARG_FAULT_SAMPLE, ARG_MAX_SITES, ARG_MAX_SITES_PER_PROCESS, ARG_MAX_SITES_PER_USER, ARG_SITE_RESERVE, ARG_SITE_MAPS_LINES, ARG_SYMBOL_FILES_PER_MINUTE, ARG_SYMBOL_BYTES_PER_MINUTE, ARG_MAX_UNIT_TOTALS, ARG_REPORT_SOCKET, ARG_REPORT_MAX_METRICS,
               ARG_DB_RESERVE, ARG_MAX_CMDLINE, ARG_WRITE_TIMEOUT, ARG_MAX_REPLY_SIZE, ARG_QUERY_TIME_LIMIT,
               ARG_WRITER_QUEUE, ARG_ENABLE_SOURCE };
        static const struct option options[] = {
                { "state-dir", required_argument, NULL, 's' },
                { "socket", required_argument, NULL, 'S' },
                { "tick", required_argument, NULL, 't' },
                { "slots", required_argument, NULL, ARG_SLOTS },
                { "max-processes", required_argument, NULL, ARG_MAX_PROCESSES },
                { "event-buffer", required_argument, NULL, ARG_EVENT_BUFFER },
                { "disable-source", required_argument, NULL, ARG_DISABLE_SOURCE },
                { "enable-source", required_argument, NULL, ARG_ENABLE_SOURCE },
                { "fault-sample", required_argument, NULL, ARG_FAULT_SAMPLE },
                { "max-sites", required_argument, NULL, ARG_MAX_SITES },
                { "max-sites-per-process", required_argument, NULL, ARG_MAX_SITES_PER_PROCESS },
                { "max-sites-per-user", required_argument, NULL, ARG_MAX_SITES_PER_USER },
                { "site-reserve", required_argument, NULL, ARG_SITE_RESERVE },
                { "site-maps-lines", required_argument, NULL, ARG_SITE_MAPS_LINES },
                { "symbol-files-per-minute", required_argument, NULL, ARG_SYMBOL_FILES_PER_MINUTE },
                { "symbol-bytes-per-minute", required_argument, NULL, ARG_SYMBOL_BYTES_PER_MINUTE },
                { "max-unit-totals", required_argument, NULL, ARG_MAX_UNIT_TOTALS },
                { "report-socket", required_argument, NULL, ARG_REPORT_SOCKET },
                { "report-max-metrics", required_argument, NULL, ARG_REPORT_MAX_METRICS },
                { "retention", required_argument, NULL, ARG_RETENTION },
                { "max-db-size", required_argument, NULL, ARG_MAX_DB_SIZE },
                { "db-reserve", required_argument, NULL, ARG_DB_RESERVE },
                { "max-cmdline", required_argument, NULL, ARG_MAX_CMDLINE },
                { "max-message-size", required_argument, NULL, ARG_MAX_MESSAGE_SIZE },
                { "max-connections", required_argument, NULL, ARG_MAX_CONNECTIONS },
                { "max-connections-per-uid", required_argument, NULL, ARG_MAX_CONNECTIONS_PER_UID },
                { "idle-timeout", required_argument, NULL, ARG_IDLE_TIMEOUT },
                { "max-buffer", required_argument, NULL, ARG_MAX_BUFFER },
                { "reserved-connections", required_argument, NULL, ARG_RESERVED_CONNECTIONS },
                { "query-threads", required_argument, NULL, ARG_QUERY_THREADS },
                { "writer-queue", required_argument, NULL, ARG_WRITER_QUEUE },
                { "queries-per-uid", required_argument, NULL, ARG_QUERIES_PER_UID },
                { "query-cost-limit", required_argument, NULL, ARG_QUERY_COST_LIMIT },
                { "query-time-limit", required_argument, NULL, ARG_QUERY_TIME_LIMIT },
                { "write-timeout", required_argument, NULL, ARG_WRITE_TIMEOUT },
                { "max-reply-size", required_argument, NULL, ARG_MAX_REPLY_SIZE },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {},
        };
        _cleanup_free_ char *env_state = first_of_env("STATE_DIRECTORY"), *env_runtime = first_of_env("RUNTIME_DIRECTORY"),
                            *runtime_socket = NULL;
        ManagerConfig config = { .tick_usec = TRAPSTAT_DEFAULT_TICK_USEC, .retention = STORE_RETENTION_DEFAULT,
                                 .max_cmdline = STORE_MAX_CMDLINE_DEFAULT };
        unsigned long long v;
        uint64_t usec;
        Manager *m = NULL;
        int c, r;

        while ((c = getopt_long(argc, argv, "s:S:t:vh", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        config.state_dir = optarg;
                        break;
                case 'S':
                        config.socket_path = optarg;
                        break;
                case 't':
                        if (parse_duration_usec(optarg, &usec) < 0 || usec < 10 * USEC_PER_MSEC || usec > 3600 * USEC_PER_SEC)
                                return usage_error("invalid --tick '%s': expected a duration from 10ms to 1h", optarg);
                        config.tick_usec = usec;
                        break;
                case ARG_SLOTS:
                        if (parse_uint(optarg, 1U << 22, &v) < 0 || (v & (v - 1)) != 0)
                                return usage_error("invalid --slots '%s': expected a power of two from 1 to 4194304", optarg);
                        config.slots = (uint32_t) v;
                        break;
                case ARG_MAX_PROCESSES:
                        if (parse_uint(optarg, 1U << 22, &v) < 0)
                                return usage_error("invalid --max-processes '%s': expected 1 to 4194304", optarg);
                        config.max_processes = (uint32_t) v;
                        break;
                case ARG_EVENT_BUFFER: {
                        uint64_t bytes;

                        if (parse_size(optarg, &bytes) < 0 || !collector_event_buffer_valid(bytes))
                                return usage_error("invalid --event-buffer '%s': expected a power of two from the page "
                                                   "size to 1G, e.g. 4M", optarg);
                        config.event_buffer = (uint32_t) bytes;
                        break;
                }
                case ARG_FAULT_SAMPLE:
                        if (strcmp(optarg, "0") == 0)
                                v = 0;
                        else if (parse_uint(optarg, COLLECTOR_FAULT_SAMPLE_MAX, &v) < 0 || (v & (v - 1)) != 0)
                                return usage_error("invalid --fault-sample '%s': expected 0 (off) or a power of two up "
                                                   "to 1073741824", optarg);
                        config.fault_sample = v == 0 ? COLLECTOR_FAULT_SAMPLE_OFF : (uint32_t) v;
                        break;
                case ARG_MAX_SITES:
                        if (parse_uint(optarg, 1U << 22, &v) < 0)
                                return usage_error("invalid --max-sites '%s': expected 1 to 4194304", optarg);
                        config.max_sites = (uint32_t) v;
                        break;
                case ARG_MAX_SITES_PER_PROCESS:
                        if (parse_uint(optarg, 1U << 22, &v) < 0)
                                return usage_error("invalid --max-sites-per-process '%s': expected 1 to 4194304", optarg);
                        config.max_sites_per_process = (uint32_t) v;
                        break;
                case ARG_MAX_SITES_PER_USER:
                        if (parse_uint(optarg, 1U << 22, &v) < 0)
                                return usage_error("invalid --max-sites-per-user '%s': expected 1 to 4194304", optarg);
                        config.max_sites_per_user = (uint32_t) v;
                        break;
                case ARG_SITE_RESERVE:
                        if (strcmp(optarg, "0") == 0)
                                v = 0;
                        else if (parse_uint(optarg, (1U << 22) - 1, &v) < 0)
                                return usage_error("invalid --site-reserve '%s': expected 0 to 4194303", optarg);
                        config.site_reserve = v == 0 ? COLLECTOR_SITE_RESERVE_NONE : (uint32_t) v;
                        break;
                case ARG_SITE_MAPS_LINES:
                        if (strcmp(optarg, "0") == 0)
                                v = 0;
                        else if (parse_uint(optarg, 1U << 30, &v) < 0)
                                return usage_error("invalid --site-maps-lines '%s': expected 0 to 1073741824", optarg);
                        config.site_maps_lines = v == 0 ? COLLECTOR_SITE_MAPS_LINES_NONE : (uint32_t) v;
                        break;
                case ARG_SYMBOL_FILES_PER_MINUTE:
                        if (parse_uint(optarg, 1000000, &v) < 0)
                                return usage_error("invalid --symbol-files-per-minute '%s': expected 1 to 1000000", optarg);
                        config.symbol_files_per_minute = v;
                        break;
                case ARG_SYMBOL_BYTES_PER_MINUTE: {
                        uint64_t bytes;

                        if (parse_size(optarg, &bytes) < 0 || bytes == 0 || bytes > (UINT64_C(1) << 40))
                                return usage_error("invalid --symbol-bytes-per-minute '%s': expected a size from 1 to 1T, "
                                                   "e.g. 64M", optarg);
                        config.symbol_bytes_per_minute = bytes;
                        break;
                }
                case ARG_REPORT_SOCKET:
                        config.report_socket_path = optarg;
                        break;
                case ARG_REPORT_MAX_METRICS:
                        /* At least the system-wide series and one unit's: "other" always fits. */
                        if (parse_uint(optarg, 1000000, &v) < 0 || v < METRICS_MIN_MAX)
                                return usage_error("invalid --report-max-metrics '%s': expected 99 to 1000000", optarg);
                        config.report_max_metrics = (size_t) v;
                        break;
                case ARG_MAX_UNIT_TOTALS:
                        if (parse_uint(optarg, 1000000, &v) < 0 || v == 0)
                                return usage_error("invalid --max-unit-totals '%s': expected 1 to 1000000", optarg);
                        config.max_unit_totals = (size_t) v;
                        break;
                case ARG_DISABLE_SOURCE:
                        if (collector_check_sources(optarg, "--disable-source") < 0)
                                return usage_error("invalid --disable-source '%s'", optarg);
                        config.disable_sources = optarg;
                        break;
                case ARG_ENABLE_SOURCE:
                        if (collector_check_sources(optarg, "--enable-source") < 0)
                                return usage_error("invalid --enable-source '%s'", optarg);
                        config.enable_sources = optarg;
                        break;
                case ARG_RETENTION:
                        if (parse_retention(optarg, &config.retention) < 0)
                                return usage_error("invalid --retention '%s': expected e.g. raw=24h,minute=14d,hour=365d "
                                                   "(each tier at least as long as the finer one)", optarg);
                        break;
                case ARG_MAX_DB_SIZE:
                        if (parse_size(optarg, &config.retention.max_bytes) < 0)
                                return usage_error("invalid --max-db-size '%s': expected bytes with K, M, G or T, e.g. 256M", optarg);
                        break;
                case ARG_DB_RESERVE:
                        if (parse_size(optarg, &config.retention.reserve_bytes) < 0)
                                return usage_error("invalid --db-reserve '%s': expected bytes with K, M, G or T, e.g. 32M", optarg);
                        break;
                case ARG_MAX_CMDLINE:
                        if (parse_uint(optarg, 4096, &v) < 0 || v < 16)
                                return usage_error("invalid --max-cmdline '%s': expected 16 to 4096", optarg);
                        config.max_cmdline = (size_t) v;
                        break;
                case ARG_MAX_MESSAGE_SIZE: {
                        uint64_t bytes;

                        if (parse_size(optarg, &bytes) < 0 || bytes < 4096 || bytes > (UINT64_C(1) << 30))
                                return usage_error("invalid --max-message-size '%s': expected 4K to 1G", optarg);
                        config.max_message_size = (size_t) bytes;
                        break;
                }
                case ARG_MAX_BUFFER: {
                        uint64_t bytes;

                        if (parse_size(optarg, &bytes) < 0 || bytes < 65536 || bytes > (UINT64_C(1) << 34))
                                return usage_error("invalid --max-buffer '%s': expected 64K to 16G", optarg);
                        config.max_buffer = (size_t) bytes;
                        break;
                }
                case ARG_RESERVED_CONNECTIONS:
                        /* 0 is allowed here: no reserve. */
                        if (strcmp(optarg, "0") == 0)
                                v = 0;
                        else if (parse_uint(optarg, 1U << 20, &v) < 0)
                                return usage_error("invalid --reserved-connections '%s': expected 0 to 1048576", optarg);
                        config.reserved_connections = v == 0 ? (unsigned) -1 : (unsigned) v;
                        break;
                case ARG_QUERY_THREADS:
                        if (parse_uint(optarg, 64, &v) < 0)
                                return usage_error("invalid --query-threads '%s': expected 1 to 64", optarg);
                        config.query_threads = (unsigned) v;
                        break;
                case ARG_WRITER_QUEUE:
                        if (parse_uint(optarg, 1024, &v) < 0)
                                return usage_error("invalid --writer-queue '%s': expected 1 to 1024", optarg);
                        config.writer_queue = (unsigned) v;
                        break;
                case ARG_QUERIES_PER_UID:
                        if (parse_uint(optarg, 64, &v) < 0)
                                return usage_error("invalid --queries-per-uid '%s': expected 1 to 64", optarg);
                        config.queries_per_uid = (unsigned) v;
                        break;
                case ARG_QUERY_COST_LIMIT:
                        if (parse_uint(optarg, UINT64_C(1) << 50, &v) < 0)
                                return usage_error("invalid --query-cost-limit '%s': expected 1 to 2^50", optarg);
                        config.query_cost_limit = v;
                        break;
                case ARG_QUERY_TIME_LIMIT:
                        if (parse_duration_usec(optarg, &usec) < 0 || usec < USEC_PER_MSEC || usec > 3600 * USEC_PER_SEC)
                                return usage_error("invalid --query-time-limit '%s': expected a duration from 1ms to 1h", optarg);
                        config.query_time_limit_usec = usec;
                        break;
                case ARG_WRITE_TIMEOUT:
                        if (parse_duration_usec(optarg, &usec) < 0 || usec < 100 * USEC_PER_MSEC || usec > 86400 * USEC_PER_SEC)
                                return usage_error("invalid --write-timeout '%s': expected a duration from 100ms to 1d", optarg);
                        config.write_timeout_usec = usec;
                        break;
                case ARG_MAX_REPLY_SIZE: {
                        uint64_t bytes;

                        if (parse_size(optarg, &bytes) < 0 || bytes < 4096 || bytes > (UINT64_C(1) << 30))
                                return usage_error("invalid --max-reply-size '%s': expected 4K to 1G", optarg);
                        config.max_reply_size = (size_t) bytes;
                        break;
                }
                case ARG_MAX_CONNECTIONS:
                        if (parse_uint(optarg, 1U << 20, &v) < 0)
                                return usage_error("invalid --max-connections '%s': expected 1 to 1048576", optarg);
                        config.max_connections = (unsigned) v;
                        break;
                case ARG_MAX_CONNECTIONS_PER_UID:
                        if (parse_uint(optarg, 1U << 20, &v) < 0)
                                return usage_error("invalid --max-connections-per-uid '%s': expected 1 to 1048576", optarg);
                        config.max_connections_per_uid = (unsigned) v;
                        break;
                case ARG_IDLE_TIMEOUT:
                        if (parse_duration_usec(optarg, &usec) < 0 || usec < USEC_PER_SEC || usec > 86400 * USEC_PER_SEC)
                                return usage_error("invalid --idle-timeout '%s': expected a duration from 1s to 1d", optarg);
                        config.idle_timeout_sec = (unsigned) (usec / USEC_PER_SEC);
                        break;
                case 'v':
                        log_set_max_level(LOG_LEVEL_DEBUG);
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("trapstatd %s\n", TRAPSTAT_VERSION);
                        return 0;
                default:
                        fprintf(stderr, "Try 'trapstatd --help'.\n");
                        return 2;
                }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);
        if (collector_check_source_lists(config.disable_sources, config.enable_sources) < 0)
                return usage_error("invalid --enable-source '%s'", config.enable_sources);
        if (config.site_reserve != 0 && config.site_reserve != COLLECTOR_SITE_RESERVE_NONE &&
            config.site_reserve >= (config.max_sites ?: TS_DEFAULT_MAX_SITES))
                return usage_error("invalid --site-reserve: %s", "it must be less than --max-sites");

        if (!config.state_dir)
                config.state_dir = env_state ?: TRAPSTAT_DEFAULT_STATE_DIR;
        if (!config.socket_path) {
                if (env_runtime && asprintf(&runtime_socket, "%s/io.trapstat", env_runtime) < 0)
                        return EXIT_FAILURE;
                config.socket_path = runtime_socket ?: TRAPSTAT_DEFAULT_SOCKET;
        }
        /* Under systemd, stderr goes to the journal: tag lines with their priority. */
        log_set_prefix_priority(getenv("JOURNAL_STREAM") != NULL);

        /* An explicit reserve must leave room for everyone else; the default one shrinks itself. */
        if (config.reserved_connections != 0 && config.reserved_connections != (unsigned) -1 &&
            config.reserved_connections >= (config.max_connections ?: VARLINK_DEFAULT_MAX_CONNECTIONS)) {
                fprintf(stderr, "trapstatd: --reserved-connections must be less than --max-connections\n");
                return 2;
        }

        /* In a VM a page fault costs about 20 us, and giving pages back flushes the TLBs of every
         * CPU. The daemon allocates and frees the same few hundred KB over and over: the tick's
         * copy for the writer (170 bytes a process, 170 KB at 1000 processes), a day's History
         * (1440 samples, a 200 KB reply). From mmap (glibc's threshold was 128 KB here), or
         * trimmed off the heap at every free, each tick and each call faulted those pages in
         * anew: half the daemon's CPU at 1000 processes, and 14 of 18 ms of such a History
         * call. So allocations up to 4 MiB come from the heap, and up to 8 MiB of free heap stays
         * for the next use; the query pool gives it back once the calls stop (query-pool.c,
         * QUERY_TRIM_IDLE_USEC), the symbol worker after each table it read. Fixed values also
         * stop glibc from raising its threshold to the largest allocation seen (a big reply).
         * Two arenas: the workers' allocations need no more. */
        (void) mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
        (void) mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
        (void) mallopt(M_ARENA_MAX, 2);
        /* SQLite's allocation statistics (nothing here reads them) take a mutex shared by every
         * connection on each allocation: 7 % of the query threads' time in a History of a day. */
        (void) sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);

        /* Every client is an fd: take the hard limit, as --max-connections may ask for many. */
        struct rlimit nofile;
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
                nofile.rlim_cur = nofile.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &nofile);
        }

        /* Tests hold the writer while this file exists (the writer falling behind). */
        config.writer_hold_file = secure_getenv("TRAPSTATD_TEST_HOLD_WRITER");
        r = manager_new(&config, &m);
        if (r < 0)
                return EXIT_FAILURE;
        r = manager_start(m);
        if (r >= 0)
                r = manager_run(m);
        manager_free(m);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

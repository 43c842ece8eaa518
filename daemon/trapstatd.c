/* SPDX-License-Identifier: MIT */
/* trapstatd: counts page faults per process in the kernel, keeps their history in SQLite and
 * answers queries over varlink. Arguments here; everything else in manager.c. */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "argv-util.h"
#include "collector.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "query-pool.h"
#include "systemd-metrics-util.h"
#include "time-util.h"
#include "varlink.h"

static bool arg_probe = false;

/* The end of help(): what is not about the daemon's limits. */
static void help_general(void) {
        printf("      --bpf-object NAME      run this BPF object, full, noloop or base, instead of the\n"
               "                             richest the kernel can run (see --probe)\n"
               "      --probe                print what this kernel offers BPF, the object and sources it\n"
               "                             can run and the features active with the options given, load\n"
               "                             nothing but the probes, and exit (1 when it can run none)\n"
               "  -v, --verbose              debug logging\n"
               "  -h, --help                 this help\n"
               "      --version              print the version\n");
}

static void help_sources_and_limits(void);

static void help(void) {
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
               "      --slot-idle DURATION   a slot's owner idle this long gives it up to a process that\n"
               "                             counts outside slots; 0: any, every tick (default: 30s)\n"
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
               "      --site-maps-lines N    lines of /proc/PID/maps read per tick to name live processes'\n"
               "                             site files and sites whose lookup failed; 0: none\n"
               "                             (default: 262144)\n"
               "      --symbol-files-per-minute N  files whose symbol tables are parsed for one user in\n"
               "                             a minute; past it their sites keep file and offset (default: 64)\n"
               "      --symbol-bytes-per-minute SIZE  bytes of symbol tables parsed for one user in a\n"
               "                             minute (default: 64M)\n"
               "      --max-unit-totals N    units the running totals (UnitTotals) are kept of; newer ones\n"
               "                             are summed into \"other\" (default: %u)\n",
               TRAPSTAT_DEFAULT_STATE_DIR, TRAPSTAT_DEFAULT_SOCKET, DEFAULT_REPORT_MAX_METRICS, METRICS_MIN_MAX,
               COLLECTOR_DEFAULT_SLOTS, COLLECTOR_DEFAULT_MAX_PROCESSES, COLLECTOR_DEFAULT_EVENT_BUFFER >> 20, COLLECTOR_DEFAULT_FAULT_SAMPLE,
               COLLECTOR_DEFAULT_MAX_SITES, COLLECTOR_DEFAULT_MAX_SITES_PER_PROCESS, DEFAULT_MAX_UNIT_TOTALS);
        help_sources_and_limits();
}

/* The options after the collector's: its sources, then the store's, the server's and the
 * queries'. */
static void help_sources_and_limits(void) {
        const StoreRetention retention = STORE_RETENTION_DEFAULT;

        printf("      --disable-source LIST  event sources not to use, comma-separated (see trapstat status)\n"
               "      --enable-source LIST   sources off by default to use: fault_time (how long each page\n"
               "                             fault took; it costs more per fault than the counting)\n"
               "      --enable-delay-accounting  turn the kernel's delay accounting on at start\n"
               "                             (kernel.task_delayacct=1; needs CAP_SYS_ADMIN; stays on)\n"
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
               "                             into the last one waiting (default: %u; 1 to 1024)\n",
               retention.raw_usec / (3600 * USEC_PER_SEC), retention.minute_usec / (86400 * USEC_PER_SEC),
               retention.hour_usec / (86400 * USEC_PER_SEC), retention.max_bytes >> 20, retention.reserve_bytes >> 20,
               STORE_MAX_CMDLINE_DEFAULT, VARLINK_DEFAULT_MAX_MESSAGE_SIZE / 1024,
               VARLINK_DEFAULT_MAX_BUFFER / (1024 * 1024), VARLINK_DEFAULT_MAX_CONNECTIONS,
               VARLINK_DEFAULT_MAX_CONNECTIONS_PER_UID, VARLINK_DEFAULT_RESERVED_CONNECTIONS,
               VARLINK_DEFAULT_IDLE_TIMEOUT_SEC, (size_t) QUERY_DEFAULT_MAX_REPLY_SIZE >> 20, QUERY_DEFAULT_THREADS,
               QUERY_DEFAULT_PER_UID, (unsigned long long) QUERY_DEFAULT_COST_LIMIT,
               QUERY_DEFAULT_TIME_LIMIT_USEC / 1000000U, WRITER_DEFAULT_QUEUE);
        help_general();
}

_Static_assert(METRICS_MIN_MAX == 133, "--report-max-metrics' message says 133");
_Static_assert(COLLECTOR_SYMBOL_FILES_PER_MINUTE_DEFAULT == 64, "--symbol-files-per-minute's message says 64");
_Static_assert(COLLECTOR_SYMBOL_BYTES_PER_MINUTE_DEFAULT == 64 << 20, "--symbol-bytes-per-minute's message says 64M");

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

/* $STATE_DIRECTORY / $RUNTIME_DIRECTORY may list several directories separated by ':'. */
static char *first_of_env(const char *name) {
        const char *v = getenv(name);
        return v && *v ? strndup(v, strcspn(v, ":")) : NULL;
}

enum {
        ARG_SLOTS = 0x100,
        ARG_MAX_PROCESSES,
        ARG_SLOT_IDLE,
        ARG_EVENT_BUFFER,
        ARG_DISABLE_SOURCE,
        ARG_ENABLE_SOURCE,
        ARG_ENABLE_DELAY_ACCOUNTING,
        ARG_RETENTION,
        ARG_MAX_DB_SIZE,
        ARG_DB_RESERVE,
        ARG_MAX_CMDLINE,
        ARG_MAX_MESSAGE_SIZE,
        ARG_MAX_BUFFER,
        ARG_MAX_CONNECTIONS,
        ARG_MAX_CONNECTIONS_PER_UID,
        ARG_RESERVED_CONNECTIONS,
        ARG_IDLE_TIMEOUT,
        ARG_WRITE_TIMEOUT,
        ARG_QUERY_THREADS,
        ARG_QUERIES_PER_UID,
        ARG_QUERY_COST_LIMIT,
        ARG_QUERY_TIME_LIMIT,
        ARG_MAX_REPLY_SIZE,
        ARG_WRITER_QUEUE,
        ARG_FAULT_SAMPLE,
        ARG_MAX_SITES,
        ARG_MAX_SITES_PER_PROCESS,
        ARG_MAX_SITES_PER_USER,
        ARG_SITE_RESERVE,
        ARG_SITE_MAPS_LINES,
        ARG_SYMBOL_FILES_PER_MINUTE,
        ARG_SYMBOL_BYTES_PER_MINUTE,
        ARG_MAX_UNIT_TOTALS,
        ARG_REPORT_SOCKET,
        ARG_REPORT_MAX_METRICS,
        ARG_VERSION,
        ARG_PROBE,
        ARG_BPF_OBJECT,
};

typedef enum NumberKind {
        NUMBER_COUNT,    /* parse_integer() */
        NUMBER_SIZE,     /* parse_integer(PARSE_INTEGER_SIZE): "4M" */
        NUMBER_DURATION, /* parse_duration_usec(): "250ms" */
} NumberKind;

/* An option that takes a number and stores it in one field of ManagerConfig, most in the config
 * of the part it is for. */
typedef struct NumberOption {
        int key; /* what getopt_long() returns */
        const char *name;
        NumberKind kind;
        uint64_t min, max; /* in the kind's unit (bytes, µs) */
        bool power_of_two;
        bool (*valid)(uint64_t v); /* instead of min and max */
        /* "0" alone is accepted and stored as this, when nonzero (the field's own 0 means
         * "default"). */
        uint64_t zero_means;
        uint64_t divisor; /* stored as v / divisor; 0: as it is */
        size_t offset, size;
        const char *expected; /* "invalid --NAME 'ARG': " ... */
} NumberOption;

#define FIELD(f) .offset = offsetof(ManagerConfig, f), .size = sizeof(((ManagerConfig *) NULL)->f)

static const NumberOption number_options[] = {
        { 't', "tick", NUMBER_DURATION, 10 * USEC_PER_MSEC, 3600 * USEC_PER_SEC, FIELD(tick_usec),
          .expected = "expected a duration from 10ms to 1h" },
        { ARG_SLOTS, "slots", NUMBER_COUNT, 1, 1U << 22, .power_of_two = true, FIELD(collector.slots),
          .expected = "expected a power of two from 1 to 4194304" },
        { ARG_MAX_PROCESSES, "max-processes", NUMBER_COUNT, 1, 1U << 22, FIELD(collector.max_processes),
          .expected = "expected 1 to 4194304" },
        { ARG_SLOT_IDLE, "slot-idle", NUMBER_DURATION, USEC_PER_MSEC, 86400 * USEC_PER_SEC,
          .zero_means = COLLECTOR_SLOT_IDLE_ANY, FIELD(collector.slot_idle_usec),
          .expected = "expected 0 or a duration from 1ms to 1d" },
        { ARG_EVENT_BUFFER, "event-buffer", NUMBER_SIZE, .valid = collector_event_buffer_valid,
          FIELD(collector.event_buffer),
          .expected = "expected a power of two from the page size to 1G, e.g. 4M" },
        { ARG_FAULT_SAMPLE, "fault-sample", NUMBER_COUNT, 1, COLLECTOR_FAULT_SAMPLE_MAX, .power_of_two = true,
          .zero_means = COLLECTOR_FAULT_SAMPLE_OFF, FIELD(collector.fault_sample),
          .expected = "expected 0 (off) or a power of two up to 1073741824" },
        { ARG_MAX_SITES, "max-sites", NUMBER_COUNT, 1, 1U << 22, FIELD(collector.max_sites),
          .expected = "expected 1 to 4194304" },
        { ARG_MAX_SITES_PER_PROCESS, "max-sites-per-process", NUMBER_COUNT, 1, 1U << 22,
          FIELD(collector.max_sites_per_process),
          .expected = "expected 1 to 4194304" },
        { ARG_MAX_SITES_PER_USER, "max-sites-per-user", NUMBER_COUNT, 1, 1U << 22, FIELD(collector.max_sites_per_user),
          .expected = "expected 1 to 4194304" },
        { ARG_SITE_RESERVE, "site-reserve", NUMBER_COUNT, 1, (1U << 22) - 1, .zero_means = COLLECTOR_SITE_RESERVE_NONE,
          FIELD(collector.site_reserve), .expected = "expected 0 to 4194303" },
        { ARG_SITE_MAPS_LINES, "site-maps-lines", NUMBER_COUNT, 1, 1U << 30,
          .zero_means = COLLECTOR_SITE_MAPS_LINES_NONE, FIELD(collector.site_maps_lines),
          .expected = "expected 0 to 1073741824" },
        { ARG_SYMBOL_FILES_PER_MINUTE, "symbol-files-per-minute", NUMBER_COUNT, 1, 1000000,
          FIELD(collector.symbol_files_per_minute), .expected = "expected 1 to 1000000" },
        { ARG_SYMBOL_BYTES_PER_MINUTE, "symbol-bytes-per-minute", NUMBER_SIZE, 1, UINT64_C(1) << 40,
          FIELD(collector.symbol_bytes_per_minute), .expected = "expected a size from 1 to 1T, e.g. 64M" },
        /* At least the system-wide series and one unit's: "other" always fits. */
        { ARG_REPORT_MAX_METRICS, "report-max-metrics", NUMBER_COUNT, METRICS_MIN_MAX, 1000000,
          FIELD(report_max_metrics), .expected = "expected 133 to 1000000" },
        { ARG_MAX_UNIT_TOTALS, "max-unit-totals", NUMBER_COUNT, 1, 1000000, FIELD(max_unit_totals),
          .expected = "expected 1 to 1000000" },
        { ARG_MAX_DB_SIZE, "max-db-size", NUMBER_SIZE, 0, UINT64_MAX, FIELD(writer.retention.max_bytes),
          .expected = "expected bytes with K, M, G or T, e.g. 256M" },
        { ARG_DB_RESERVE, "db-reserve", NUMBER_SIZE, 0, UINT64_MAX, FIELD(writer.retention.reserve_bytes),
          .expected = "expected bytes with K, M, G or T, e.g. 32M" },
        { ARG_MAX_CMDLINE, "max-cmdline", NUMBER_COUNT, 16, 4096, FIELD(writer.max_cmdline),
          .expected = "expected 16 to 4096" },
        { ARG_MAX_MESSAGE_SIZE, "max-message-size", NUMBER_SIZE, 4096, UINT64_C(1) << 30,
          FIELD(server.max_message_size),
          .expected = "expected 4K to 1G" },
        { ARG_MAX_BUFFER, "max-buffer", NUMBER_SIZE, 65536, UINT64_C(1) << 34, FIELD(server.max_buffer),
          .expected = "expected 64K to 16G" },
        /* 0 is allowed here: no reserve. */
        { ARG_RESERVED_CONNECTIONS, "reserved-connections", NUMBER_COUNT, 1, 1U << 20, .zero_means = (unsigned) -1,
          FIELD(server.reserved_connections), .expected = "expected 0 to 1048576" },
        { ARG_QUERY_THREADS, "query-threads", NUMBER_COUNT, 1, 64, FIELD(queries.threads),
          .expected = "expected 1 to 64" },
        { ARG_WRITER_QUEUE, "writer-queue", NUMBER_COUNT, 1, 1024, FIELD(writer.max_queue),
          .expected = "expected 1 to 1024" },
        { ARG_QUERIES_PER_UID, "queries-per-uid", NUMBER_COUNT, 1, 64, FIELD(queries.per_uid),
          .expected = "expected 1 to 64" },
        { ARG_QUERY_COST_LIMIT, "query-cost-limit", NUMBER_COUNT, 1, UINT64_C(1) << 50, FIELD(queries.cost_limit),
          .expected = "expected 1 to 2^50" },
        { ARG_QUERY_TIME_LIMIT, "query-time-limit", NUMBER_DURATION, USEC_PER_MSEC, 3600 * USEC_PER_SEC,
          FIELD(queries.time_limit_usec), .expected = "expected a duration from 1ms to 1h" },
        { ARG_WRITE_TIMEOUT, "write-timeout", NUMBER_DURATION, 100 * USEC_PER_MSEC, 86400 * USEC_PER_SEC,
          FIELD(server.write_timeout_usec), .expected = "expected a duration from 100ms to 1d" },
        { ARG_MAX_REPLY_SIZE, "max-reply-size", NUMBER_SIZE, 4096, UINT64_C(1) << 30, FIELD(queries.max_reply_size),
          .expected = "expected 4K to 1G" },
        { ARG_MAX_CONNECTIONS, "max-connections", NUMBER_COUNT, 1, 1U << 20, FIELD(server.max_connections),
          .expected = "expected 1 to 1048576" },
        { ARG_MAX_CONNECTIONS_PER_UID, "max-connections-per-uid", NUMBER_COUNT, 1, 1U << 20,
          FIELD(server.max_connections_per_uid), .expected = "expected 1 to 1048576" },
        { ARG_IDLE_TIMEOUT, "idle-timeout", NUMBER_DURATION, USEC_PER_SEC, 86400 * USEC_PER_SEC,
          .divisor = USEC_PER_SEC, FIELD(server.idle_timeout_sec), .expected = "expected a duration from 1s to 1d" },
};

static const NumberOption *number_option_find(int key) {
        for (size_t i = 0; i < ELEMENTSOF(number_options); i++)
                if (number_options[i].key == key)
                        return &number_options[i];
        return NULL;
}

static int number_option_parse(const NumberOption *o, const char *arg, uint64_t *ret) {
        uint64_t v;

        if (o->zero_means != 0 && strcmp(arg, "0") == 0) {
                *ret = o->zero_means;
                return 0;
        }
        switch (o->kind) {
        case NUMBER_COUNT:
                /* No 0 (the options that take 0 say so, zero_means). */
                if (parse_integer(arg, MAX(o->min, 1), o->max, 0, &v) < 0)
                        return -EINVAL;
                break;
        case NUMBER_SIZE:
                if (parse_integer(arg, 0, UINT64_MAX, PARSE_INTEGER_SIZE, &v) < 0)
                        return -EINVAL;
                break;
        case NUMBER_DURATION:
                if (parse_duration_usec(arg, &v) < 0)
                        return -EINVAL;
                break;
        default:
                return -EINVAL;
        }
        if (o->valid ? !o->valid(v) : v < o->min || v > o->max)
                return -EINVAL;
        if (o->power_of_two && (v & (v - 1)) != 0)
                return -EINVAL;
        *ret = o->divisor ? v / o->divisor : v;
        return 0;
}

/* Parses arg for o into its field of config, or says what it expected. */
static int number_option_set(const NumberOption *o, const char *arg, ManagerConfig *config) {
        void *field = (uint8_t *) config + o->offset;
        uint64_t v;

        /* unsigned and uint32_t fields, size_t and uint64_t ones. */
        assert(o->size == sizeof(uint32_t) || o->size == sizeof(uint64_t));
        if (number_option_parse(o, arg, &v) < 0)
                return usage_error(NULL, "invalid --%s '%s': %s", o->name, arg, o->expected);
        if (o->size == sizeof(uint32_t))
                *(uint32_t *) field = (uint32_t) v;
        else
                *(uint64_t *) field = v;
        return 0;
}

/* The options other than numbers; returns as parse_argv() (argv-util.h). */
static int parse_other_option(int c, const char *arg, ManagerConfig *config) {
        switch (c) {
        case 's':
                config->state_dir = arg;
                return 1;
        case 'S':
                config->socket_path = arg;
                return 1;
        case ARG_REPORT_SOCKET:
                config->report_socket_path = arg;
                return 1;
        case ARG_DISABLE_SOURCE:
                config->collector.disable = arg;
                return 1;
        case ARG_ENABLE_SOURCE:
                config->collector.enable = arg;
                return 1;
        case ARG_ENABLE_DELAY_ACCOUNTING:
                config->collector.enable_delay_accounting = true;
                return 1;
        case ARG_BPF_OBJECT:
                if (strcmp(arg, "full") != 0 && strcmp(arg, "noloop") != 0 && strcmp(arg, "base") != 0)
                        return usage_error(NULL, "--bpf-object takes full, noloop or base, not '%s'", arg);
                config->collector.bpf_object = arg;
                return 1;
        case ARG_RETENTION:
                if (parse_retention(arg, &config->writer.retention) < 0)
                        return usage_error(NULL,
                                           "invalid --retention '%s': expected e.g. raw=24h,minute=14d,hour=365d "
                                           "(each tier at least as long as the finer one)",
                                           arg);
                return 1;
        case 'v':
                log_set_max_level(LOG_LEVEL_DEBUG);
                return 1;
        case 'h':
                help();
                return 0;
        case ARG_VERSION:
                printf("trapstatd %s\n", TRAPSTAT_VERSION);
                return 0;
        case ARG_PROBE:
                arg_probe = true;
                return 1;
        default:
                return usage_hint(NULL);
        }
}

/* What only the options together can say is wrong. */
static int check_config(const ManagerConfig *config) {
        const CollectorConfig *collector = &config->collector;
        const VarlinkServerConfig *server = &config->server;
        _cleanup_free_ char *error = NULL;

        if (collector_config_check_sources(collector, &error) < 0)
                return usage_error(NULL, "%s", error ?: "out of memory");
        if (collector->site_reserve != 0 && collector->site_reserve != COLLECTOR_SITE_RESERVE_NONE &&
            collector->site_reserve >= (collector->max_sites ?: COLLECTOR_DEFAULT_MAX_SITES))
                return usage_error(NULL, "invalid --site-reserve: it must be less than --max-sites");
        /* An explicit reserve must leave room for everyone else; the default one shrinks itself. */
        if (server->reserved_connections != 0 && server->reserved_connections != (unsigned) -1 &&
            server->reserved_connections >= (server->max_connections ?: VARLINK_DEFAULT_MAX_CONNECTIONS))
                return usage_error(NULL, "--reserved-connections must be less than --max-connections");
        return 0;
}

/* Fills config from argv; returns as every parse_argv() (argv-util.h): > 0 to run. The strings in
 * config point into argv. */
static int parse_argv(int argc, char *argv[], ManagerConfig *config) {
        static const struct option options[] = {
                { "state-dir", required_argument, NULL, 's' },
                { "socket", required_argument, NULL, 'S' },
                { "tick", required_argument, NULL, 't' },
                { "slots", required_argument, NULL, ARG_SLOTS },
                { "max-processes", required_argument, NULL, ARG_MAX_PROCESSES },
                { "slot-idle", required_argument, NULL, ARG_SLOT_IDLE },
                { "event-buffer", required_argument, NULL, ARG_EVENT_BUFFER },
                { "disable-source", required_argument, NULL, ARG_DISABLE_SOURCE },
                { "enable-source", required_argument, NULL, ARG_ENABLE_SOURCE },
                { "enable-delay-accounting", no_argument, NULL, ARG_ENABLE_DELAY_ACCOUNTING },
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
                { "probe", no_argument, NULL, ARG_PROBE },
                { "bpf-object", required_argument, NULL, ARG_BPF_OBJECT },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "s:S:t:vh", options, NULL)) >= 0) {
                const NumberOption *o = number_option_find(c);

                if (o) {
                        r = number_option_set(o, optarg, config);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = parse_other_option(c, optarg, config);
                if (r <= 0)
                        return r;
        }
        if (optind < argc)
                return usage_error(NULL, "unexpected argument '%s'", argv[optind]);
        r = check_config(config);
        if (r < 0)
                return r;
        return 1;
}

/* The state directory and the socket, when not given: systemd's, else ours. */
static int config_default_paths(ManagerConfig *config, char **ret_state_dir, char **ret_runtime_socket) {
        _cleanup_free_ char *env_state = first_of_env("STATE_DIRECTORY"),
                            *env_runtime = first_of_env("RUNTIME_DIRECTORY"), *runtime_socket = NULL;

        if (!config->state_dir)
                config->state_dir = env_state ?: TRAPSTAT_DEFAULT_STATE_DIR;
        if (!config->socket_path) {
                if (env_runtime && asprintf(&runtime_socket, "%s/io.trapstat", env_runtime) < 0)
                        return -ENOMEM;
                config->socket_path = runtime_socket ?: TRAPSTAT_DEFAULT_SOCKET;
        }
        *ret_state_dir = TAKE_PTR(env_state);
        *ret_runtime_socket = TAKE_PTR(runtime_socket);
        return 0;
}

/* Fds the kernel's table holds from the start: 4096 clients by default, and the stat fds of the
 * processes active in a tick (collector-procs.c). */
#define FD_TABLE_PREGROWN 16384

/* Memory and file descriptors as the daemon uses them. */
static void tune_process(void) {
        struct rlimit nofile;

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
        store_init_process();

        /* Every client is an fd: take the hard limit, as --max-connections may ask for many. */
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
                nofile.rlim_cur = nofile.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &nofile);
        }
        /* The kernel's fd table, grown now while this is the only thread: grown later, when the
         * stat fds of thousands of new processes or clients need it, each doubling waits for an
         * RCU grace period in the event loop (expand_fdtable() in a process whose threads share
         * it: measured 10-360 ms in one turn while the machine's CPUs forked 10000 processes).
         * FD_TABLE_PREGROWN fds, 128 KiB of the kernel's memory. */
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
                rlim_t n = MIN(nofile.rlim_cur, (rlim_t) FD_TABLE_PREGROWN);
                int fd = n > 0 ? fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, (int) (n - 1)) : -1;

                if (fd >= 0)
                        (void) close(fd);
        }
}

static int run(int argc, char *argv[]) {
        _cleanup_free_ char *state_dir = NULL, *runtime_socket = NULL;
        _cleanup_(manager_freep) Manager *m = NULL;
        ManagerConfig config = { .tick_usec = TRAPSTAT_DEFAULT_TICK_USEC,
                                 .writer.retention = STORE_RETENTION_DEFAULT,
                                 .writer.max_cmdline = STORE_MAX_CMDLINE_DEFAULT };
        int r;

        r = parse_argv(argc, argv, &config);
        if (r <= 0)
                return parse_argv_exit_code(r);
        if (arg_probe)
                return collector_probe_dump(&config.collector, stdout) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (config_default_paths(&config, &state_dir, &runtime_socket) < 0)
                return EXIT_FAILURE;
        /* Under systemd, stderr goes to the journal: tag lines with their priority. */
        log_set_prefix_priority(getenv("JOURNAL_STREAM") != NULL);
        tune_process();

        if (manager_new(&config, &m) < 0 || manager_start(m) < 0 || manager_run(m) < 0)
                return EXIT_FAILURE;
        return EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        return run(argc, argv);
}

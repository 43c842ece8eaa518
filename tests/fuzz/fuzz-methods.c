/* SPDX-License-Identifier: MIT */
/* Fuzzes trapstatd's own io.trapstat handlers (daemon/methods.c) with what a client sends on one
 * connection, on the code path a connection of trapstatd takes: the varlink server checks the call
 * against the IDL, methods.c's handler checks its bounds (limits, windows, pids, sort keys,
 * filters, who may see what), the history calls go to the real query pool, whose workers query a
 * real store and build the reply under the reply size cap, and the reply goes back over the
 * socket. fuzz-varlink.c fuzzes the protocol with stub handlers; this one the handlers.
 *
 * The store is a database in a temporary directory, filled once (store_flush() and
 * store_maintain(), as tests/unit/test-store*.c do) with a small fixed set of processes of three
 * users: running and exited, a pid used twice, traps, signals, sites of both kinds, fault time,
 * units with glob characters in their names, rows in every tier. The real writer thread then owns
 * it (one more tick through writer_submit(), so that Top, History and UnitHistory really wait for
 * writer_sync()), beside the real checkpoint thread.
 *
 * What trapstatd's Manager owns is built here without BPF: the handlers reach it only through the
 * manager_*() accessors (manager.h) and the collector through collector.h, and this file defines
 * those functions itself. The linker takes them from here and never pulls manager.o or collector.o
 * out of libdaemon (should anything else come to need them, the link fails on the duplicates, it
 * cannot silently use the real ones). Real: the writer, the query pool, the Watch set, the unit
 * totals. Fake, and only these: the collector behind GetStatus (its sources, tracked processes,
 * drops per user and per kind: fixed values, the kinds' real names) and the clock of Watch's ticks
 * (the harness broadcasts the fixed samples when a Watch stream waits).
 *
 * Every input is sent on three connections: as root (sees every process) and as uid 1000, a plain
 * user (only their own processes), each waiting for every answer; and once more as uid 1000,
 * half-closing at once, as a client that goes away while its queries are queued or running. The
 * peer credential is what the socket says (SO_PEERCRED); setting it needs root: run as another
 * user, every connection is that user's.
 *
 * Checked besides the sanitizers: everything the server sends is a well-formed reply, each reply
 * and error matches the IDL (io.trapstat or org.varlink.service), the plain user is sent no other
 * user's process or drops, every call before the end of the input is answered (a last call of the
 * harness's own comes back) unless a message was not a well-formed call, the connection ends when
 * the client has half-closed it, and no call hangs. */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "checkpoint.h"
#include "collector-bpf.h"
#include "collector-util.h"
#include "collector.h"
#include "defaults.h"
#include "embedded.h"
#include "fuzz-client.h"
#include "fuzz.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "methods.h"
#include "query-pool.h"
#include "store.h"
#include "time-util.h"
#include "unit-totals.h"
#include "varlink-idl.h"
#include "varlink.h"
#include "watch.h"
#include "writer.h"

#define PLAIN_UID 1000U
#define TICK_USEC USEC_PER_SEC
/* Larger than fuzz-varlink's: here the calls are to reach the handlers, not the size limit. */
#define FUZZ_MAX_MESSAGE_SIZE (64U * 1024U)
/* Small, so that the longest replies from this small database (Top of every process, History
 * and UnitHistory at a fine resolution) exceed it: ReplyTooLarge. */
#define FUZZ_MAX_REPLY_SIZE 4096U
#define QUERY_TIME_LIMIT_USEC (5U * USEC_PER_SEC)
/* Ticks a Watch stream is sent before the harness stops waiting for the calls behind it. */
#define WATCH_TICKS 2U

/* The harness's last call: its reply (an error no handler sends) says that every call before it
 * was answered, as replies come in call order. */
#define SENTINEL_INTERFACE "fuzz.sentinel"
static const char sentinel[] =
        "{\"method\":\"org.varlink.service.GetInterfaceDescription\",\"parameters\":{\"interface\":\"" SENTINEL_INTERFACE
        "\"}}";

const char fuzz_target[] = "fuzz-methods";

/* ---- what trapstatd's Manager owns, without BPF ---- */

struct Manager {
        char *dir, *db_path;
        int proc_fd;
        Checkpointer *checkpointer;
        Writer *writer;
        QueryPool *queries;
        WatchSet *watches;
        UnitTotals *unit_totals;
        uint64_t start_usec;
        /* The fixed tick: Watch's samples and the fake collector's tracked processes. */
        const ProcessSample *tick;
        size_t n_tick;
};

struct Collector {
        CollectorSource sources[_SOURCE_MAX];
};

static Manager manager;
static Collector collector;

Writer *manager_writer(Manager *m) {
        return m->writer;
}

const char *manager_database_path(Manager *m) {
        return m->db_path;
}

Collector *manager_collector(Manager *m _unused_) {
        return &collector;
}

uint64_t manager_tick_usec(Manager *m _unused_) {
        return TICK_USEC;
}

/* The kinds' real names and words, made-up counts. */
size_t manager_drops(Manager *m, CollectorDrop ret[static MANAGER_DROP_KINDS]) {
        size_t n = 0;

        for (unsigned k = 0; k < COLLECTOR_BPF_DROP_KINDS; k++)
                ret[n++] = (CollectorDrop) { .kind = collector_bpf_drop_kind(k), .count = k };
        ret[n++] = (CollectorDrop) { .kind = { "symbol_budget", "one symbol" }, .count = 1 };
        ret[n++] = (CollectorDrop) { .kind = { "symbol_unreadable", "one symbol, this time" }, .count = 1 };
        ret[n++] = (CollectorDrop) { .kind = { "tick_merged", "one tick" },
                                     .count = writer_stats(m->writer).merged_ticks };
        return n;
}

WatchSet *manager_watch_set(Manager *m) {
        return m->watches;
}

UnitTotals *manager_unit_totals(Manager *m) {
        return m->unit_totals;
}

uint64_t manager_start_usec(Manager *m) {
        return m->start_usec;
}

QueryPool *manager_query_pool(Manager *m) {
        return m->queries;
}

const CollectorSource *collector_sources(Collector *c, size_t *ret_n) {
        *ret_n = _SOURCE_MAX;
        return c->sources;
}

/* A kernel without bpf_find_vma: one feature inactive, with its reason. */
const CollectorSource *collector_features(Collector *c _unused_, size_t *ret_n) {
        static const CollectorSource features[] = {
                { "counting_slots", true, NULL },
                { "fault_sites", true, NULL },
                { "trap_sites", true, NULL },
                { "vma_lookup", false, "needs bpf_find_vma (Linux 5.17)" },
        };
        *ret_n = ELEMENTSOF(features);
        return features;
}

size_t collector_capabilities(Collector *c _unused_, CollectorCapability ret[static COLLECTOR_CAPABILITIES]) {
        ret[0] = (CollectorCapability) { "bpf_loop", true, "5.17" };
        ret[1] = (CollectorCapability) { "bpf_find_vma", false, "5.17" };
        return 2;
}

const char *collector_bpf_object(Collector *c _unused_) {
        return "noloop";
}

uint32_t collector_fault_sample_period(Collector *c _unused_) {
        return 256;
}

/* As on x86 from Linux 5.17: the access kind and the major faults' causes are counted. */
FaultsKnown collector_faults_known(Collector *c _unused_) {
        return FAULTS_KNOWN_ALL;
}

size_t collector_n_tracked(Collector *c _unused_) {
        return manager.n_tick;
}

/* As many as the tick's samples: what a tick with every tracked process active reads. */
uint64_t collector_tick_records(Collector *c _unused_) {
        return manager.n_tick;
}

uint64_t collector_slots_taken(Collector *c _unused_) {
        return 0;
}

size_t collector_n_tracked_visible(Collector *c _unused_, int64_t uid, uint32_t pidns) {
        size_t n = 0;
        uint32_t pid;

        for (size_t i = 0; i < manager.n_tick; i++)
                n += (uid < 0 || manager.tick[i].process->uid == uid) &&
                     (!pidns || process_info_pid_in(manager.tick[i].process, pidns, &pid));
        return n;
}

/* Drops of root and of the plain user; only uid's when uid >= 0, as collector_bpf_user_drops(). */
int collector_user_drops(Collector *c _unused_, int64_t uid, CollectorUserDrops **ret, size_t *ret_n) {
        static const CollectorUserDrops all[] = { { .uid = 0, .count = { [0] = 2 } },
                                                  { .uid = PLAIN_UID, .count = { [1] = 3, [4] = 1 } } };
        CollectorUserDrops *list = calloc(ELEMENTSOF(all), sizeof(*list));
        size_t n = 0;

        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                if (uid < 0 || all[i].uid == uid)
                        list[n++] = all[i];
        *ret = list;
        *ret_n = n;
        return 0;
}

CollectorDropKind collector_drop_kind(unsigned kind) {
        return collector_bpf_drop_kind(kind);
}

/* ---- the database's contents ---- */

/* A boot of our own: the processes are this boot's, and the writer asks our fake /proc whether
 * they still run. */
#define BOOT_ID "0f0f0f0f-1234-4321-abcd-fuzzfuzzfuzz"

static const Traps traps_ud = { .vector = { [6] = 3 }, .signal = { [0] = { [1] = 3 } } };
static const Traps traps_bp = { .vector = { [3] = 1, [13] = 2 }, .signal = { [1] = { [0] = 1 }, [4] = { [2] = 2 } } };
static const SiteCount sites_a[] = {
        { .kind = SITE_TRAP, .vector = 6, .period = 1, .object = (char *) "/usr/bin/crasher", .dev = 0x801, .ino = 12,
          .offset = 0x1130, .symbol = (char *) "crash_here", .symbol_offset = 0x10, .memory = MEMORY_NONE, .count = 3 },
        { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64, .object = (char *) "/usr/lib/libc.so.6",
          .dev = 0x801, .ino = 99, .offset = 0x9a0c0, .symbol = (char *) "memcpy", .symbol_offset = 0x40,
          .memory = MEMORY_FILE, .memory_object = (char *) "/var/lib/data.bin", .memory_dev = 0x802, .memory_ino = 77,
          .count = 5, .time_ns = 40000 },
        { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64, .object = (char *) "[anon]",
          .offset = 0x7f0000001000, .memory = MEMORY_ANON, .count = 2, .time_ns = 900 },
};
static const SiteCount sites_b[] = {
        { .kind = SITE_TRAP, .vector = 3, .period = 1, .object = (char *) "/home/u/a \"b\"\n*", .dev = 0x801, .ino = 13,
          .offset = 0x20, .memory = MEMORY_STACK, .count = 1 },
};

typedef struct FuzzProcess {
        ProcessInfo info;
        bool running; /* still in our fake /proc when the writer opens the store */
} FuzzProcess;

/* Start times are whole clock ticks (proc_is_alive()): multiples of 10 ms cover every USER_HZ. */
#define START(s) ((uint64_t) (s) * 10000000U)
static FuzzProcess processes[] = {
        { { .pid = 1, .start_time = START(1), .comm = "systemd", .cmdline = (char *) "/sbin/init splash", .uid = 0,
            .unit = (char *) "init.scope" }, true },
        { { .pid = 100, .start_time = START(50), .comm = "sshd", .cmdline = (char *) "sshd: /usr/sbin/sshd -D",
            .uid = 0, .unit = (char *) "ssh.service" }, true },
        { { .pid = 2000, .start_time = START(900), .comm = "bash", .cmdline = (char *) "-bash", .uid = PLAIN_UID,
            .unit = (char *) "user@1000.service" }, true },
        /* A pid used twice: the older one exited. */
        { { .pid = 2001, .start_time = START(1000), .comm = "crasher", .cmdline = (char *) "./crasher --ud",
            .uid = PLAIN_UID, .unit = (char *) "run-u1.scope" }, false },
        { { .pid = 2001, .start_time = START(5000), .comm = "crasher", .cmdline = (char *) "./crasher --bp",
            .uid = PLAIN_UID, .unit = (char *) "run-u2.scope" }, true },
        /* Hostile text: glob characters, quotes, control characters, bytes that are not UTF-8;
         * no command line, no unit. */
        { { .pid = 2002, .start_time = START(1100), .comm = "a*[b]?\"\x01\xff", .uid = PLAIN_UID,
            .unit = (char *) "we*ird[1].service" }, true },
        { { .pid = 2003, .start_time = START(1200), .comm = "nounit", .uid = PLAIN_UID }, false },
        { { .pid = 3000, .start_time = START(2000), .comm = "nobody", .cmdline = (char *) "sleep inf", .uid = 65534,
            .unit = (char *) "ssh.service" }, true },
        { { .pid = 4194304, .start_time = START(3000), .comm = "maxpid", .cmdline = (char *) "", .uid = 0,
            .unit = (char *) "system.slice" }, false },
};

/* The samples of one tick at step k (0 is the oldest) of the history: each process counts in
 * some ticks, with counts that differ by process and step. */
static size_t tick_samples(unsigned k, bool last, ProcessSample *samples) {
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(processes); i++) {
                ProcessSample *s = &samples[n];

                if ((k + i) % 3 == 0 && !last)
                        continue;
                *s = (ProcessSample) { .process = &processes[i].info,
                                       .delta = { .user = 10 * i + k, .kernel = i, .minor = 10 * i + k + i,
                                                  .major = k % 2, .read = 7 * i, .write = 3 * i + k, .exec = i % 2,
                                                  .protection = k % 3 } };
                s->fault_time = (FaultTime) { .minor_ns = 1000 * (i + 1), .major_ns = 50000 * (k % 2),
                                              .kernel_ns = 300 * i, .max_ns = 40000 };
                s->fault_time.histogram[i % FAULT_TIME_BUCKETS] = 1 + k;
                if (processes[i].info.pid == 2001) {
                        s->traps = processes[i].info.start_time == START(1000) ? &traps_ud : &traps_bp;
                        s->sites = processes[i].info.start_time == START(1000) ? sites_a : sites_b;
                        s->n_sites = processes[i].info.start_time == START(1000) ? ELEMENTSOF(sites_a)
                                                                                   : ELEMENTSOF(sites_b);
                }
                n++;
        }
        return n;
}

/* Fills the database: ticks over the last day and an hour, denser lately, so that the hour, minute
 * and raw tiers all hold rows (the oldest tick's raw rows have expired); the processes that are not
 * running exit in the last tick; maintenance rolls up and expires as trapstatd's writer would. Not
 * further back: maintenance walks every minute of the span (seconds under ASan). */
static void store_fill(const char *path, uint64_t now) {
        static const uint64_t ages_sec[] = { 25 * 3600, 3 * 3600, 2 * 3600, 3600, 1800, 600, 300, 120, 60, 30, 20, 10 };
        ProcessSample samples[ELEMENTSOF(processes)];
        StoreRetention retention = STORE_RETENTION_DEFAULT;
        Store *s;
        bool more = true;
        int r;

        r = store_open(path, BOOT_ID, &s);
        if (r < 0)
                fuzz_fail("store_open(%s) failed: %s", path, strerror(-r));
        for (size_t i = 0; i < ELEMENTSOF(processes); i++) {
                processes[i].info.first_seen_usec = now - ages_sec[0] * USEC_PER_SEC;
                processes[i].info.last_seen_usec = processes[i].info.first_seen_usec;
        }
        for (unsigned k = 0; k < ELEMENTSOF(ages_sec); k++) {
                bool last = k + 1 == ELEMENTSOF(ages_sec);
                size_t n = tick_samples(k, last, samples);

                for (size_t i = 0; last && i < ELEMENTSOF(processes); i++)
                        processes[i].info.exited = !processes[i].running;
                r = store_flush(s, now - ages_sec[k] * USEC_PER_SEC, samples, n);
                if (r < 0)
                        fuzz_fail("store_flush() failed: %s (%s)", strerror(-r), store_errmsg(s));
        }
        for (unsigned i = 0; more; i++) {
                r = store_maintain(s, now, &retention, &more);
                if (r < 0 || i > 10000)
                        fuzz_fail("store_maintain() failed: %s (%s)", strerror(-r), store_errmsg(s));
        }
        store_free(s);
        for (size_t i = 0; i < ELEMENTSOF(processes); i++)
                processes[i].info.exited = false;
}

/* /proc/PID/stat of the running processes, as proc_is_alive() reads them. */
static void fake_proc_write(int proc_fd) {
        long hz = sysconf(_SC_CLK_TCK);

        for (size_t i = 0; i < ELEMENTSOF(processes); i++) {
                const ProcessInfo *p = &processes[i].info;
                char dir[16], text[256];
                int fd, n;

                if (!processes[i].running)
                        continue;
                snprintf(dir, sizeof(dir), "%u", p->pid);
                if (mkdirat(proc_fd, dir, 0700) < 0 && errno != EEXIST)
                        fuzz_fail("mkdir %s failed: %m", dir);
                n = snprintf(text, sizeof(text), "%u (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", p->pid,
                             (unsigned long long) (p->start_time / (NSEC_PER_SEC / (uint64_t) hz)));
                snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/stat");
                fd = openat(proc_fd, dir, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd < 0 || write(fd, text, (size_t) n) != n)
                        fuzz_fail("writing %s failed: %m", dir);
                close(fd);
        }
}

/* ---- set-up, once per process ---- */

static struct event_base *base;
/* FUZZ_METHODS_VERBOSE=1: every reply on stderr (to see what a seed reaches). */
static bool verbose;
static VarlinkServer *server;
static VarlinkInterface *idl, *service_idl; /* to check the replies */
/* The live tick: the processes still running. */
static ProcessSample live_tick[ELEMENTSOF(processes)];

static void cleanup(void) {
        char cmd[300];

        /* The writer first (its last commit may ask for a checkpoint), then the checkpointer. */
        varlink_server_free(server);
        watch_set_free(manager.watches);
        query_pool_free(manager.queries);
        writer_free(manager.writer);
        checkpointer_free(manager.checkpointer);
        unit_totals_free(manager.unit_totals);
        event_base_free(base);
        varlink_interface_free(idl);
        varlink_interface_free(service_idl);
        if (manager.proc_fd >= 0)
                close(manager.proc_fd);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", manager.dir);
        if (system(cmd) != 0)
                fprintf(stderr, "fuzz-methods: failed to remove %s\n", manager.dir);
        free(manager.dir);
        free(manager.db_path);
}

static int query_sync(void *userdata, uint64_t seq, uint64_t deadline_usec, const bool *cancelled) {
        return writer_sync(userdata, seq, deadline_usec, cancelled);
}

static void setup(void) {
        const VarlinkServerConfig config = {
                .vendor = "trapstat",
                .product = "fuzz-methods",
                .version = "0",
                .url = "https://example.invalid/trapstat",
                .max_message_size = FUZZ_MAX_MESSAGE_SIZE,
                .privileged_group = TRAPSTAT_GROUP,
        };
        char error[200], proc_dir[PATH_MAX];
        uint64_t now = now_usec(CLOCK_REALTIME);
        size_t n = 0;
        int r;

        signal(SIGPIPE, SIG_IGN);
        verbose = getenv("FUZZ_METHODS_VERBOSE");
        /* Clients' mistakes are logged at debug level, handlers' failures as errors: keep the
         * errors, without a flood. */
        log_set_max_level(LOG_LEVEL_WARNING);

        manager.dir = strdup("/tmp/fuzz-methods-XXXXXX");
        if (!manager.dir || !mkdtemp(manager.dir))
                fuzz_fail("mkdtemp() failed: %m");
        if (asprintf(&manager.db_path, "%s/trapstat.db", manager.dir) < 0)
                fuzz_fail("out of memory");
        snprintf(proc_dir, sizeof(proc_dir), "%s/proc", manager.dir);
        if (mkdir(proc_dir, 0700) < 0)
                fuzz_fail("mkdir %s failed: %m", proc_dir);
        manager.proc_fd = open(proc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (manager.proc_fd < 0)
                fuzz_fail("open %s failed: %m", proc_dir);
        atexit(cleanup);

        store_fill(manager.db_path, now);
        fake_proc_write(manager.proc_fd);

        for (size_t i = 0; i < ELEMENTSOF(processes); i++)
                if (processes[i].running)
                        live_tick[n++] = (ProcessSample) { .process = &processes[i].info,
                                                           .delta = { .user = i + 1, .minor = i + 1, .read = i },
                                                           .traps = processes[i].info.pid == 2001 ? &traps_bp : NULL };
        manager.tick = live_tick;
        manager.n_tick = n;
        for (int s = 0; s < _SOURCE_MAX; s++)
                collector.sources[s] = (CollectorSource) { .name = collector_source_names[s],
                                                           .active = s % 3 != 2,
                                                           .reason = s % 3 != 2 ? NULL : "not in this kernel" };

        r = checkpointer_new(manager.db_path, &manager.checkpointer);
        if (r < 0)
                fuzz_fail("checkpointer_new() failed: %s", strerror(-r));
        r = writer_new(&(WriterConfig) { .db_path = manager.db_path, .boot_id = BOOT_ID,
                                         .retention = STORE_RETENTION_DEFAULT, .max_cmdline = STORE_MAX_CMDLINE_DEFAULT,
                                         .checkpointer = manager.checkpointer, .proc_fd = manager.proc_fd },
                       &manager.writer);
        if (r < 0)
                fuzz_fail("writer_new() failed: %s", strerror(-r));
        if (!writer_stats(manager.writer).available)
                fuzz_fail("the writer has no database");
        /* One tick through the writer: queries of the samples wait for it (writer_sync()). */
        if (writer_submit(manager.writer, now, live_tick, n, NULL, 0) <= 0)
                fuzz_fail("writer_submit() failed");

        r = watch_set_new(&manager.watches);
        if (r < 0 || unit_totals_new(4, &manager.unit_totals) < 0 ||
            unit_totals_add(manager.unit_totals, live_tick, n) < 0)
                fuzz_fail("out of memory");
        manager.start_usec = now;

        base = event_base_new();
        if (!base)
                fuzz_fail("event_base_new() failed");
        r = varlink_server_new(base, &config, &server);
        if (r < 0)
                fuzz_fail("varlink_server_new() failed: %s", strerror(-r));
        r = query_pool_new(base,
                           &(QueryPoolConfig) { .db_path = manager.db_path,
                                                .boot_id = BOOT_ID,
                                                .sync = query_sync,
                                                .sync_userdata = manager.writer,
                                                .threads = 2,
                                                .time_limit_usec = QUERY_TIME_LIMIT_USEC,
                                                .max_reply_size = FUZZ_MAX_REPLY_SIZE },
                           &manager.queries);
        if (r < 0)
                fuzz_fail("query_pool_new() failed: %s", strerror(-r));
        r = methods_register(server, &manager);
        if (r < 0)
                fuzz_fail("io.trapstat refused: %s", varlink_server_error(server));

        r = varlink_interface_parse(embedded_varlink[0].text, &idl, error, sizeof(error));
        if (r < 0)
                fuzz_fail("io.trapstat.varlink:%s", error);
        r = varlink_interface_parse(embedded_varlink_service[0].text, &service_idl, error, sizeof(error));
        if (r < 0)
                fuzz_fail("org.varlink.service.varlink:%s", error);
}

/* ---- the client's side ---- */

/* A socketpair whose server end says the peer is uid (SO_PEERCRED is the creator's effective
 * uid and gid, SO_PEERGROUPS its groups). Changed with the raw system calls: they change this
 * thread only, whereas glibc's wrappers would change the writer's and the workers' too. */
static void socketpair_as(uid_t uid, int pair[2]) {
        bool as_other = geteuid() == 0 && uid != 0;
        gid_t groups[64], gid = getegid();
        int n_groups = 0;

        if (as_other) {
                n_groups = getgroups(ELEMENTSOF(groups), groups);
                if (n_groups < 0 || syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, -1, uid, -1) < 0 ||
                    syscall(SYS_setresuid, -1, uid, -1) < 0)
                        fuzz_fail("changing credentials failed: %m");
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0)
                fuzz_fail("socketpair() failed: %m");
        if (as_other && (syscall(SYS_setresuid, -1, 0, -1) < 0 || syscall(SYS_setresgid, -1, gid, -1) < 0 ||
                         syscall(SYS_setgroups, (size_t) n_groups, groups) < 0))
                fuzz_fail("restoring credentials failed: %m");
}

typedef struct Client {
        uid_t uid;
        int fd;
        struct evbuffer *replies;
        bool eof;       /* the server closed */
        bool sentinel;  /* the sentinel's reply came */
        unsigned n_replies;
} Client;

/* Whether every object in v with a "uid" (a process, a user's drops) is uid's. */
static bool only_uid(json_t *v, uid_t uid) {
        json_t *member, *u = json_object_get(v, "uid");
        const char *key;
        size_t i;

        if (json_is_integer(u) && json_integer_value(u) != (json_int_t) uid)
                return false;
        json_object_foreach (v, key, member)
                if (!only_uid(member, uid))
                        return false;
        json_array_foreach (v, i, member)
                if (!only_uid(member, uid))
                        return false;
        return true;
}

/* Checks one reply: {"parameters": {...}} plus "continues": true or "error": "name", its
 * parameters those of a method's output (we do not pair replies with calls: one of them) or of the
 * error, which is one of the two interfaces'. */
static void reply_check(Client *c, json_t *msg) {
        json_t *parameters = json_object_get(msg, "parameters"), *continues = json_object_get(msg, "continues");
        json_t *error = json_object_get(msg, "error");
        const char *name = json_string_value(error), *field = NULL;
        _cleanup_free_ char *text = NULL;

        if (verbose) {
                text = json_dumps(msg, JSON_COMPACT);
                fprintf(stderr, "uid %u <- (%zu bytes) %.500s\n", (unsigned) c->uid, text ? strlen(text) : 0, text ?: "?");
                free(TAKE_PTR(text));
        }
        if (!json_is_object(parameters) || (continues && !json_is_true(continues)) || (error && (!name || continues)) ||
            json_object_size(msg) != (size_t) (1 + !!continues + !!error))
                goto invalid;
        if (name) {
                if (strcmp(name, "org.varlink.service.InterfaceNotFound") == 0 &&
                    strcmp(json_string_value(json_object_get(parameters, "interface")) ?: "", SENTINEL_INTERFACE) == 0) {
                        c->sentinel = true;
                        return;
                }
                if (varlink_interface_validate_error(idl, name, parameters, &field) == 0 ||
                    varlink_interface_validate_error(service_idl, name, parameters, &field) == 0)
                        return;
                goto invalid;
        }
        /* A plain user sees only their own processes. */
        if (c->uid != 0 && geteuid() == 0 && !only_uid(parameters, c->uid)) {
                text = json_dumps(msg, JSON_COMPACT);
                fuzz_fail("uid %u was sent another user's data: %.2000s", (unsigned) c->uid, text ?: "?");
        }
        for (size_t i = 0; i < varlink_interface_n_methods(idl); i++)
                if (varlink_interface_validate_output(idl, varlink_interface_method_name(idl, i), parameters,
                                                      &field) == 0)
                        return;
        for (size_t i = 0; i < varlink_interface_n_methods(service_idl); i++)
                if (varlink_interface_validate_output(service_idl, varlink_interface_method_name(service_idl, i),
                                                      parameters, &field) == 0)
                        return;
invalid:
        text = json_dumps(msg, JSON_COMPACT);
        fuzz_fail("the server sent a reply that matches no method or error of the IDL: %.2000s", text ?: "?");
}

/* Reads what arrived and checks every complete reply. Returns whether anything arrived. */
static bool client_receive(Client *c) {
        bool progress = fuzz_receive(c->fd, c->replies, &c->eof);

        for (;;) {
                _cleanup_json_ json_t *msg = NULL;
                int r = varlink_message_read(c->replies, SIZE_MAX, &msg);

                if (r == 0)
                        break;
                if (r < 0)
                        fuzz_fail("the server sent a malformed message: %s", strerror(-r));
                reply_check(c, msg);
                c->n_replies++;
        }
        return progress;
}

/* One turn of the loop: runs what is ready, or waits up to 1 ms for something to be (the
 * server's sockets, a worker's reply). */
static void loop_once(void) {
        static const struct timeval tick = { .tv_usec = 1000 };

        if (event_base_loopexit(base, &tick) < 0 || event_base_loop(base, EVLOOP_ONCE) < 0)
                fuzz_fail("event_base_loop() failed");
}

/* The server's turn: what is ready, or up to 1 ms of waiting; then the replies. */
static bool serve(void *userdata) {
        loop_once();
        return client_receive(userdata);
}

/* Whether the server must answer every call of the stream (the input, a NUL if it ends inside a
 * message, the sentinel): it closes without a reply only at a message that is not JSON, too long,
 * or not a call (varlink_message_read(), varlink_call_header_parse(): the same functions it
 * reads with). Otherwise a close before the sentinel's reply means a handler failed. */
static bool stream_answerable(const uint8_t *data, size_t size) {
        struct evbuffer *b = evbuffer_new();
        bool answerable = true;

        if (!b || evbuffer_add(b, data, size) < 0 || (size > 0 && data[size - 1] != '\0' && evbuffer_add(b, "", 1) < 0) ||
            evbuffer_add(b, sentinel, sizeof(sentinel)) < 0)
                fuzz_fail("out of memory");
        while (answerable && evbuffer_get_length(b) > 0) {
                _cleanup_json_ json_t *msg = NULL;
                VarlinkCallHeader h;

                answerable = varlink_message_read(b, FUZZ_MAX_MESSAGE_SIZE, &msg) > 0 &&
                             varlink_call_header_parse(msg, &h) >= 0;
        }
        evbuffer_free(b);
        return answerable;
}

/* Serves one connection of uid: the input, a NUL if it ends inside a message, the sentinel; with
 * wait, waits for the sentinel's reply (Watch streams are sent ticks meanwhile, and the wait ends
 * after a few: calls behind a stream wait as long as it runs); half-closes and waits for the
 * server to close. */
static void run_connection(const uint8_t *data, size_t size, uid_t uid, bool wait) {
        _cleanup_close_ int fd = -1;
        Client c = { .uid = uid };
        uint64_t last;
        unsigned ticks = 0;
        int pair[2], r;

        socketpair_as(uid, pair);
        c.fd = fd = pair[1];
        c.replies = evbuffer_new();
        if (!c.replies)
                fuzz_fail("out of memory");
        r = varlink_server_add_connection(server, pair[0]);
        if (r < 0)
                fuzz_fail("varlink_server_add_connection() failed: %s", strerror(-r));

        fuzz_send(fd, data, size, &c.eof, serve, &c);
        if (size > 0 && data[size - 1] != '\0')
                fuzz_send(fd, (const uint8_t *) "", 1, &c.eof, serve, &c);
        fuzz_send(fd, (const uint8_t *) sentinel, sizeof(sentinel), &c.eof, serve, &c);

        last = now_usec(CLOCK_MONOTONIC);
        while (wait && !c.eof && !c.sentinel && ticks <= WATCH_TICKS) {
                loop_once();
                if (client_receive(&c))
                        last = now_usec(CLOCK_MONOTONIC);
                else if (watch_set_size(manager.watches) > 0) {
                        watch_set_broadcast(manager.watches, manager.tick, manager.n_tick, now_usec(CLOCK_REALTIME),
                                            TICK_USEC);
                        ticks++;
                } else if (now_usec(CLOCK_MONOTONIC) - last > FUZZ_HANG_USEC)
                        fuzz_fail("no reply to the calls for %u s (%u replies so far)",
                                  (unsigned) (FUZZ_HANG_USEC / USEC_PER_SEC), c.n_replies);
        }

        if (wait && !c.sentinel && ticks <= WATCH_TICKS && stream_answerable(data, size))
                fuzz_fail("the connection of uid %u ended before every call was answered (%u replies): a handler "
                          "failed (\"Method ... failed\" above?)",
                          (unsigned) uid, c.n_replies);

        fuzz_finish(fd, server, &c.eof, serve, &c);
        if (evbuffer_get_length(c.replies) > 0)
                fuzz_fail("the server sent %zu bytes of an incomplete message", evbuffer_get_length(c.replies));
        evbuffer_free(c.replies);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!server)
                setup();

        run_connection(data, size, 0, true);
        run_connection(data, size, PLAIN_UID, true);
        /* A client that goes away without waiting: its queries are dropped from the pool's queue
         * or interrupted, its Watch stream ends. */
        run_connection(data, size, PLAIN_UID, false);
        return 0;
}

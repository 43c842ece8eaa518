/* SPDX-License-Identifier: MIT */
#include "manager.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "argv-util.h"
#include "array-util.h"
#include "checkpoint.h"
#include "log.h"
#include "loop-turn.h"
#include "macro.h"
#include "methods.h"
#include "peer-scope.h"
#include "proc-util.h"
#include "query-pool.h"
#include "state-dir.h"
#include "systemd-metrics.h"
#include "time-util.h"
#include "unit-totals.h"
#include "varlink.h"
#include "watch.h"

/* Where the tick under way is. Each stage is a turn of the event loop, or several (collector.h):
 * in a storm of short processes the drain's end, the writer's copy and the Watch replies each
 * took 1.5-2 ms of CPU, too much for one turn together; in the tick in which 9000 processes first
 * counted, the unit totals and the writer's copy took 4.3 ms together. */
typedef enum TickStage {
        TICK_IDLE,
        TICK_DRAIN,  /* collector_tick_step() */
        TICK_END,    /* collector_tick_end() */
        TICK_TOTALS, /* the unit totals take the tick */
        TICK_STORE,  /* the writer takes it */
        TICK_WATCH,  /* and then the live view */
} TickStage;

struct Manager {
        ManagerConfig config;
        struct event_base *base;
        struct event *tick, *status, *watchdog, *sigterm, *sigint;
        struct event *tick_step; /* the tick under way has steps left (tick_step()) */
        TickStage tick_stage;
        CollectorTick drained;   /* the tick's, from TICK_TOTALS on */
        bool tick_due;           /* the timer fired while a tick was under way: the next begins at its end */
        uint64_t tick_mono, tick_realtime; /* when the tick under way began */
        struct event *lifecycle; /* the ring buffer of exit and exec events has a batch waiting */
        int proc_fd;
        int lock_fd; /* flock()ed STATE_DIR/trapstatd.lock: one daemon per state directory (state-dir.c) */
        char boot_id[37];
        Collector *collector;
        PeerScopes peer_scopes; /* which processes a peer sees: its pid namespace (peer-scope.h) */
        Writer *writer;      /* the database's, on a thread of its own */
        char *db_path;
        VarlinkServer *server;
        VarlinkServer *report_server; /* io.systemd.Metrics, when a report socket is given */
        QueryPool *queries;
        Checkpointer *checkpointer; /* the WAL's checkpoints, off the event loop */
        uint32_t *reserved_uids;    /* config.writer.retention.reserved_uids */
        WatchSet *watches;
        UnitTotals *unit_totals;
        uint64_t start_usec; /* CLOCK_REALTIME when the totals started */
        bool unit_totals_failed; /* logged once */
        uint64_t last_tick_mono; /* CLOCK_MONOTONIC when the last tick began: Watch's intervalUsec */
        uint64_t tick_step_usec; /* TICK_STEP_USEC, but in test builds */
};

/* A tick's parts run in turns of their own (collector.h): between them, the loop answers calls
 * and sends what is waiting. A turn of reads is at most this long, and a little more. */
#define TICK_STEP_USEC (2 * USEC_PER_MSEC)

static uint64_t tick_step_usec(void) {
#if TRAPSTAT_TEST_HOOKS
        /* Test builds only: steps as short as they can be (a piece of each part at a time), so that
         * a test's workload crosses every place where a step stops and the next resumes
         * (test_stress.py's StormInSmallSteps). */
        const char *s = secure_getenv("TRAPSTATD_TEST_TICK_STEP_USEC");
        uint64_t usec;

        if (s && parse_integer(s, 1, UINT64_MAX, 0, &usec) >= 0)
                return usec;
#endif
        return TICK_STEP_USEC;
}

static void tick_begin(Manager *m) {
        int r;

        m->tick_mono = now_usec(CLOCK_MONOTONIC);
        m->tick_realtime = now_usec(CLOCK_REALTIME);
        r = collector_tick_begin(m->collector, m->tick_realtime);
        if (r < 0) {
                log_error_errno(r, "Failed to drain BPF counters: %m");
                return;
        }
        /* The kernel's delay accounting can be turned on and off at any time: this tick's Watch
         * replies say whether it is kept now. */
        watch_set_set_faults_known(m->watches, collector_faults_known(m->collector));
        m->tick_stage = TICK_DRAIN;
        event_active(m->tick_step, EV_TIMEOUT, 0);
}

/* The tick's samples, to the unit totals (in memory, as the live view); what failed to be added
 * is lost, and said once. */
static void tick_totals(Manager *m) {
        const CollectorTick *t = &m->drained;
        int r;

        r = unit_totals_add(m->unit_totals, t->samples, t->n_samples);
        if (r < 0 && !m->unit_totals_failed)
                log_error_errno(r, "Failed to add a tick to the unit totals, they miss counts from now on: %m");
        m->unit_totals_failed |= r < 0;
}

/* The tick's samples, to the writer, and to the unit totals before, both before Watch replies: a
 * client that saw a tick's reply finds the tick in what it calls next (Top reads the ticks the
 * writer holds). */
static void tick_store(Manager *m) {
        const CollectorTick *t = &m->drained;

        /* The writer takes a copy, the tick's symbol fills with its counts; the event loop never
         * waits for the database. Its failures are its to log; this one is counted in
         * unsavedSamples. */
        if (t->n_samples > 0 || t->n_fills > 0)
                (void) writer_submit(m->writer, m->tick_realtime, t->samples, t->n_samples, t->fills, t->n_fills);
}

/* One stage of the tick under way, or a step of one, in at most about budget_usec of the drain's
 * reads; true while stages are left. */
static bool tick_step(Manager *m, uint64_t budget_usec) {
        int r;

        switch (m->tick_stage) {
        case TICK_IDLE:
                return false;
        case TICK_DRAIN:
                if (collector_tick_step(m->collector, budget_usec) > 0)
                        return true;
                m->tick_stage = TICK_END;
                _fallthrough_; /* the drain's last step was a short one (collector.h) */
        case TICK_END:
                r = collector_tick_end(m->collector, budget_usec, &m->drained);
                if (r > 0)
                        return true;
                if (r < 0) {
                        log_error_errno(r, "Failed to drain BPF counters: %m");
                        m->tick_stage = TICK_IDLE;
                        return false;
                }
                m->tick_stage = TICK_TOTALS;
                return true;
        case TICK_TOTALS:
                tick_totals(m);
                m->tick_stage = TICK_STORE;
                return true;
        case TICK_STORE:
                tick_store(m);
                m->tick_stage = TICK_WATCH;
                return true;
        case TICK_WATCH:
                /* Every tick gets a reply, also an empty one, so clients see the daemon is alive.
                 * Its time is when the tick began. */
                watch_set_broadcast(m->watches, m->drained.samples, m->drained.n_samples, m->tick_realtime,
                                    m->tick_mono - m->last_tick_mono);
                m->last_tick_mono = m->tick_mono;
                m->tick_stage = TICK_IDLE;
                return false;
        }
        return false;
}

static void on_tick(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        LOOP_TURN;
        Manager *m = userdata;

        /* Behind by more than a tick: this one begins when the last one ends, not two at once. */
        if (m->tick_stage != TICK_IDLE) {
                m->tick_due = true;
                return;
        }
        tick_begin(m);
}

static void on_tick_step(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        LOOP_TURN;
        Manager *m = userdata;

        if (tick_step(m, m->tick_step_usec)) {
                event_active(m->tick_step, EV_TIMEOUT, 0); /* behind whatever else is ready */
                return;
        }
        if (m->tick_due) {
                m->tick_due = false;
                event_active(m->tick, EV_TIMEOUT, 0);
        }
}

/* The tick under way, all its stages left in this turn. */
static void tick_finish(Manager *m) {
        while (tick_step(m, UINT64_MAX))
                ;
}

/* At exit: the tick under way ends, and one more drains whatever was counted since. */
static void tick_final(Manager *m) {
        tick_finish(m);
        tick_begin(m);
        tick_finish(m);
}

/* Exit and exec events are taken out of the ring buffer as they come, so that a storm of exits
 * between two ticks does not overflow it; they are applied at the next tick. */
static void on_lifecycle(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        LOOP_TURN;
        Manager *m = userdata;
        int r;

        r = collector_read_events(m->collector);
        if (r < 0)
                log_error_errno(r, "Failed to read lifecycle events: %m");
}

#define STATUS_INTERVAL_USEC (10 * USEC_PER_SEC)

static struct timeval usec_to_timeval(uint64_t usec);

/* systemctl status shows this line: what is counted, how big the history is, trouble. */
static void on_status(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        LOOP_TURN;
        Manager *m = userdata;
        WriterStats stats = writer_stats(m->writer);
        CollectorDrop drops[MANAGER_DROP_KINDS];
        uint64_t total = 0;
        struct timeval tv = usec_to_timeval(STATUS_INTERVAL_USEC);

        for (size_t i = 0, n = manager_drops(m, drops); i < n; i++)
                total += drops[i].count;
        (void) sd_notifyf(0, "STATUS=Tracking %zu processes, history %" PRIu64 " MiB, %" PRIu64 " drops%s",
                          collector_n_tracked(m->collector), stats.database_bytes >> 20, total,
                          !stats.available ? ", database unavailable"
                          : stats.failing  ? ", database writes failing"
                                           : "");
        (void) event_add(m->status, &tv);
}

static void on_watchdog(evutil_socket_t fd _unused_, short what _unused_, void *userdata _unused_) {
        (void) sd_notify(0, "WATCHDOG=1");
}

static void on_signal(evutil_socket_t sig, short what _unused_, void *userdata) {
        Manager *m = userdata;

        log_info("Received %s, flushing and stopping", strsignal((int) sig));
        (void) sd_notify(0, "STOPPING=1");
        event_base_loopbreak(m->base);
}

static struct timeval usec_to_timeval(uint64_t usec) {
        return (struct timeval) { .tv_sec = (time_t) (usec / USEC_PER_SEC), .tv_usec = (suseconds_t) (usec % USEC_PER_SEC) };
}

/* Binds path for server, its directory created first. */
static int listen_path(VarlinkServer *server, const char *path, mode_t mode) {
        _cleanup_free_ char *dir = NULL;
        char *slash;
        int r;

        dir = strdup(path);
        if (!dir)
                return log_error_errno(ENOMEM, "Out of memory");
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                r = mkdir_parents(dir, 0755);
                if (r < 0)
                        return log_error_errno(r, "Failed to create socket directory %s: %m", dir);
        }
        r = varlink_server_listen_unix(server, path, mode);
        if (r == -EADDRINUSE)
                return log_error_errno(r, "Failed to listen on %s: another server is accepting on it", path);
        if (r == -EEXIST)
                return log_error_errno(r, "Failed to listen on %s: a file that is not a socket is in the way", path);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on %s: %m", path);
        log_info("Listening on %s", path);
        return 0;
}

/* Sockets passed by systemd win; otherwise bind our own. The report socket is the one named
 * "report" (FileDescriptorName= of trapstatd-report.socket); any other is the main socket. */
static int listen_socket(Manager *m) {
        char **names = NULL;
        int n, main_fd = -1, report_fd = -1, n_main = 0, r;

        n = sd_listen_fds_with_names(1, &names);
        if (n < 0)
                return log_error_errno(n, "Failed to read sockets passed by systemd: %m");
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;

                if (names && names[i] && strcmp(names[i], "report") == 0 && report_fd < 0)
                        report_fd = fd;
                else if (names && names[i] && strcmp(names[i], "report") == 0)
                        (void) close(fd);
                else {
                        n_main++;
                        if (main_fd < 0)
                                main_fd = fd;
                        else
                                (void) close(fd);
                }
        }
        if (names)
                for (int i = 0; i < n; i++)
                        free(names[i]);
        free(names);
        if (n_main > 1) {
                /* Which one would be ours? None: a misconfigured socket unit should not take
                 * the service down, and clients know the socket path, not the unit. */
                log_warning("Expected one socket from systemd, got %d; closing them and listening on %s", n_main,
                            m->config.socket_path);
                (void) close(main_fd);
                main_fd = -1;
        }

        if (report_fd >= 0) {
                r = varlink_server_listen_fd(m->report_server, report_fd);
                if (main_fd >= 0 && r < 0)
                        (void) close(main_fd);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on the report socket passed by systemd: %m");
                log_info("Serving io.systemd.Metrics on the report socket passed by systemd");
        } else if (m->config.report_socket_path) {
                /* Root's: the report names every unit and what its processes did. */
                r = listen_path(m->report_server, m->config.report_socket_path, 0600);
                if (r < 0) {
                        if (main_fd >= 0)
                                (void) close(main_fd);
                        return r;
                }
        }

        if (main_fd >= 0) {
                r = varlink_server_listen_fd(m->server, main_fd);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on the socket passed by systemd: %m");
                log_info("Listening on the socket passed by systemd");
                return 0;
        }
        return listen_path(m->server, m->config.socket_path, 0666);
}

/* The members of group trapstat named in the group database, whose history keeps the size
 * cap's reserve beside root's (store-share.c). Users with it as their primary group only are
 * not listed there: they share with everyone. */
static int resolve_reserved_uids(Manager *m) {
        struct group grp, *found = NULL;
        char buf[16384];
        size_t n = 0, capacity = 0;

        if (getgrnam_r(TRAPSTAT_GROUP, &grp, buf, sizeof(buf), &found) != 0 || !found)
                return 0;
        for (char **u = grp.gr_mem; *u; u++) {
                struct passwd pw, *pw_found = NULL;
                char pw_buf[4096];

                if (getpwnam_r(*u, &pw, pw_buf, sizeof(pw_buf), &pw_found) != 0 || !pw_found)
                        continue;
                if (array_append((void **) &m->reserved_uids, &n, &capacity, sizeof(pw.pw_uid), &pw.pw_uid) < 0)
                        return -ENOMEM;
        }
        m->config.writer.retention.reserved_uids = m->reserved_uids;
        m->config.writer.retention.n_reserved_uids = n;
        return 0;
}

static int query_sync(void *userdata, uint64_t seq, uint64_t deadline_usec, const bool *cancelled) {
        Manager *m = userdata;

        return writer_sync(m->writer, seq, deadline_usec, cancelled);
}

/* What only the manager knows of the parts' configs, once /proc, the boot id and the state
 * directory are open; the checkpointer follows when it starts (manager_start_writer()). */
static void manager_config_own(Manager *m) {
        m->config.collector.proc_fd = m->proc_fd;
        m->config.writer.db_path = m->db_path;
        m->config.writer.boot_id = m->boot_id;
        m->config.writer.proc_fd = m->proc_fd;
        m->config.queries.db_path = m->db_path;
        m->config.queries.boot_id = m->boot_id;
        m->config.queries.sync = query_sync;
        m->config.queries.sync_userdata = m;
}

/* The io.trapstat server, and the report socket's own: there, io.systemd.Metrics and
 * org.varlink.service only, whoever may connect (the socket's mode decides). */
static int manager_new_servers(Manager *m) {
        VarlinkServerConfig *server_config = &m->config.server, report_config;
        int r;

        server_config->vendor = "trapstat";
        server_config->product = "trapstatd";
        server_config->version = TRAPSTAT_VERSION;
        server_config->url = "";
        server_config->privileged_group = TRAPSTAT_GROUP;
        server_config->refused_error = "io.trapstat.TooManyConnections";
        /* Filled once the collector runs, before the socket listens. */
        server_config->peer_label = peer_scope_identify;
        server_config->peer_label_userdata = &m->peer_scopes;
        /* The same limits; a refused report client is only closed. The report is the host's
         * units only (its socket is not meant to be given to containers). */
        report_config = *server_config;
        report_config.refused_error = NULL;
        report_config.peer_label = NULL;
        r = varlink_server_new(m->base, server_config, &m->server);
        if (r < 0)
                return log_error_errno(r, "Failed to create varlink server: %m");
        r = methods_register(m->server, m);
        if (r < 0)
                return log_error_errno(r, "Failed to register io.trapstat: %s", varlink_server_error(m->server));
        r = varlink_server_new(m->base, &report_config, &m->report_server);
        if (r < 0)
                return log_error_errno(r, "Failed to create varlink server: %m");
        r = metrics_register(m->report_server, m);
        if (r < 0)
                return log_error_errno(r, "Failed to register io.systemd.Metrics: %s",
                                       varlink_server_error(m->report_server));
        return 0;
}

/* What the event loop waits for, but the ring buffer's fd, which the collector only has once
 * it is started. */
static int manager_new_events(Manager *m) {
        m->base = event_base_new();
        if (!m->base)
                return log_error_errno(ENOMEM, "Failed to create event loop");
        m->tick = event_new(m->base, -1, EV_PERSIST, on_tick, m);
        m->tick_step = event_new(m->base, -1, 0, on_tick_step, m);
        m->status = evtimer_new(m->base, on_status, m);
        m->sigterm = evsignal_new(m->base, SIGTERM, on_signal, m);
        m->sigint = evsignal_new(m->base, SIGINT, on_signal, m);
        if (!m->tick || !m->tick_step || !m->status || !m->sigterm || !m->sigint)
                return log_error_errno(ENOMEM, "Out of memory");
        return 0;
}

int manager_new(const ManagerConfig *config, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return log_error_errno(ENOMEM, "Out of memory");
        m->config = *config;
        m->proc_fd = -1;
        m->lock_fd = -1;
        m->tick_step_usec = tick_step_usec();

        /* A client that closes while its reply is written must cost an EPIPE, not the daemon. */
        (void) signal(SIGPIPE, SIG_IGN);

        m->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (m->proc_fd < 0)
                return log_error_errno(errno, "Failed to open /proc: %m");
        r = proc_read_boot_id(m->proc_fd, m->boot_id);
        if (r < 0)
                return log_error_errno(r, "Failed to read boot id: %m");
        r = state_dir_open(config->state_dir, &m->lock_fd, &m->db_path);
        if (r < 0)
                return r;
        manager_config_own(m);
        r = resolve_reserved_uids(m);
        if (r < 0)
                return log_error_errno(r, "Out of memory");
        r = watch_set_new(&m->watches);
        if (r < 0)
                return log_error_errno(r, "Out of memory");
        r = unit_totals_new(config->max_unit_totals ?: DEFAULT_MAX_UNIT_TOTALS, &m->unit_totals);
        if (r < 0)
                return log_error_errno(r, "Out of memory");
        r = manager_new_events(m);
        if (r < 0)
                return r;
        r = manager_new_servers(m);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

/* The database's threads: the checkpointer, and the writer that uses it. */
static int manager_start_writer(Manager *m) {
        int r;

        r = checkpointer_new(m->db_path, &m->checkpointer);
        if (r < 0)
                return log_error_errno(r, "Failed to start the checkpoint thread: %m");
        m->config.writer.checkpointer = m->checkpointer;
        r = writer_new(&m->config.writer, &m->writer);
        if (r < 0)
                return r;
#if TRAPSTAT_TEST_HOOKS
        /* Test builds only (meson option test_hooks, off by default; scripts/check.sh's): the writer
         * is held while this file exists, to test it falling behind (test_writer.py). */
        writer_set_hold_file(m->writer, secure_getenv("TRAPSTATD_TEST_HOLD_WRITER"));
#endif
        return 0;
}

/* Loads and attaches the BPF programs: counting starts here. */
static int manager_start_collector(Manager *m) {
        int r;

        /* Asked for, or not at all: the setting is the machine's (and stays on after us). */
        if (m->config.collector.enable_delay_accounting) {
                r = collector_enable_delay_accounting(m->config.collector.proc_fd);
                if (r < 0)
                        return log_error_errno(r, "Failed to turn on the kernel's delay accounting "
                                                  "(--enable-delay-accounting, kernel.task_delayacct): %m");
                log_info("Turned on the kernel's delay accounting (kernel.task_delayacct=1)");
        }

        r = collector_new(&m->config.collector, &m->collector);
        /* One that failed to attach was logged as it was tried; the others were disabled or are
         * not in this kernel. */
        if (r == -ENOTSUP)
                return log_error_errno(r, "No page fault source could be attached, nothing to count: %m");
        if (r == -ENOEXEC)
                return log_error_errno(r, "This kernel cannot run any of trapstat's BPF objects (trapstatd --probe "
                                          "says which capability it lacks)");
        /* The collector returns why and does not log it; libbpf's messages above say more. */
        if (r < 0)
                return log_error_errno(r, "Failed to set up the BPF programs: %m");

        watch_set_set_faults_known(m->watches, collector_faults_known(m->collector));
        peer_scopes_init(&m->peer_scopes, m->collector, m->proc_fd);
        m->last_tick_mono = now_usec(CLOCK_MONOTONIC);
        m->start_usec = now_usec(CLOCK_REALTIME);
        m->lifecycle = event_new(m->base, collector_event_fd(m->collector), EV_READ | EV_PERSIST, on_lifecycle, m);
        if (!m->lifecycle)
                return log_error_errno(ENOMEM, "Out of memory");
        return 0;
}

int manager_start(Manager *m) {
        int r;

        r = manager_start_writer(m);
        if (r < 0)
                return r;
        r = manager_start_collector(m);
        if (r < 0)
                return r;
        r = query_pool_new(m->base, &m->config.queries, &m->queries);
        if (r < 0)
                return log_error_errno(r, "Failed to start query threads: %m");
        /* Last: clients connect once there is something to answer them. */
        return listen_socket(m);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        /* The streams and queries before the server: they hold calls of its connections. */
        watch_set_free(m->watches);
        query_pool_free(m->queries);
        varlink_server_free(m->server);
        varlink_server_free(m->report_server);
        if (m->tick)
                event_free(m->tick);
        if (m->tick_step)
                event_free(m->tick_step);
        if (m->lifecycle)
                event_free(m->lifecycle);
        if (m->status)
                event_free(m->status);
        if (m->watchdog)
                event_free(m->watchdog);
        if (m->sigterm)
                event_free(m->sigterm);
        if (m->sigint)
                event_free(m->sigint);
        if (m->base)
                event_base_free(m->base);
        collector_free(m->collector);
        unit_totals_free(m->unit_totals);
        /* After the queries (which may wait for it): writes every tick still waiting. */
        writer_free(m->writer);
        /* After the writer, whose last commits may still ask for a checkpoint. */
        checkpointer_free(m->checkpointer);
        free(m->reserved_uids);
        free(m->db_path);
        if (m->proc_fd >= 0)
                close(m->proc_fd);
        /* Last: the next daemon may start as soon as the lock is gone, and the database is closed. */
        if (m->lock_fd >= 0)
                close(m->lock_fd);
        free(m);
        return NULL;
}

int manager_run(Manager *m) {
        struct timeval tv = usec_to_timeval(m->config.tick_usec);
        uint64_t watchdog_usec = 0;

        struct timeval now_tv = { 0, 0 };

        if (event_add(m->tick, &tv) < 0 || event_add(m->lifecycle, NULL) < 0 || event_add(m->status, &now_tv) < 0 || event_add(m->sigterm, NULL) < 0 ||
            event_add(m->sigint, NULL) < 0)
                return log_error_errno(ENOMEM, "Failed to arm event loop");

        /* Pet the watchdog at half its interval, from the same loop that does the work, so a
         * stuck loop is what the watchdog sees. */
        if (sd_watchdog_enabled(0, &watchdog_usec) > 0) {
                struct timeval wtv = usec_to_timeval(watchdog_usec / 2);

                m->watchdog = event_new(m->base, -1, EV_PERSIST, on_watchdog, m);
                if (!m->watchdog || event_add(m->watchdog, &wtv) < 0)
                        return log_error_errno(ENOMEM, "Failed to arm watchdog timer");
        }

        (void) sd_notifyf(0, "READY=1\nSTATUS=Counting page faults, tick %" PRIu64 " ms, database %s",
                          m->config.tick_usec / USEC_PER_MSEC, m->db_path);
        log_info("trapstatd %s ready: tick %" PRIu64 " ms, database %s", TRAPSTAT_VERSION,
                 m->config.tick_usec / USEC_PER_MSEC, m->db_path);

        if (event_base_dispatch(m->base) < 0)
                return log_error_errno(EIO, "Event loop failed");

        /* The final drain: whatever was counted since the last tick reaches the database. */
        tick_final(m);
        return 0;
}

const char *manager_database_path(Manager *m) {
        return m->db_path;
}

Writer *manager_writer(Manager *m) {
        return m->writer;
}

size_t manager_drops(Manager *m, CollectorDrop ret[static MANAGER_DROP_KINDS]) {
        size_t n = collector_drops(m->collector, ret);

        ret[n++] = (CollectorDrop) {
                .kind = { "tick_merged",
                          "one tick not written on its own: the database's writer was behind by --writer-queue "
                          "ticks, so its counts were added to the next tick's and carry that tick's time" },
                .count = writer_stats(m->writer).merged_ticks,
        };
        return n;
}

Collector *manager_collector(Manager *m) {
        return m->collector;
}

uint64_t manager_tick_usec(Manager *m) {
        return m->config.tick_usec;
}

WatchSet *manager_watch_set(Manager *m) {
        return m->watches;
}

QueryPool *manager_query_pool(Manager *m) {
        return m->queries;
}

UnitTotals *manager_unit_totals(Manager *m) {
        return m->unit_totals;
}

uint64_t manager_start_usec(Manager *m) {
        return m->start_usec;
}

size_t manager_report_max_metrics(Manager *m) {
        return m->config.report_max_metrics ?: DEFAULT_REPORT_MAX_METRICS;
}

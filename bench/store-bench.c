/* SPDX-License-Identifier: MIT */
/* The history store under a realistic load: fills a database with what trapstatd would have
 * written with the default retention after running D days for N processes, then times the
 * queries behind `trapstat history` and `trapstat top` and prints a table. See bench/README.md.
 *
 * usage: store-bench [--processes N] [--long N] [--short-life MIN:MAX] [--days D] [--queries Q]
 *                    [--db PATH] [--keep] [--seed S]
 *
 * How the database is filled, oldest first:
 *  1. The coarse past, [start, raw_from): the minute and hour rows (and their trap and signal
 *     twins) the daemon's roll-ups would have left, written with plain INSERTs through our own
 *     connection, each tier in one transaction, in the order the roll-ups write them: time by
 *     time, all processes of one time together. Then the tier marks as the daemon would have
 *     left them at raw_from.
 *  2. The last day, [raw_from, now): one store_flush() per 10 s bucket, as the daemon's ticks
 *     do, and store_maintain() at every minute boundary of simulated time, so the roll-ups,
 *     retention and marks of that day come from the store's own code.
 *  3. store_maintain() at the real time until it reports no more work.
 * Every process runs the same simulation in 10 s buckets over the whole span, so the coarse
 * rows are the exact sums of the buckets they cover, and the simulation's totals are checked
 * against what History returns. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "store.h"
#include "tier-util.h"
#include "time-util.h"

#define BUCKET STORE_RAW_BUCKET_USEC
#define MINUTE (60 * USEC_PER_SEC)
#define HOUR (3600 * USEC_PER_SEC)
#define DAY (24 * HOUR)
#define NEVER UINT64_MAX

/* ---- workload parameters ---- */

#define LONG_LIVED_PERCENT 30
#define SHORT_LIFE_MIN_USEC (2 * MINUTE) /* short-lived processes live log-uniformly ... */
#define SHORT_LIFE_MAX_USEC (3 * DAY)    /* ... between these (--short-life) */
#define PID_REUSE_P 0.15                 /* a short-lived process takes the pid of a dead one */
#define DUTY_MIN 0.02                    /* fraction of its buckets a process faults in: ... */
#define DUTY_MAX 0.58                    /* ... uniform, 30 % on average */
#define RUN_MIN_BUCKETS 1.0              /* mean length of an active run, log-uniform per process */
#define RUN_MAX_BUCKETS 30.0
#define MEDIAN_FAULTS 20.0               /* median faults per active bucket, over processes ... */
#define MEDIAN_SIGMA 1.2                 /* ... log-normal between processes */
#define BUCKET_SIGMA 1.0                 /* ... and between the buckets of one process */
#define BURST_P 0.002                    /* an active bucket is a burst of 10^4..10^5 faults */
#define MAJOR_P 0.01                     /* an active bucket has major faults */
#define TRAP_EVERY 50                    /* every 50th process traps ... */
#define TRAP_P 0.05                      /* ... in this fraction of its active buckets */

#define TOP_LIMIT 20

typedef struct Rng {
        uint64_t s[4];
} Rng;

/* The vectors a trapping process raises, with the signal each one sends. */
static const struct {
        unsigned vector;
        int signo, si_code;
} trap_kinds[] = {
        { 3, SIGTRAP, 0x80 },   /* #BP: int3 breakpoints, a debugger */
        { 1, SIGTRAP, 2 },      /* #DB: single-stepping, TRAP_TRACE */
        { 6, SIGILL, 2 },       /* #UD: a JIT probing for instructions, ILL_ILLOPN */
        { 13, SIGSEGV, 0x80 },  /* #GP: an emulator, SI_KERNEL */
        { 14, SIGSEGV, 1 },     /* #PF: a garbage collector's guard pages, SEGV_MAPERR */
        { 0, SIGFPE, 1 },       /* #DE: integer division by zero, FPE_INTDIV */
};

static const char *const long_comms[] = { "systemd", "systemd-journal", "sshd", "cron", "dbus-daemon", "rsyslogd",
                                          "postgres", "nginx", "java", "python3", "node", "containerd", "dockerd",
                                          "redis-server", "prometheus", "grafana-server", "chronyd", "polkitd" };
static const char *const short_comms[] = { "sh", "bash", "make", "cc1", "ld", "git", "gzip", "tar", "curl", "sed",
                                           "awk", "grep", "apt-get", "dpkg", "python3", "perl", "ssh", "sort" };

/* One simulated process: its identity, its behaviour, and what it did. */
typedef struct SimProc {
        ProcessInfo info;
        uint64_t birth, death; /* first and exit bucket; death NEVER: runs to the end */
        bool long_lived;
        Rng rng; /* its own stream: the simulation does not depend on the order of processes */
        double duty, run_on, run_off, median, kernel_frac, write_frac, exec_frac, protection_frac;
        int trap_kind; /* index into trap_kinds, -1: never traps */
        bool active;
        uint64_t run_left; /* buckets left in the current active or idle run */
        bool seen;         /* has a process row */
        int64_t db_id;     /* its id, once it has a row written by us */
        /* The coarse tiers' accumulators while writing the past. */
        Faults minute, hour;
        uint64_t minute_traps, hour_traps;
        /* The flush's trap counts. */
        Traps traps;
        /* Everything it did, to check History against. */
        Faults total;
        uint64_t total_traps;
} SimProc;

/* What the simulation did, to show the workload is the one described. */
static struct {
        uint64_t alive_buckets, active_buckets, trap_buckets, faults;
        uint64_t by_decade[6]; /* active buckets with 1-9, 10-99, ..., >= 10^5 faults */
        uint64_t max_faults;
} workload;

typedef struct HourRow {
        uint32_t proc; /* index into the processes */
        uint64_t time;
        Faults faults;
        uint64_t traps;
} HourRow;

typedef struct Bench {
        unsigned n_procs, n_long, days, queries;
        uint64_t short_min, short_max; /* the short-lived processes' lives, usec */
        uint64_t seed;
        bool fault_time; /* the last day's faults timed (--enable-source fault_time) */
        char *path, *tmpdir;
        bool keep;
        char boot_id[37];
        SimProc *procs;
        uint64_t start, now0, raw_from, end, boot_usec;
        Store *store;
        sqlite3 *db;
        char *columns; /* "f_user, f_kernel, ..." */
        StoreRetention retention;
        double seconds_coarse, seconds_raw, seconds_final;
        /* What the daemon's checkpoint thread does, at once: store_set_checkpoint_handler(). */
        bool checkpoint_due, checkpoint_force;
        uint64_t checkpoints;
        /* The largest WAL, and database with WAL, seen after any write through the store. */
        uint64_t peak_wal, peak_total, peak_used;
        unsigned final_steps;
        uint64_t raw_flushes, raw_samples, maintain_calls;
} Bench;

/* ---- random numbers: xoshiro256** seeded by splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x) {
        uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static void rng_seed(Rng *r, uint64_t seed) {
        for (int i = 0; i < 4; i++)
                r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
        return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(Rng *r) {
        uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
}

/* [0, 1) */
static double rng_uniform(Rng *r) {
        return (double) (rng_next(r) >> 11) * 0x1.0p-53;
}

static double rng_range(Rng *r, double lo, double hi) {
        return lo + (hi - lo) * rng_uniform(r);
}

static uint64_t rng_below(Rng *r, uint64_t n) {
        return n ? rng_next(r) % n : 0;
}

static double rng_normal(Rng *r) {
        double u = 1.0 - rng_uniform(r); /* (0, 1]: log() stays finite */
        return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * rng_uniform(r));
}

/* A geometric run length >= 1 with this mean. */
static uint64_t rng_run(Rng *r, double mean) {
        if (mean <= 1.0)
                return 1;
        return 1 + (uint64_t) floor(log(1.0 - rng_uniform(r)) / log(1.0 - 1.0 / mean));
}

/* x rounded up or down at random, so that sums of many come out right on average. */
static uint64_t rng_round(Rng *r, double x) {
        return x <= 0 ? 0 : (uint64_t) floor(x + rng_uniform(r));
}

/* ---- small helpers ---- */

static uint64_t floor_to(uint64_t t, uint64_t w) {
        return t - t % w;
}

static double monotonic_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static const char *sqlite_err(Bench *b) {
        return sqlite3_errmsg(b->db);
}

static int exec(Bench *b, const char *sql) {
        char *err = NULL;

        if (sqlite3_exec(b->db, sql, NULL, NULL, &err) != SQLITE_OK) {
                fprintf(stderr, "store-bench: %s: %s\n", sql, err ? err : "?");
                sqlite3_free(err);
                return -EIO;
        }
        return 0;
}

static int prepare(Bench *b, sqlite3_stmt **ret, const char *sql) {
        if (sqlite3_prepare_v2(b->db, sql, -1, ret, NULL) != SQLITE_OK) {
                fprintf(stderr, "store-bench: preparing %s: %s\n", sql, sqlite_err(b));
                return -EIO;
        }
        return 0;
}

static int step_done(Bench *b, sqlite3_stmt *st) {
        int rc = sqlite3_step(st);

        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
                fprintf(stderr, "store-bench: %s: %s\n", sqlite3_sql(st), sqlite_err(b));
                return -EIO;
        }
        return 0;
}

static int64_t query_i64(Bench *b, const char *sql) {
        sqlite3_stmt *st;
        int64_t v = -1;

        if (prepare(b, &st, sql) < 0)
                return -1;
        if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
}

static bool faults_equal(const Faults *a, const Faults *b) {
        return memcmp(a, b, sizeof(*a)) == 0;
}

/* ---- the workload ---- */

static void proc_setup_behaviour(SimProc *p, unsigned index) {
        Rng *r = &p->rng;

        p->duty = rng_range(r, DUTY_MIN, DUTY_MAX);
        p->run_on = exp(rng_range(r, log(RUN_MIN_BUCKETS), log(RUN_MAX_BUCKETS)));
        p->run_off = p->run_on * (1.0 - p->duty) / p->duty;
        p->median = MEDIAN_FAULTS * exp(MEDIAN_SIGMA * rng_normal(r));
        p->kernel_frac = rng_range(r, 0.01, 0.15);
        p->write_frac = rng_range(r, 0.30, 0.70);
        p->exec_frac = rng_range(r, 0.01, 0.08);
        p->protection_frac = rng_range(r, 0.05, 0.40);
        p->trap_kind = index % TRAP_EVERY == TRAP_EVERY / 2 ? (int) ((index / TRAP_EVERY) % ELEMENTSOF(trap_kinds)) : -1;
        p->active = rng_uniform(r) < p->duty;
        p->run_left = rng_run(r, p->active ? p->run_on : p->run_off);
}

static int cmp_birth(const void *a, const void *b) {
        const SimProc *x = a, *y = b;
        return x->birth < y->birth ? -1 : x->birth > y->birth;
}

static int make_processes(Bench *b) {
        uint32_t stride = MAX(1u, 4900 / b->n_long), next_pid = 5000 + b->n_long;
        /* Which short-lived process had each pid last (index + 1; 0: none), so that a pid is
         * taken again only from its last owner: pids are handed out at most 40 apart. */
        _cleanup_free_ uint32_t *last_owner = NULL;
        size_t n_pids = (size_t) next_pid + 41 * (size_t) b->n_procs;
        Rng r;

        rng_seed(&r, b->seed);
        /* A boot id looks like the kernel's: a random UUID. */
        snprintf(b->boot_id, sizeof(b->boot_id), "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64 "-a%03" PRIx64 "-%012" PRIx64,
                 rng_next(&r) >> 32, rng_next(&r) >> 48, rng_next(&r) >> 52, rng_next(&r) >> 52, rng_next(&r) >> 16);

        b->procs = calloc(b->n_procs, sizeof(*b->procs));
        if (!b->procs)
                return -ENOMEM;
        for (unsigned i = 0; i < b->n_procs; i++) {
                SimProc *p = &b->procs[i];

                p->long_lived = i < b->n_long;
                if (p->long_lived) {
                        /* Started with the machine, before the daemon; seen from its start. */
                        p->birth = b->start;
                        p->death = NEVER;
                } else {
                        double life = exp(rng_range(&r, log((double) b->short_min), log((double) b->short_max)));

                        p->birth = floor_to(b->start + (uint64_t) rng_range(&r, 0, (double) (b->now0 - b->start)), BUCKET);
                        p->death = floor_to(p->birth + (uint64_t) life, BUCKET);
                        if (p->death <= p->birth)
                                p->death = p->birth + BUCKET;
                        if (p->death >= b->now0)
                                p->death = NEVER;
                }
        }
        /* Short-lived ones in birth order, so pids can be handed out as the kernel would. */
        qsort(b->procs + b->n_long, b->n_procs - b->n_long, sizeof(*b->procs), cmp_birth);
        last_owner = calloc(n_pids, sizeof(*last_owner));
        if (!last_owner)
                return -ENOMEM;

        for (unsigned i = 0; i < b->n_procs; i++) {
                SimProc *p = &b->procs[i];
                const char *comm;

                rng_seed(&p->rng, b->seed ^ (UINT64_C(0x5851f42d4c957f2d) * (i + 1)));
                proc_setup_behaviour(p, i);
                if (p->long_lived) {
                        /* Distinct low pids. */
                        p->info.pid = 1 + i * stride + (uint32_t) rng_below(&r, stride);
                        p->info.start_time = (uint64_t) rng_range(&r, 1e9, 590e9);
                        comm = long_comms[i % ELEMENTSOF(long_comms)];
                        p->info.uid = rng_uniform(&r) < 0.4 ? 0 : rng_uniform(&r) < 0.5 ? 100 + (uint32_t) rng_below(&r, 900) : 1000;
                        if (p->info.uid == 0 && asprintf(&p->info.unit, "%s.service", comm) < 0)
                                return -ENOMEM;
                } else {
                        uint32_t pid = 0;

                        /* Now and then the pid of an exited process comes round again. */
                        if (rng_uniform(&r) < PID_REUSE_P)
                                for (int tries = 0; tries < 8 && !pid; tries++) {
                                        unsigned j = b->n_long + (unsigned) rng_below(&r, i - b->n_long + 1);
                                        bool taken = j == i || b->procs[j].death == NEVER || b->procs[j].death >= p->birth;

                                        /* Its last owner, not only an earlier one, must be gone. */
                                        taken = taken || last_owner[b->procs[j].info.pid] != j + 1;
                                        if (!taken)
                                                pid = b->procs[j].info.pid;
                                }
                        if (!pid) {
                                next_pid += 1 + (uint32_t) rng_below(&r, 40);
                                pid = next_pid;
                        }
                        p->info.pid = pid;
                        last_owner[pid] = i + 1;
                        p->info.start_time = (p->birth - b->boot_usec) * NSEC_PER_USEC + rng_below(&r, 10000000);
                        comm = short_comms[rng_below(&r, ELEMENTSOF(short_comms))];
                        p->info.uid = rng_uniform(&r) < 0.3 ? 0 : 1000;
                }
                snprintf(p->info.comm, sizeof(p->info.comm), "%s", comm);
                if (asprintf(&p->info.cmdline, "/usr/bin/%s --worker=%u --config /etc/%s/%s.conf", comm, i, comm, comm) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Bucket t of process p: whether the collector reports it (it faulted or trapped, or exited),
 * and its deltas. */
static bool sim_bucket(SimProc *p, uint64_t t, Faults *ret_f, uint64_t *ret_traps) {
        Rng *r = &p->rng;
        double c = 0;
        uint64_t n, traps = 0, run, k;

        *ret_f = (Faults) {};
        *ret_traps = 0;
        if (t == p->death)
                return true; /* reported once more, as exited */
        if (t < p->birth || t > p->death)
                return false;

        if (p->run_left == 0) {
                p->active = !p->active;
                p->run_left = rng_run(r, p->active ? p->run_on : p->run_off);
        }
        p->run_left--;

        if (t == p->birth && !p->long_lived)
                c = pow(10, rng_range(r, 2.5, 4.0)); /* exec: the loader maps and touches the libraries */
        if (p->active) {
                if (rng_uniform(r) < BURST_P)
                        c += pow(10, rng_range(r, 4.0, 5.0));
                else
                        c += fmax(1.0, p->median * exp(BUCKET_SIGMA * rng_normal(r)));
                if (p->trap_kind >= 0 && rng_uniform(r) < TRAP_P)
                        traps = rng_run(r, trap_kinds[p->trap_kind].vector == 1 ? 20.0 : 2.0);
        }
        workload.alive_buckets++;
        if (c <= 0 && traps == 0)
                return false;

        n = (uint64_t) c;
        workload.active_buckets++;
        workload.trap_buckets += traps > 0;
        workload.faults += n;
        workload.max_faults = MAX(workload.max_faults, n);
        if (n > 0)
                workload.by_decade[MIN(5, (int) floor(log10((double) n)))]++;
        ret_f->kernel = rng_round(r, (double) n * p->kernel_frac);
        ret_f->user = n - ret_f->kernel;
        /* One draw: MIN() evaluates its arguments twice. */
        run = rng_uniform(r) < MAJOR_P ? rng_run(r, 5.0) : 0;
        ret_f->major = MIN(n, run);
        ret_f->minor = n - ret_f->major;
        k = rng_round(r, (double) ret_f->user * p->write_frac);
        ret_f->write = MIN(ret_f->user, k);
        k = rng_round(r, (double) ret_f->user * p->exec_frac);
        ret_f->exec = MIN(ret_f->user - ret_f->write, k);
        ret_f->read = ret_f->user - ret_f->write - ret_f->exec;
        k = rng_round(r, (double) ret_f->write * p->protection_frac);
        ret_f->protection = MIN(ret_f->write, k);
        *ret_traps = traps;

        faults_add(&p->total, ret_f);
        p->total_traps += traps;
        return true;
}

/* ---- 1. the coarse past, with our own INSERTs ---- */

typedef struct CoarseStatements {
        sqlite3_stmt *process, *sample, *trap, *signal;
} CoarseStatements;

static void coarse_statements_done(CoarseStatements *c) {
        sqlite3_finalize(c->process);
        sqlite3_finalize(c->sample);
        sqlite3_finalize(c->trap);
        sqlite3_finalize(c->signal);
}

static int coarse_prepare(Bench *b, const char *tier, CoarseStatements *ret) {
        _cleanup_free_ char *sample = NULL, *trap = NULL, *signal = NULL, *marks = NULL;
        int r;

        /* ", ?" for each Faults member. */
        marks = malloc(3 * n_fault_fields + 1);
        if (!marks)
                return -ENOMEM;
        for (size_t i = 0; i < n_fault_fields; i++)
                memcpy(marks + 3 * i, ", ?", 3);
        marks[3 * n_fault_fields] = '\0';
        if (asprintf(&sample, "INSERT INTO sample_%s (process_id, time_usec, %s, traps) VALUES (?, ?%s, ?)", tier,
                     b->columns, marks) < 0 ||
            asprintf(&trap, "INSERT INTO trap_%s (process_id, time_usec, vector, count) VALUES (?, ?, ?, ?)", tier) < 0 ||
            asprintf(&signal, "INSERT INTO signal_%s (process_id, time_usec, signo, si_code, count) VALUES (?, ?, ?, ?, ?)",
                     tier) < 0)
                return -ENOMEM;
        if ((r = prepare(b, &ret->process,
                         "INSERT INTO process (boot_id, pid, start_time, comm, cmdline, uid, unit, first_seen_usec, "
                         "last_seen_usec, exited) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)")) < 0 ||
            (r = prepare(b, &ret->sample, sample)) < 0 || (r = prepare(b, &ret->trap, trap)) < 0 ||
            (r = prepare(b, &ret->signal, signal)) < 0)
                return r;
        return 0;
}

/* The process row the daemon writes when it first sees a process. */
static int coarse_add_process(Bench *b, CoarseStatements *c, SimProc *p, uint64_t seen) {
        sqlite3_stmt *st = c->process;
        int r;

        p->info.first_seen_usec = p->info.last_seen_usec = seen;
        sqlite3_bind_text(st, 1, b->boot_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, p->info.pid);
        sqlite3_bind_int64(st, 3, (int64_t) p->info.start_time);
        sqlite3_bind_text(st, 4, p->info.comm, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, p->info.cmdline, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, p->info.uid);
        if (p->info.unit)
                sqlite3_bind_text(st, 7, p->info.unit, -1, SQLITE_STATIC);
        else
                sqlite3_bind_null(st, 7);
        sqlite3_bind_int64(st, 8, (int64_t) seen);
        sqlite3_bind_int64(st, 9, (int64_t) seen);
        r = step_done(b, st);
        if (r < 0)
                return r;
        p->seen = true;
        p->db_id = sqlite3_last_insert_rowid(b->db);
        return 0;
}

/* One row of a coarse tier, and its trap and signal rows: only non-zero ones, as the roll-ups. */
static int coarse_add_row(Bench *b, CoarseStatements *c, const SimProc *p, uint64_t t, const Faults *f, uint64_t traps) {
        int r;

        if (faults_is_zero(f) && traps == 0)
                return 0;
        sqlite3_bind_int64(c->sample, 1, p->db_id);
        sqlite3_bind_int64(c->sample, 2, (int64_t) t);
        for (size_t i = 0; i < n_fault_fields; i++)
                sqlite3_bind_int64(c->sample, 3 + (int) i, (int64_t) faults_get(f, &fault_fields[i]));
        sqlite3_bind_int64(c->sample, 3 + (int) n_fault_fields, (int64_t) traps);
        if ((r = step_done(b, c->sample)) < 0 || traps == 0)
                return r;

        sqlite3_bind_int64(c->trap, 1, p->db_id);
        sqlite3_bind_int64(c->trap, 2, (int64_t) t);
        sqlite3_bind_int(c->trap, 3, (int) trap_kinds[p->trap_kind].vector);
        sqlite3_bind_int64(c->trap, 4, (int64_t) traps);
        if ((r = step_done(b, c->trap)) < 0)
                return r;
        sqlite3_bind_int64(c->signal, 1, p->db_id);
        sqlite3_bind_int64(c->signal, 2, (int64_t) t);
        sqlite3_bind_int(c->signal, 3, trap_kinds[p->trap_kind].signo);
        sqlite3_bind_int(c->signal, 4, trap_kinds[p->trap_kind].si_code);
        sqlite3_bind_int64(c->signal, 5, (int64_t) traps);
        return step_done(b, c->signal);
}

static int generate_coarse(Bench *b) {
        _cleanup_(coarse_statements_done) CoarseStatements minute = {}, hour = {};
        _cleanup_free_ HourRow *hours = NULL;
        size_t n_hours = 0, hours_capacity = 0;
        /* Minute rows older than the minute tier keeps would have been deleted already. */
        uint64_t minute_from = MAX(floor_to(b->start, MINUTE),
                                   b->raw_from > b->retention.minute_usec ? floor_to(b->raw_from - b->retention.minute_usec, MINUTE) : 0);
        sqlite3_stmt *update = NULL;
        char sql[512];
        int r;

        if (b->raw_from <= b->start)
                return 0; /* no coarse past: the tier marks stay as a new database has them */
        if ((r = coarse_prepare(b, "minute", &minute)) < 0 || (r = coarse_prepare(b, "hour", &hour)) < 0)
                return r;

        /* The minute tier and the process rows: time by time, as the roll-ups write them. */
        if ((r = exec(b, "BEGIN")) < 0)
                return r;
        for (uint64_t m = floor_to(b->start, MINUTE); m < b->raw_from; m += MINUTE) {
                bool hour_ends = (m + MINUTE) % HOUR == 0 || m + MINUTE >= b->raw_from;

                for (unsigned i = 0; i < b->n_procs; i++) {
                        SimProc *p = &b->procs[i];

                        if (p->birth >= m + MINUTE || (p->death != NEVER && p->death < m)) {
                                if (!hour_ends || (faults_is_zero(&p->hour) && p->hour_traps == 0))
                                        continue;
                        } else
                                for (uint64_t t = MAX(m, b->start); t < m + MINUTE; t += BUCKET) {
                                        Faults f;
                                        uint64_t traps;

                                        if (!sim_bucket(p, t, &f, &traps))
                                                continue;
                                        if (!p->seen && (r = coarse_add_process(b, &minute, p, t + BUCKET / 2)) < 0)
                                                goto rollback;
                                        p->info.last_seen_usec = t + BUCKET / 2;
                                        if (t == p->death)
                                                p->info.exited = true;
                                        faults_add(&p->minute, &f);
                                        p->minute_traps += traps;
                                }

                        if (m >= minute_from && (r = coarse_add_row(b, &minute, p, m, &p->minute, p->minute_traps)) < 0)
                                goto rollback;
                        faults_add(&p->hour, &p->minute);
                        p->hour_traps += p->minute_traps;
                        p->minute = (Faults) {};
                        p->minute_traps = 0;

                        if (hour_ends && (!faults_is_zero(&p->hour) || p->hour_traps > 0)) {
                                if (n_hours == hours_capacity) {
                                        size_t c = hours_capacity ? 2 * hours_capacity : 4096;
                                        HourRow *h = reallocarray(hours, c, sizeof(*hours));
                                        if (!h) {
                                                r = -ENOMEM;
                                                goto rollback;
                                        }
                                        hours = h;
                                        hours_capacity = c;
                                }
                                hours[n_hours++] = (HourRow) { i, floor_to(m, HOUR), p->hour, p->hour_traps };
                                p->hour = (Faults) {};
                                p->hour_traps = 0;
                        }
                }
        }
        /* What the daemon knew of each process at raw_from. */
        if ((r = prepare(b, &update, "UPDATE process SET last_seen_usec = ?, exited = ? WHERE id = ?")) < 0)
                goto rollback;
        for (unsigned i = 0; i < b->n_procs; i++) {
                SimProc *p = &b->procs[i];

                if (!p->seen)
                        continue;
                sqlite3_bind_int64(update, 1, (int64_t) p->info.last_seen_usec);
                sqlite3_bind_int(update, 2, p->info.exited);
                sqlite3_bind_int64(update, 3, p->db_id);
                if ((r = step_done(b, update)) < 0)
                        goto rollback;
        }
        sqlite3_finalize(update);
        update = NULL;
        if ((r = exec(b, "COMMIT")) < 0)
                goto rollback;

        /* The hour tier, in the order the hourly roll-ups wrote it, and the marks. */
        if ((r = exec(b, "BEGIN")) < 0)
                return r;
        for (size_t i = 0; i < n_hours; i++)
                if ((r = coarse_add_row(b, &hour, &b->procs[hours[i].proc], hours[i].time, &hours[i].faults,
                                        hours[i].traps)) < 0)
                        goto rollback;
        /* Each process's total, which the daemon's folds would have kept (Top ranks by it): the
         * hour tier holds the whole coarse past exactly once. */
        snprintf(sql, sizeof(sql),
                 "INSERT INTO process_total (process_id, last_counted_usec, f_user, f_kernel, f_minor, f_major, f_read, "
                 "f_write, f_exec, f_protection, traps) SELECT h.process_id, process.last_seen_usec, SUM(f_user), "
                 "SUM(f_kernel), SUM(f_minor), SUM(f_major), SUM(f_read), SUM(f_write), SUM(f_exec), SUM(f_protection), "
                 "SUM(traps) FROM sample_hour AS h JOIN process ON process.id = h.process_id GROUP BY h.process_id");
        if ((r = exec(b, sql)) < 0)
                goto rollback;
        /* Everything before raw_from is rolled into both coarse tiers; the raw tier holds nothing
         * older; the minute tier nothing older than its retention, the hour tier nothing older
         * than the start. */
        snprintf(sql, sizeof(sql),
                 "UPDATE tier SET kept_from_usec = CASE name WHEN 'raw' THEN %1$" PRIu64 " WHEN 'minute' THEN %2$" PRIu64
                 " ELSE %3$" PRIu64 " END, rolled_until_usec = CASE name WHEN 'raw' THEN rolled_until_usec ELSE %1$" PRIu64
                 " END",
                 b->raw_from, minute_from, floor_to(b->start, HOUR));
        if ((r = exec(b, sql)) < 0 || (r = exec(b, "COMMIT")) < 0)
                goto rollback;
        /* The daemon's write-ahead log never grows to a whole tier. */
        return exec(b, "PRAGMA wal_checkpoint(TRUNCATE)");

rollback:
        sqlite3_finalize(update);
        (void) exec(b, "ROLLBACK");
        return r;
}

/* ---- 2. the last day, through the store ---- */

static void checkpoint_due(void *userdata, bool force) {
        Bench *b = userdata;

        b->checkpoint_due = true;
        b->checkpoint_force |= force;
}

static uint64_t file_size(const char *path, const char *suffix);

/* After each write through the store: the checkpoint it asked for, as the daemon's thread would
 * run it (here at once, which the thread can only approach), and the sizes. */
static int after_write(Bench *b) {
        uint64_t wal;

        if (b->checkpoint_due) {
                int r = store_checkpoint(b->path, b->checkpoint_force, NULL);
                if (r < 0) {
                        fprintf(stderr, "store-bench: store_checkpoint: %s\n", strerror(-r));
                        return r;
                }
                b->checkpoint_due = b->checkpoint_force = false;
                b->checkpoints++;
        }
        wal = file_size(b->path, "-wal");
        b->peak_wal = MAX(b->peak_wal, wal);
        b->peak_total = MAX(b->peak_total, wal + file_size(b->path, ""));
        b->peak_used = MAX(b->peak_used, store_used_bytes(b->store));
        return 0;
}

static int maintain_until_done(Bench *b, uint64_t now, unsigned *ret_steps) {
        bool more = true;
        unsigned steps = 0;

        while (more) {
                int r = store_maintain(b->store, now, &b->retention, &more);
                if (r < 0) {
                        fprintf(stderr, "store-bench: store_maintain: %s: %s\n", strerror(-r), store_errmsg(b->store));
                        return r;
                }
                steps++;
                b->maintain_calls++;
                if ((r = after_write(b)) < 0)
                        return r;
        }
        if (ret_steps)
                *ret_steps = steps;
        return 0;
}

static int generate_raw(Bench *b) {
        _cleanup_free_ ProcessSample *samples = calloc(b->n_procs, sizeof(*samples));
        int r;

        if (!samples)
                return -ENOMEM;
        /* Up to the real clock: the buckets pass faster than real time, so this catches up. */
        for (uint64_t t = b->raw_from; t + BUCKET <= now_usec(CLOCK_REALTIME); t += BUCKET) {
                size_t n = 0;

                for (unsigned i = 0; i < b->n_procs; i++) {
                        SimProc *p = &b->procs[i];
                        Faults f;
                        uint64_t traps;

                        if (!sim_bucket(p, t, &f, &traps))
                                continue;
                        if (!p->seen) {
                                p->info.first_seen_usec = t + BUCKET / 2;
                                p->seen = true;
                        }
                        p->info.last_seen_usec = t + BUCKET / 2;
                        p->info.exited = t == p->death;
                        if (traps) {
                                unsigned k = (unsigned) p->trap_kind;

                                p->traps = (Traps) {};
                                p->traps.vector[trap_kinds[k].vector] = traps;
                                p->traps.signal[fault_signal_index(trap_kinds[k].signo)][si_code_slot(trap_kinds[k].si_code)] =
                                        traps;
                        }
                        /* With --fault-time every fault timed: minor ones at 1.5 us, major ones at 3 ms. */
                        FaultTime ft = {};

                        if (b->fault_time) {
                                ft = (FaultTime) { .minor_ns = f.minor * 1500, .major_ns = f.major * 3000000 };
                                ft.histogram[fault_time_bucket_of(1500)] = f.minor;
                                ft.histogram[fault_time_bucket_of(3000000)] = f.major;
                                ft.max_ns = f.major ? 3000000 : f.minor ? 1500 : 0;
                        }
                        samples[n++] = (ProcessSample) { .process = &p->info, .delta = f, .fault_time = ft,
                                                         .traps = traps ? &p->traps : NULL };
                }
                /* One tick per bucket: the daemon's ticks (1 s) add up to the same rows. */
                r = store_flush(b->store, t + BUCKET / 2, samples, n);
                if (r < 0) {
                        fprintf(stderr, "store-bench: store_flush: %s: %s\n", strerror(-r), store_errmsg(b->store));
                        return r;
                }
                b->raw_flushes++;
                b->raw_samples += n;
                if ((r = after_write(b)) < 0)
                        return r;
                /* Maintenance once a minute is complete (the daemon looks every 10 s). */
                if ((t + BUCKET) % MINUTE == 0 && (r = maintain_until_done(b, t + BUCKET, NULL)) < 0)
                        return r;
        }
        b->end = floor_to(now_usec(CLOCK_REALTIME), BUCKET);
        return 0;
}

/* ---- queries ---- */

typedef struct Timing {
        const char *name;
        double *ms;
        size_t n;
        uint64_t rows;
        uint64_t resolution_sec; /* 0: Top */
        double target_ms;
} Timing;

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* Nearest rank. */
static double percentile(const double *sorted, size_t n, double q) {
        size_t k = (size_t) ceil(q * (double) n);
        return n == 0 ? 0 : sorted[k == 0 ? 0 : k - 1];
}

static double median(const double *sorted, size_t n) {
        return n == 0 ? 0 : n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* A query of the store in a snapshot of its own, as the daemon's query pool runs each call. */
#define IN_SNAPSHOT(b, query)                                                                      \
        ({                                                                                         \
                int _snapshot_r = store_snapshot_begin((b)->store);                                \
                if (_snapshot_r >= 0) {                                                            \
                        _snapshot_r = (query);                                                     \
                        store_snapshot_end((b)->store);                                            \
                }                                                                                  \
                _snapshot_r;                                                                       \
        })

/* One `trapstat history PID --since WINDOW`, as io.trapstat.History answers it, in one snapshot. */
static int history_once(Bench *b, uint32_t pid, uint64_t window, uint64_t *ret_rows, uint64_t *ret_resolution) {
        StoreHistoryRow *rows;
        ProcessInfo process;
        uint64_t now = now_usec(CLOCK_REALTIME), since = now - window, until = INT64_MAX, res;
        int64_t id;
        size_t n;
        int r;

        r = store_snapshot_begin(b->store);
        if (r < 0)
                return r;
        r = store_find_process(b->store, pid, 0, &id, &process);
        if (r >= 0) {
                res = tier_default_resolution_sec(process.first_seen_usec, process.last_seen_usec, since, until);
                r = store_history(b->store, id, since, until, res * USEC_PER_SEC, &rows, &n);
                process_info_done(&process);
        }
        store_snapshot_end(b->store);
        if (r < 0)
                return r;
        store_history_rows_free(rows, n);
        *ret_rows = n;
        *ret_resolution = res;
        return 0;
}

/* A uid with few processes among everyone's (one of 100-999, as a long-lived process's), as an
 * unprivileged caller of Top is: -1 when there is none. */
static int64_t few_uid(const Bench *b) {
        for (unsigned i = 0; i < b->n_long; i++)
                if (b->procs[i].info.uid >= 100 && b->procs[i].info.uid < 1000)
                        return b->procs[i].info.uid;
        return -1;
}

static int top_once(Bench *b, uint64_t window, int64_t uid, uint64_t *ret_rows) {
        StoreRow *rows;
        size_t n;
        int r;

        r = IN_SNAPSHOT(b, store_top(b->store, now_usec(CLOCK_REALTIME) - window, "user", TOP_LIMIT, uid, NULL, &rows,
                                     &n, NULL));
        if (r < 0)
                return r;
        store_rows_free(rows, n);
        *ret_rows = n;
        return 0;
}

static int run_queries(Bench *b, Timing *timings) {
        static const uint64_t history_windows[] = { HOUR, DAY, 14 * DAY }, top_windows[] = { HOUR, DAY };
        int64_t few = few_uid(b);
        Rng r;

        rng_seed(&r, b->seed + 1);
        for (size_t k = 0; k < 7; k++) {
                Timing *tm = &timings[k];

                tm->ms = calloc(b->queries, sizeof(double));
                if (!tm->ms)
                        return -ENOMEM;
                for (unsigned q = 0; q < b->queries; q++) {
                        uint64_t rows = 0, res = 0;
                        double t0 = monotonic_sec();
                        int e;

                        if (k < 3)
                                e = history_once(b, b->procs[rng_below(&r, b->n_long)].info.pid, history_windows[k], &rows, &res);
                        else {
                                /* The last: a user's as the walk over everyone's totals ranks it,
                                 * beside their own processes ranked alone (store-top.c). */
                                store_set_top_own_max(b->store, k == 6 ? 0 : STORE_TOP_OWN_MAX);
                                e = top_once(b, top_windows[MIN(k - 3, (size_t) 1)], k >= 5 ? few : -1, &rows);
                                store_set_top_own_max(b->store, STORE_TOP_OWN_MAX);
                        }
                        tm->ms[q] = (monotonic_sec() - t0) * 1e3;
                        if (e < 0) {
                                fprintf(stderr, "store-bench: %s: %s: %s\n", tm->name, strerror(-e), store_errmsg(b->store));
                                return e;
                        }
                        tm->rows += rows;
                        if (k < 3)
                                tm->resolution_sec = res;
                        tm->n++;
                }
                qsort(tm->ms, tm->n, sizeof(double), cmp_double);
        }
        return 0;
}

/* ListProcesses as root asks it, exited processes too: the first page (with the count of the
 * rest beside it) Q times, then the whole listing page after page, each after the end of the one
 * before and in a snapshot of its own, as the daemon's calls are. *ret_walked: the processes the
 * pages held, and *ret_twice those among them held by an earlier page too (the check: none). */
#define LIST_PAGE 1000

static int cmp_process_ident(const void *a, const void *b) {
        const uint64_t *x = a, *y = b;
        return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

static int run_list_queries(Bench *b, Timing *first, Timing *pages, uint64_t *ret_walked, uint64_t *ret_twice) {
        StoreProcessFilter f = { .include_exited = true, .uid = -1, .limit = LIST_PAGE };
        _cleanup_free_ uint64_t *idents = NULL; /* (pid, start time) of every process walked */
        uint64_t total, walked = 0, twice = 0;
        StoreListCursor next = {};
        size_t n, capacity = 0;
        ProcessInfo *list;
        int r;

        first->ms = calloc(b->queries, sizeof(double));
        if (!first->ms)
                return -ENOMEM;
        for (unsigned q = 0; q < b->queries; q++) {
                double t0 = monotonic_sec();

                r = IN_SNAPSHOT(b, store_list_processes(b->store, &f, &list, &n, &total, NULL));
                if (r < 0)
                        return r;
                first->ms[first->n++] = (monotonic_sec() - t0) * 1e3;
                first->rows += n;
                process_infos_free(list, n);
        }
        qsort(first->ms, first->n, sizeof(double), cmp_double);

        do {
                double t0 = monotonic_sec();

                f.after = pages->n ? &next : NULL;
                r = IN_SNAPSHOT(b, store_list_processes(b->store, &f, &list, &n, &total, &next));
                if (r < 0)
                        return r;
                if (pages->n == capacity) {
                        double *ms = realloc(pages->ms, (capacity = capacity * 2 + 64) * sizeof(double));
                        uint64_t *id = realloc(idents, capacity * LIST_PAGE * 2 * sizeof(uint64_t));

                        if (ms)
                                pages->ms = ms;
                        if (id)
                                idents = id;
                        if (!ms || !id) {
                                process_infos_free(list, n);
                                return -ENOMEM;
                        }
                }
                pages->ms[pages->n++] = (monotonic_sec() - t0) * 1e3;
                pages->rows += n;
                for (size_t i = 0; i < n; i++) {
                        idents[2 * walked] = list[i].pid;
                        idents[2 * walked + 1] = list[i].start_time;
                        walked++;
                }
                process_infos_free(list, n);
        } while (total > n && n > 0);
        qsort(pages->ms, pages->n, sizeof(double), cmp_double);
        qsort(idents, walked, 2 * sizeof(uint64_t), cmp_process_ident);
        for (uint64_t i = 1; i < walked; i++)
                twice += cmp_process_ident(&idents[2 * i - 2], &idents[2 * i]) == 0;
        *ret_walked = walked;
        *ret_twice = twice;
        return 0;
}

/* ---- checks ---- */

typedef struct Totals {
        Faults faults;
        uint64_t traps;
} Totals;

static int history_totals(Bench *b, int64_t id, uint64_t since, uint64_t resolution_sec, Totals *ret) {
        StoreHistoryRow *rows;
        size_t n;
        int r;

        r = IN_SNAPSHOT(b, store_history(b->store, id, since, INT64_MAX, resolution_sec * USEC_PER_SEC, &rows, &n));
        if (r < 0)
                return r;
        *ret = (Totals) {};
        for (size_t i = 0; i < n; i++) {
                faults_add(&ret->faults, &rows[i].faults);
                ret->traps += rows[i].traps ? traps_total(rows[i].traps) : 0;
        }
        store_history_rows_free(rows, n);
        return 0;
}

/* SUM over the rows of one tier's tables with from <= time_usec < to. */
static int sql_totals(Bench *b, int64_t id, const char *tier, uint64_t from, uint64_t to, Totals *ret) {
        _cleanup_free_ char *sums = NULL, *sql = NULL;
        sqlite3_stmt *st;
        int r = 0;

        for (size_t i = 0; i < n_fault_fields; i++) {
                char *s = NULL;
                if (asprintf(&s, "%s%sTOTAL(f_%s)", sums ?: "", sums ? ", " : "", fault_fields[i].column) < 0)
                        return -ENOMEM;
                free(sums);
                sums = s;
        }
        if (asprintf(&sql,
                     "SELECT %s, (SELECT TOTAL(count) FROM trap_%s WHERE process_id = ?1 AND time_usec >= ?2 AND time_usec < ?3) "
                     "FROM sample_%s WHERE process_id = ?1 AND time_usec >= ?2 AND time_usec < ?3",
                     sums, tier, tier) < 0)
                return -ENOMEM;
        if ((r = prepare(b, &st, sql)) < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, (int64_t) MIN(from, (uint64_t) INT64_MAX));
        sqlite3_bind_int64(st, 3, (int64_t) MIN(to, (uint64_t) INT64_MAX));
        if (sqlite3_step(st) == SQLITE_ROW) {
                for (size_t i = 0; i < n_fault_fields; i++)
                        *faults_field(&ret->faults, &fault_fields[i]) += (uint64_t) sqlite3_column_double(st, (int) i);
                ret->traps += (uint64_t) sqlite3_column_double(st, (int) n_fault_fields);
        } else
                r = -EIO;
        sqlite3_finalize(st);
        return r;
}

static bool totals_equal(const Totals *a, const Totals *b) {
        return faults_equal(&a->faults, &b->faults) && a->traps == b->traps;
}

static int tier_mark(Bench *b, const char *name, const char *column, uint64_t *ret) {
        char sql[128];
        int64_t v;

        snprintf(sql, sizeof(sql), "SELECT %s FROM tier WHERE name = '%s'", column, name);
        v = query_i64(b, sql);
        if (v < 0)
                return -EIO;
        *ret = (uint64_t) v;
        return 0;
}

static void report_mismatch(const char *what, const SimProc *p, const char *a_name, const Totals *a, const char *b_name,
                            const Totals *x) {
        fprintf(stderr, "store-bench: ERROR: %s of pid %u (start_time %" PRIu64 "): %s user=%" PRIu64 " minor=%" PRIu64
                        " protection=%" PRIu64 " traps=%" PRIu64 ", %s user=%" PRIu64 " minor=%" PRIu64 " protection=%" PRIu64
                        " traps=%" PRIu64 "\n",
                what, p->info.pid, p->info.start_time, a_name, a->faults.user, a->faults.minor, a->faults.protection,
                a->traps, b_name, x->faults.user, x->faults.minor, x->faults.protection, x->traps);
}

/* History against the simulation and against plain sums over the rows each tier holds, and
 * Top against the raw tier. Returns the number of mismatches. */
/* The sizes through the last day: the WAL within the room the size cap keeps for it, the database
 * with its WAL within the cap, and with trapstatd's defaults (no fault time, the default cap) the
 * pages in use never over the cap's target, so that the cap never had to take anything: the
 * default retention fits. Returns the errors. */
static unsigned check_sizes(Bench *b) {
        uint64_t cap = b->retention.max_bytes, target = store_cap_target(b->store, cap);
        unsigned errors = 0;

        if (cap == 0)
                return 0;
        if (b->peak_wal > cap - target) {
                fprintf(stderr, "store-bench: ERROR: the WAL reached %.1f MiB, over the %.1f MiB the size cap keeps for it\n",
                        (double) b->peak_wal / 1048576, (double) (cap - target) / 1048576);
                errors++;
        }
        if (b->peak_total > cap) {
                fprintf(stderr, "store-bench: ERROR: database and WAL reached %.1f MiB, over the %.1f MiB cap\n",
                        (double) b->peak_total / 1048576, (double) cap / 1048576);
                errors++;
        }
        /* Only trapstatd's defaults promise that much; otherwise the line above says so. */
        if (b->peak_used > target && !b->fault_time && cap == STORE_RETENTION_DEFAULT.max_bytes) {
                fprintf(stderr, "store-bench: ERROR: the pages in use reached %.1f MiB, over the size cap's target %.1f MiB: "
                                "the default retention does not fit the default cap at this size\n",
                        (double) b->peak_used / 1048576, (double) target / 1048576);
                errors++;
        }
        return errors;
}

/* Top over all of the history (since 0), whose rows reach into the coarse tiers, against the
 * simulation's totals: the same processes in the same order with the same sums, and how many it
 * left out. Ranks through the totals the coarse past's INSERTs and the last day's folds kept.
 * Returns the number of mismatches, or -errno. */
typedef struct Ranked {
        int64_t id;
        uint64_t user;
} Ranked;

static int ranked_compare(const void *a, const void *b) {
        const Ranked *x = a, *y = b;

        if (x->user != y->user)
                return x->user > y->user ? -1 : 1;
        return x->id > y->id ? -1 : x->id < y->id;
}

/* Top since 0 against the simulation, as root sees it (uid -1) or as uid does. */
static int check_top_all_time(Bench *b, int64_t uid) {
        _cleanup_free_ Ranked *want = calloc(MAX(b->n_procs, 1U), sizeof(*want));
        unsigned errors = 0;
        size_t n_want = 0, n;
        uint64_t other;
        StoreRow *rows;
        int e;

        if (!want)
                return -ENOMEM;
        for (unsigned i = 0; i < b->n_procs; i++) {
                const SimProc *p = &b->procs[i];
                ProcessInfo info;
                int64_t id;

                if ((faults_is_zero(&p->total) && p->total_traps == 0) || (uid >= 0 && p->info.uid != uid))
                        continue; /* no rows, or not the caller's */
                if (store_find_process(b->store, p->info.pid, p->info.start_time, &id, &info) < 0)
                        continue; /* reported by the checks of History */
                process_info_done(&info);
                want[n_want++] = (Ranked) { id, p->total.user };
        }
        qsort(want, n_want, sizeof(*want), ranked_compare);
        if ((e = IN_SNAPSHOT(b, store_top(b->store, 0, "user", TOP_LIMIT, uid, NULL, &rows, &n, &other))) < 0)
                return e;
        if (n != MIN(n_want, (size_t) TOP_LIMIT) || other != n_want - n) {
                fprintf(stderr, "store-bench: ERROR: Top since 0 as uid %" PRId64 ": %zu rows and %" PRIu64
                                " others, the simulation %zu processes\n",
                        uid, n, other, n_want);
                errors++;
        }
        for (size_t k = 0; k < MIN(n, n_want); k++)
                if (rows[k].id != want[k].id || rows[k].faults.user != want[k].user) {
                        fprintf(stderr, "store-bench: ERROR: Top since 0 as uid %" PRId64 " row %zu: id %" PRId64
                                        " user %" PRIu64 ", the simulation id %" PRId64 " user %" PRIu64 "\n",
                                uid, k, rows[k].id, rows[k].faults.user, want[k].id, want[k].user);
                        errors++;
                        break;
                }
        store_rows_free(rows, n);
        return (int) errors;
}

static int run_checks(Bench *b, unsigned *ret_processes) {
        uint64_t now = now_usec(CLOCK_REALTIME), since14 = now - 14 * DAY, since24 = now - DAY, minute_rolled;
        unsigned errors = 0, checked = 0;
        Rng r;

        rng_seed(&r, b->seed + 2);
        if (tier_mark(b, "minute", "rolled_until_usec", &minute_rolled) < 0)
                return -EIO;

        for (unsigned k = 0; k < 16; k++) {
                /* Long-lived, short-lived and trapping ones. */
                unsigned i = k < 6 ? (unsigned) rng_below(&r, b->n_long)
                             : k < 12 ? b->n_long + (unsigned) rng_below(&r, b->n_procs - b->n_long)
                                      : (unsigned) (TRAP_EVERY / 2 + TRAP_EVERY * rng_below(&r, b->n_procs / TRAP_EVERY ?: 1));
                SimProc *p = &b->procs[MIN(i, b->n_procs - 1)];
                Totals sim = { p->total, p->total_traps }, h3600, h60, h10, sql = {};
                ProcessInfo info;
                int64_t id;
                int e;

                e = store_find_process(b->store, p->info.pid, p->info.start_time, &id, &info);
                if (e == -ENOENT && faults_is_zero(&p->total) && p->total_traps == 0)
                        continue; /* never seen: never faulted (an exited one without rows is deleted) */
                if (e < 0) {
                        fprintf(stderr, "store-bench: ERROR: pid %u start_time %" PRIu64 " not found: %s\n", p->info.pid,
                                p->info.start_time, strerror(-e));
                        errors++;
                        continue;
                }
                process_info_done(&info);
                checked++;

                /* All of it, at 3600 s: hour rows up to the hour mark, then minutes, then raw.
                 * Every count the simulation made, exactly once. */
                if ((e = history_totals(b, id, 0, 3600, &h3600)) < 0)
                        return e;
                if (!totals_equal(&h3600, &sim)) {
                        report_mismatch("History since 0 at 3600 s", p, "history", &h3600, "simulated", &sim);
                        errors++;
                }

                /* 14 days: at 3600 s the whole hours come from the hour tier, at 60 s from the
                 * minute tier, which keeps them; both from the minute holding since on, as the raw
                 * tier no longer has that edge. */
                if ((e = history_totals(b, id, since14, 3600, &h3600)) < 0 || (e = history_totals(b, id, since14, 60, &h60)) < 0 ||
                    (e = sql_totals(b, id, "minute", floor_to(since14, MINUTE), minute_rolled, &sql)) < 0 ||
                    (e = sql_totals(b, id, "raw", minute_rolled, INT64_MAX, &sql)) < 0)
                        return e;
                if (!totals_equal(&h3600, &sql)) {
                        report_mismatch("History 14 d at 3600 s", p, "history", &h3600, "SQL minute+raw rows", &sql);
                        errors++;
                }
                if (!totals_equal(&h60, &sql)) {
                        report_mismatch("History 14 d at 60 s", p, "history", &h60, "SQL minute+raw rows", &sql);
                        errors++;
                }

                /* 24 hours: the raw tier has all of it (History takes the buckets that start at or
                 * after since); the coarse tiers must add up to the same. */
                sql = (Totals) {};
                if ((e = history_totals(b, id, since24, 3600, &h3600)) < 0 || (e = history_totals(b, id, since24, 60, &h60)) < 0 ||
                    (e = history_totals(b, id, since24, 10, &h10)) < 0 ||
                    (e = sql_totals(b, id, "raw", since24, INT64_MAX, &sql)) < 0)
                        return e;
                if (!totals_equal(&h3600, &sql)) {
                        report_mismatch("History 24 h at 3600 s", p, "history", &h3600, "SQL raw rows", &sql);
                        errors++;
                }
                if (!totals_equal(&h60, &sql)) {
                        report_mismatch("History 24 h at 60 s", p, "history", &h60, "SQL raw rows", &sql);
                        errors++;
                }
                if (!totals_equal(&h10, &sql)) {
                        report_mismatch("History 24 h at 10 s", p, "history", &h10, "SQL raw rows", &sql);
                        errors++;
                }
        }

        /* Top: the same processes and sums as the raw rows, which cover a day. */
        static const uint64_t windows[] = { HOUR, DAY };
        for (size_t w = 0; w < ELEMENTSOF(windows); w++) {
                uint64_t since = now_usec(CLOCK_REALTIME) - windows[w];
                sqlite3_stmt *st;
                StoreRow *rows;
                size_t n, k = 0;
                int e;

                if ((e = IN_SNAPSHOT(b, store_top(b->store, since, "user", TOP_LIMIT, -1, NULL, &rows, &n, NULL))) < 0)
                        return e;
                if ((e = prepare(b, &st, "SELECT process_id, SUM(f_user) FROM sample_raw WHERE time_usec >= ? "
                                         "GROUP BY process_id ORDER BY 2 DESC, process_id DESC LIMIT ?")) < 0) {
                        store_rows_free(rows, n);
                        return e;
                }
                sqlite3_bind_int64(st, 1, (int64_t) floor_to(since, BUCKET));
                sqlite3_bind_int(st, 2, TOP_LIMIT);
                for (; sqlite3_step(st) == SQLITE_ROW; k++)
                        if (k >= n || rows[k].id != sqlite3_column_int64(st, 0) ||
                            rows[k].faults.user != (uint64_t) sqlite3_column_int64(st, 1)) {
                                fprintf(stderr, "store-bench: ERROR: Top %s row %zu: id %" PRId64 " user %" PRIu64
                                                ", the raw rows say id %" PRId64 " user %" PRId64 "\n",
                                        w ? "24 h" : "1 h", k, k < n ? rows[k].id : -1, k < n ? rows[k].faults.user : 0,
                                        (int64_t) sqlite3_column_int64(st, 0), (int64_t) sqlite3_column_int64(st, 1));
                                errors++;
                                k = n; /* reported */
                                break;
                        }
                if (k != n) {
                        fprintf(stderr, "store-bench: ERROR: Top %s returned %zu rows, the raw rows %zu\n", w ? "24 h" : "1 h", n, k);
                        errors++;
                }
                sqlite3_finalize(st);
                store_rows_free(rows, n);
        }
        for (int as = 0; as < 2; as++) {
                int e = check_top_all_time(b, as ? few_uid(b) : -1);

                if (e < 0)
                        return e;
                errors += (unsigned) e;
        }
        errors += check_sizes(b);
        *ret_processes = checked;
        return (int) errors;
}

/* ---- output ---- */

static double mib(uint64_t bytes) {
        return (double) bytes / (1024.0 * 1024.0);
}

static uint64_t file_size(const char *path, const char *suffix) {
        char p[4096];
        struct stat st;

        snprintf(p, sizeof(p), "%s%s", path, suffix);
        return stat(p, &st) == 0 ? (uint64_t) st.st_size : 0;
}

static void print_tiers(Bench *b) {
        static const char *const tiers[] = { "raw", "minute", "hour" };

        printf("\n%-8s %12s %10s %11s %22s %22s\n", "tier", "sample rows", "trap rows", "signal rows", "kept_from (UTC)",
               "rolled_until (UTC)");
        for (size_t t = 0; t < ELEMENTSOF(tiers); t++) {
                char sql[128], kept[32] = "-", rolled[32] = "-";
                uint64_t k, ru;
                int64_t n[3];
                static const char *const kinds[] = { "sample", "trap", "signal" };

                for (size_t i = 0; i < 3; i++) {
                        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s_%s", kinds[i], tiers[t]);
                        n[i] = query_i64(b, sql);
                }
                if (tier_mark(b, tiers[t], "kept_from_usec", &k) >= 0) {
                        time_t s = (time_t) (k / USEC_PER_SEC);
                        strftime(kept, sizeof(kept), "%F %T", gmtime(&s));
                }
                if (t > 0 && tier_mark(b, tiers[t], "rolled_until_usec", &ru) >= 0) {
                        time_t s = (time_t) (ru / USEC_PER_SEC);
                        strftime(rolled, sizeof(rolled), "%F %T", gmtime(&s));
                }
                printf("%-8s %12" PRId64 " %10" PRId64 " %11" PRId64 " %22s %22s\n", tiers[t], n[0], n[1], n[2], kept, rolled);
        }
        printf("%-8s %12" PRId64 " (%" PRId64 " exited)\n", "process", query_i64(b, "SELECT COUNT(*) FROM process"),
               query_i64(b, "SELECT COUNT(*) FROM process WHERE exited"));
}

static void print_workload(Bench *b) {
        double span_buckets = (double) (b->end - b->start) / (double) BUCKET, a = (double) workload.active_buckets;

        printf("\nworkload: %.0f processes alive on average, active in %.1f %% of their 10 s buckets, %.0f faults per "
               "active bucket on average (max %" PRIu64 "), traps in %" PRIu64 " buckets\n",
               (double) workload.alive_buckets / span_buckets, 100.0 * a / (double) workload.alive_buckets,
               (double) workload.faults / a, workload.max_faults, workload.trap_buckets);
        printf("faults per active bucket: 1-9 %.1f %%, 10-99 %.1f %%, 100-999 %.1f %%, 10^3-10^4 %.2f %%, 10^4-10^5 %.2f %%, "
               ">= 10^5 %.3f %%\n",
               100.0 * (double) workload.by_decade[0] / a, 100.0 * (double) workload.by_decade[1] / a,
               100.0 * (double) workload.by_decade[2] / a, 100.0 * (double) workload.by_decade[3] / a,
               100.0 * (double) workload.by_decade[4] / a, 100.0 * (double) workload.by_decade[5] / a);
}

static void print_size(Bench *b) {
        uint64_t db = file_size(b->path, ""), wal = file_size(b->path, "-wal"), used = store_used_bytes(b->store);
        double process_hours = 0;

        for (unsigned i = 0; i < b->n_procs; i++) {
                const SimProc *p = &b->procs[i];
                uint64_t from = MAX(p->birth, b->start), to = MIN(p->death, b->end);

                if (to > from)
                        process_hours += (double) (to - from) / (double) HOUR;
        }
        printf("\ndatabase file   %10.1f MiB (+ wal %.1f MiB) = %.1f MiB; store_used_bytes %.1f MiB; size cap %.0f MiB%s\n",
               mib(db), mib(wal), mib(db + wal), mib(used), mib(b->retention.max_bytes),
               b->retention.max_bytes && used > store_cap_target(b->store, b->retention.max_bytes)
                       ? " (the cap acted: see below)"
                       : "");
        printf("process-hours   %10.0f alive within the span; bytes per process-hour %.0f (used bytes / process-hours), "
               "per process %.0f\n",
               process_hours, (double) used / process_hours, (double) used / b->n_procs);
        printf("last day        WAL at most %.1f MiB after any write (the cap keeps %.1f MiB for it; %" PRIu64
               " checkpoints); database + WAL at most %.1f MiB; pages in use at most %.1f MiB (the cap's target %.1f MiB)\n",
               mib(b->peak_wal), mib(b->retention.max_bytes - store_cap_target(b->store, b->retention.max_bytes)),
               b->checkpoints, mib(b->peak_total), mib(b->peak_used), mib(store_cap_target(b->store, b->retention.max_bytes)));
}

static void print_timings(const Timing *timings, size_t n) {
        printf("\n%-22s %10s %10s %10s %10s %10s %10s\n", "query", "resolution", "rows/query", "median ms", "p99 ms",
               "max ms", "p99 target");
        for (size_t k = 0; k < n; k++) {
                const Timing *t = &timings[k];
                char res[32] = "-", target[32] = "-";
                double p99 = percentile(t->ms, t->n, 0.99);

                if (t->resolution_sec)
                        snprintf(res, sizeof(res), "%" PRIu64 " s", t->resolution_sec);
                if (t->target_ms > 0)
                        snprintf(target, sizeof(target), "< %.0f ms %s", t->target_ms, p99 < t->target_ms ? "met" : "MISSED");
                printf("%-22s %10s %10.0f %10.2f %10.2f %10.2f %s\n", t->name, res,
                       t->n ? (double) t->rows / (double) t->n : 0, median(t->ms, t->n), p99, t->n ? t->ms[t->n - 1] : 0,
                       target);
        }
}

/* ---- main ---- */

static void help(void) {
        printf("Usage: store-bench [OPTIONS]\n"
               "Fills a trapstat database with the history trapstatd would keep with the default retention,\n"
               "then times History (1 h, 24 h, 14 d) and Top (1 h, 24 h).\n\n"
               "  --processes N  processes over the span, 30 %% of them long-lived (default 1000)\n"
               "  --long N       of them long-lived, running through the span (default 30 %%)\n"
               "  --short-life MIN:MAX  the others' lives in seconds, log-uniform (default 120:259200)\n"
               "  --days D       days of history (default 14)\n"
               "  --queries Q    queries of each kind (default 200)\n"
               "  --db PATH      the database (default: a temporary file, removed at the end)\n"
               "  --keep         keep the database\n"
               "  --seed S       random seed (default 1)\n"
               "  --fault-time   the last day's faults timed too, as with trapstatd --enable-source fault_time\n"
               "  --max-db-size M  the size cap in MiB (default 256, trapstatd's; 0: none)\n");
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || *s == '-' || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static void bench_done(Bench *b) {
        store_free(b->store);
        if (b->db)
                sqlite3_close(b->db);
        for (unsigned i = 0; b->procs && i < b->n_procs; i++)
                process_info_done(&b->procs[i].info);
        free(b->procs);
        free(b->columns);
        if (!b->keep && b->path) {
                static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };
                for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                        char p[4096];
                        snprintf(p, sizeof(p), "%s%s", b->path, suffixes[i]);
                        (void) unlink(p);
                }
                if (b->tmpdir)
                        (void) rmdir(b->tmpdir);
        }
        free(b->path);
        free(b->tmpdir);
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "processes", required_argument, NULL, 'n' }, { "days", required_argument, NULL, 'd' },
                { "queries", required_argument, NULL, 'q' },   { "db", required_argument, NULL, 'D' },
                { "keep", no_argument, NULL, 'k' },            { "seed", required_argument, NULL, 's' },
                { "fault-time", no_argument, NULL, 'f' },      { "max-db-size", required_argument, NULL, 'm' },
                { "long", required_argument, NULL, 'l' },      { "short-life", required_argument, NULL, 'S' },
                { "help", no_argument, NULL, 'h' },            {},
        };
        _cleanup_(bench_done) Bench b = { .n_procs = 1000, .days = 14, .queries = 200, .seed = 1,
                                          .short_min = SHORT_LIFE_MIN_USEC, .short_max = SHORT_LIFE_MAX_USEC,
                                          .retention = STORE_RETENTION_DEFAULT };
        uint64_t n_long = 0;
        Timing timings[] = {
                { .name = "History 1 h", .target_ms = 10 }, { .name = "History 24 h", .target_ms = 10 },
                { .name = "History 14 d", .target_ms = 10 }, { .name = "Top 1 h (user, 20)" },
                { .name = "Top 24 h (user, 20)", .target_ms = 100 }, { .name = "Top 24 h, a user's" },
                { .name = "  the same by the walk" }, { .name = "ListProcesses, 1000" },
                { .name = "  every page of 1000" },
        };
        uint64_t walked = 0, twice = 0;
        uint64_t v;
        unsigned checked = 0;
        double t0;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'n':
                        if (parse_u64(optarg, 1, 1000000, &v) < 0)
                                goto usage;
                        b.n_procs = (unsigned) v;
                        break;
                case 'd':
                        if (parse_u64(optarg, 1, 365, &v) < 0)
                                goto usage;
                        b.days = (unsigned) v;
                        break;
                case 'q':
                        if (parse_u64(optarg, 1, 1000000, &v) < 0)
                                goto usage;
                        b.queries = (unsigned) v;
                        break;
                case 'D':
                        free(b.path);
                        b.path = strdup(optarg);
                        if (!b.path)
                                return EXIT_FAILURE;
                        break;
                case 'k':
                        b.keep = true;
                        break;
                case 's':
                        if (parse_u64(optarg, 0, UINT64_MAX, &b.seed) < 0)
                                goto usage;
                        break;
                case 'f':
                        b.fault_time = true;
                        break;
                case 'm':
                        if (parse_u64(optarg, 0, 1024 * 1024, &v) < 0)
                                goto usage;
                        b.retention.max_bytes = v * 1024 * 1024;
                        break;
                case 'l':
                        if (parse_u64(optarg, 1, 1000000, &n_long) < 0)
                                goto usage;
                        break;
                case 'S': {
                        char *colon = strchr(optarg, ':');
                        uint64_t lo, hi;

                        if (!colon)
                                goto usage;
                        *colon = '\0';
                        if (parse_u64(optarg, 10, 365 * 86400, &lo) < 0 || parse_u64(colon + 1, lo, 365 * 86400, &hi) < 0)
                                goto usage;
                        b.short_min = lo * USEC_PER_SEC;
                        b.short_max = hi * USEC_PER_SEC;
                        break;
                }
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                default:
                        goto usage;
                }
        if (optind < argc)
                goto usage;

        if (!b.path) {
                const char *tmp = getenv("TMPDIR") ?: "/var/tmp";
                if (asprintf(&b.tmpdir, "%s/store-bench-XXXXXX", tmp) < 0 || !mkdtemp(b.tmpdir) ||
                    asprintf(&b.path, "%s/trapstat.db", b.tmpdir) < 0) {
                        fprintf(stderr, "store-bench: Failed to create a temporary directory in %s: %m\n", tmp);
                        return EXIT_FAILURE;
                }
        } else if (access(b.path, F_OK) == 0) {
                fprintf(stderr, "store-bench: %s exists; give a new path\n", b.path);
                b.keep = true; /* not ours to remove */
                return EXIT_FAILURE;
        }

        b.n_long = n_long ? (unsigned) n_long : MAX(1u, b.n_procs * LONG_LIVED_PERCENT / 100);
        if (b.n_long >= b.n_procs) {
                fprintf(stderr, "store-bench: --long must leave some of the --processes short-lived\n");
                return 2;
        }
        b.now0 = now_usec(CLOCK_REALTIME);
        b.start = floor_to(b.now0 - (uint64_t) b.days * DAY, BUCKET);
        b.boot_usec = b.start - 600 * USEC_PER_SEC;
        /* The raw tier keeps a day: write that through the store, what is older directly, from
         * the hour before the day so that the store's own retention trims raw to the day. A
         * span no longer than that all goes through the store, from an empty database. */
        b.raw_from = (uint64_t) b.days * DAY > b.retention.raw_usec + HOUR ? floor_to(b.now0 - b.retention.raw_usec, HOUR)
                                                                         : b.start;
        b.columns = NULL;
        for (size_t i = 0; i < n_fault_fields; i++) {
                char *s = NULL;
                if (asprintf(&s, "%s%sf_%s", b.columns ?: "", b.columns ? ", " : "", fault_fields[i].column) < 0)
                        return EXIT_FAILURE;
                free(b.columns);
                b.columns = s;
        }

        printf("store-bench: %u processes (%u long-lived, the others living %" PRIu64 " s to %" PRIu64 " s), %u days, "
               "%u queries of each kind, seed %" PRIu64 "%s, size cap %" PRIu64 " MiB\n",
               b.n_procs, b.n_long, b.short_min / USEC_PER_SEC, b.short_max / USEC_PER_SEC, b.days, b.queries, b.seed,
               b.fault_time ? ", fault time" : "",
               b.retention.max_bytes >> 20);
        {
                struct utsname u = {};
                char date[32] = "?";
                time_t now = time(NULL);

                (void) uname(&u);
                strftime(date, sizeof(date), "%F %T UTC", gmtime(&now));
                printf("%s, kernel %s, %ld CPUs, SQLite %s\n", date, u.release, sysconf(_SC_NPROCESSORS_ONLN),
                       sqlite3_libversion());
        }
        printf("database %s\n", b.path);
        fflush(stdout);

        t0 = monotonic_sec();
        if ((r = make_processes(&b)) < 0)
                return EXIT_FAILURE;
        r = store_open(b.path, b.boot_id, &b.store);
        if (r < 0) {
                fprintf(stderr, "store-bench: Failed to open database %s: %s\n", b.path, strerror(-r));
                return EXIT_FAILURE;
        }
        if (sqlite3_open_v2(b.path, &b.db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
                fprintf(stderr, "store-bench: Failed to open %s: %s\n", b.path, sqlite3_errmsg(b.db));
                return EXIT_FAILURE;
        }
        sqlite3_busy_timeout(b.db, 5000);
        /* A large cache so the big transactions do not spill to the log before they commit; it
         * changes how fast, not what is written. */
        if (exec(&b, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -524288") < 0)
                return EXIT_FAILURE;

        if (generate_coarse(&b) < 0)
                return EXIT_FAILURE;
        b.seconds_coarse = monotonic_sec() - t0;
        printf("coarse past written: %.1f s\n", b.seconds_coarse);
        fflush(stdout);
        /* Back to the default for the queries' sake: our connection only counts rows from here. */
        (void) exec(&b, "PRAGMA cache_size = -2000");

        /* From here on every write goes through the store, which checkpoints as the daemon's does. */
        store_set_checkpoint_handler(b.store, store_checkpoint_pages(b.retention.max_bytes), checkpoint_due, &b);
        t0 = monotonic_sec();
        if (generate_raw(&b) < 0)
                return EXIT_FAILURE;
        b.seconds_raw = monotonic_sec() - t0;
        printf("last day flushed: %.1f s\n", b.seconds_raw);
        fflush(stdout);

        t0 = monotonic_sec();
        if (maintain_until_done(&b, now_usec(CLOCK_REALTIME), &b.final_steps) < 0)
                return EXIT_FAILURE;
        b.seconds_final = monotonic_sec() - t0;

        printf("\n%-52s %10s\n", "generation", "seconds");
        printf("%-52s %10.1f\n", "  coarse past: minute and hour rows by SQL INSERT", b.seconds_coarse);
        printf("  last %4.1f h: %6" PRIu64 " store_flush (%" PRIu64 " samples) + %" PRIu64 " store_maintain %*s%10.1f\n",
               (double) (b.end - b.raw_from) / (double) HOUR, b.raw_flushes, b.raw_samples, b.maintain_calls, 1, "",
               b.seconds_raw);
        printf("  final store_maintain until done: %u step(s)%*s%10.3f\n", b.final_steps, 17, "", b.seconds_final);
        printf("%-52s %10.1f\n", "  total", b.seconds_coarse + b.seconds_raw + b.seconds_final);
        if (b.final_steps > 2)
                printf("WARNING: the final maintenance took %u steps: the tier marks do not match the rows\n", b.final_steps);

        print_workload(&b);
        print_tiers(&b);
        print_size(&b);
        fflush(stdout);

        /* The queries read the last ticks where they are still pending, as the daemon's do; the
         * checks compare their answers with SQL over the tiers' rows, and the timings are those
         * of queries with nothing pending: the pending ticks are folded first, as the store does
         * when it closes. */
        b.store = store_free(b.store);
        r = store_open(b.path, b.boot_id, &b.store);
        if (r < 0) {
                fprintf(stderr, "store-bench: Failed to reopen database %s: %s\n", b.path, strerror(-r));
                return EXIT_FAILURE;
        }
        store_set_checkpoint_handler(b.store, store_checkpoint_pages(b.retention.max_bytes), checkpoint_due, &b);

        if (run_queries(&b, timings) < 0)
                return EXIT_FAILURE;
        r = run_list_queries(&b, &timings[7], &timings[8], &walked, &twice);
        if (r < 0) {
                fprintf(stderr, "store-bench: ListProcesses: %s: %s\n", strerror(-r), store_errmsg(b.store));
                return EXIT_FAILURE;
        }
        print_timings(timings, ELEMENTSOF(timings));
        {
                int64_t uid = few_uid(&b);
                unsigned mine = 0;

                for (unsigned i = 0; i < b.n_procs; i++)
                        mine += uid >= 0 && b.procs[i].info.uid == uid;
                printf("(a user's: Top as uid %" PRId64 ", who sees their %u of the %u processes)\n", uid, mine, b.n_procs);
        }
        fflush(stdout);
        for (size_t k = 0; k < ELEMENTSOF(timings); k++)
                free(timings[k].ms);

        r = run_checks(&b, &checked);
        if (r < 0) {
                fprintf(stderr, "store-bench: checks failed to run: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        if (twice > 0 || walked != (uint64_t) query_i64(&b, "SELECT COUNT(*) FROM process")) {
                fprintf(stderr, "store-bench: ListProcesses's pages held %" PRIu64 " processes (%" PRIu64
                                " of them twice) of the %" PRId64 " stored: FAILED\n",
                        walked, twice, query_i64(&b, "SELECT COUNT(*) FROM process"));
                r++;
        }
        if (r > 0) {
                fprintf(stderr, "store-bench: %d check(s) FAILED\n", r);
                return EXIT_FAILURE;
        }
        printf("\nchecks: ok: History of %u random picks of processes (since 0 at 3600 s = the simulation; 14 d at 3600 s and 60 s = SQL sums "
               "of minute+raw rows; 24 h at 3600, 60, 10 s = SQL sums of raw rows); Top 1 h and 24 h = SQL over raw rows; Top since 0 = the simulation, as root and as a user; "
               "WAL within its room, database + WAL within the cap, the cap never reached; ListProcesses's %" PRIu64
               " pages of %d held every one of the %" PRIu64 " processes once\n",
               checked, (uint64_t) timings[8].n, LIST_PAGE, walked);
        if (b.keep)
                printf("kept %s\n", b.path);
        return EXIT_SUCCESS;

usage:
        fprintf(stderr, "usage: store-bench [--processes N] [--long N] [--short-life MIN:MAX] [--days D] [--queries Q] "
                        "[--db PATH] [--keep] [--seed S] [--fault-time] [--max-db-size MIB]\n");
        return 2;
}

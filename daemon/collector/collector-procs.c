/* SPDX-License-Identifier: MIT */
#include "collector-procs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "array-util.h"
#include "macro.h"
#include "time-util.h"

/* Longest command line kept per process. */
#define CMDLINE_MAX 4096
/* How often processes that stopped being counted are checked against /proc. */
#define GC_INTERVAL_USEC (30 * USEC_PER_SEC)
/* uid of a process whose user cannot be known: (uid_t) -1, which no client has. */
#define UID_UNKNOWN UINT32_MAX
/* Processes whose command line and unit are read from /proc in one tick (about 10 us each): so
 * many of those first seen in it, and so many of those put off from earlier ticks. The others
 * are known from what BPF recorded until their turn comes. */
#define INFO_READS_NEW_PER_TICK 128
#define INFO_READS_LATER_PER_TICK 128

static void file_names_clear(ProcTable *t, CollectorProc *p) {
        for (size_t i = 0; i < p->n_file_names; i++)
                free(p->file_names[i].path);
        p->n_file_names = 0;
        if (t)
                name_shares_release(&t->file_names, p->file_names_uid, p->file_names_bytes);
        p->file_names_bytes = 0;
}

static void proc_free(void *p) {
        CollectorProc *proc = p;

        if (!proc)
                return;
        /* Without the table: its count of bytes is let go with it, or set back by the caller. */
        file_names_clear(NULL, proc);
        free(proc->file_names);
        process_info_done(&proc->info);
        free(proc->traps_seen);
        free(proc->traps_delta);
        free(proc->time_delta);
        free(proc->hash_seen);
        free(proc->slot_next_max);
        free(proc->hash_next_max);
        site_counts_free(proc->sites, proc->n_sites);
        if (proc->stat_fd >= 0)
                close(proc->stat_fd);
        free(proc);
}

int proc_table_init(ProcTable *t, int proc_fd, uint32_t n_slots) {
        _cleanup_free_ char *cgroup_root = NULL;
        struct rlimit nofile;

        *t = (ProcTable) {
                .proc_fd = proc_fd,
                .ticks_per_sec = sysconf(_SC_CLK_TCK),
                .n_slots = n_slots,
        };
        if (t->ticks_per_sec <= 0)
                return -EINVAL;
        t->slot_procs = calloc(n_slots, sizeof(CollectorProc *));
        if (!t->slot_procs)
                return -ENOMEM;
        /* Half of the fd limit for the stat fds of active processes, the rest for clients, the
         * database and BPF; below 2048 fds, none (read by path). */
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
            nofile.rlim_cur >= 2048)
                t->max_stat_fds = (size_t) nofile.rlim_cur / 2;
        t->attached_boottime = now_usec(CLOCK_BOOTTIME) * NSEC_PER_USEC;
        /* Without a unified hierarchy (cgroup v1 only) BPF's cgroup ids name nothing. */
        if (cgroup2_mount_find(proc_fd, &cgroup_root) >= 0)
                (void) cgroup_units_new(cgroup_root, CGROUP_UNITS_MAX_DEFAULT, CGROUP_UNITS_RESCAN_USEC, &t->cgroups);
        return 0;
}

void proc_table_done(ProcTable *t) {
        CollectorProc *p;

        t->cgroups = cgroup_units_free(t->cgroups);
        PROC_INDEX_FOREACH(&t->index, p)
                proc_free(p);
        proc_index_done(&t->index);
        for (size_t i = 0; i < t->n_dead; i++)
                proc_free(t->dead[i]);
        free(t->dead);
        free(t->touched);
        free(t->info_queue);
        proc_keys_done(&t->exits);
        free(t->samples);
        free(t->slot_procs);
        name_shares_done(&t->file_names);
}

static uint64_t start_ticks(ProcTable *t, uint64_t start_time_ns) {
        return start_time_ns / (NSEC_PER_SEC / (uint64_t) t->ticks_per_sec);
}

/* The kernel's view of a tracked process: -ESRCH when its pid is someone else's now. Reading an
 * fd kept open costs a third of open, read, close by path (bench/daemon-cost.py); fds are kept
 * while the limit leaves room for clients, else read by path. */
static int proc_table_stat(ProcTable *t, CollectorProc *p, ProcStat *ret) {
        ProcStat st;
        int r;

        if (p->stat_fd < 0 && t->n_stat_fds < t->max_stat_fds) {
                p->stat_fd = proc_open_stat(t->proc_fd, p->info.pid);
                if (p->stat_fd >= 0)
                        t->n_stat_fds++;
        }
        r = p->stat_fd >= 0 ? proc_pread_stat(p->stat_fd, &st) : proc_read_stat(t->proc_fd, p->info.pid, &st);
        if (r < 0)
                return r;
        if (st.start_ticks != start_ticks(t, p->info.start_time))
                return -ESRCH; /* the pid is someone else's now */
        *ret = st;
        return 0;
}

static void proc_close_stat(ProcTable *t, CollectorProc *p) {
        if (p->stat_fd < 0)
                return;
        close(p->stat_fd);
        p->stat_fd = -1;
        t->n_stat_fds--;
}

CollectorProc *proc_table_find(ProcTable *t, uint32_t pid, uint64_t start_time) {
        return proc_index_get(&t->index, pid, start_time);
}

/* Puts the process into this tick's samples. */
static int proc_table_touch(ProcTable *t, CollectorProc *p) {
        if (p->touched)
                return 0;
        p->touched = true;
        return array_append((void **) &t->touched, &t->n_touched, &t->touched_capacity, sizeof(p), &p);
}

int proc_table_retire(ProcTable *t, CollectorProc *p) {
        int r;

        (void) proc_index_remove(&t->index, p->info.pid, p->info.start_time);
        t->n_procs--;
        proc_close_stat(t, p);
        if (p->slot >= 0 && t->slot_procs[p->slot] == p)
                t->slot_procs[p->slot] = NULL;
        p->info.exited = true;
        r = proc_table_touch(t, p);
        if (r < 0)
                return r;
        return array_append((void **) &t->dead, &t->n_dead, &t->dead_capacity, sizeof(p), &p);
}

/* The unit and container of the cgroup BPF saw a process in, for one that /proc cannot tell of:
 * gone already, or of another pid namespace (a trapstatd in a container gets the host's pids from
 * BPF). unit: the unit BPF named itself (taken), which wins over the cgroup id's. What is not known
 * stays as it was. */
static void proc_cgroup_place(ProcTable *t, CollectorProc *p, uint64_t cgroup_id, char *unit) {
        Container *container = NULL;
        char *id_unit = NULL;
        bool found = t->cgroups && cgroup_id != 0 &&
                     cgroup_units_lookup(t->cgroups, cgroup_id, now_usec(CLOCK_MONOTONIC), &id_unit, &container) >= 0;

        if (unit)
                free(id_unit);
        else
                unit = id_unit;
        if (unit) {
                free(p->info.unit);
                p->info.unit = unit;
        }
        if (found) {
                free(p->info.container);
                p->info.container = container;
        }
}

/* The unit and container of pid (the process itself or its parent) from /proc/PID/cgroup; with
 * only_missing, only those p has none of. Both as they were when it cannot be read. */
static int proc_read_place(ProcTable *t, CollectorProc *p, uint32_t pid, bool only_missing) {
        Container *container;
        char *unit;
        int r;

        r = proc_read_cgroup(t->proc_fd, pid, &unit, &container);
        if (r < 0)
                return r;
        if (!only_missing || !p->info.unit) {
                free(p->info.unit);
                p->info.unit = TAKE_PTR(unit);
        }
        if (!only_missing || !p->info.container) {
                free(p->info.container);
                p->info.container = TAKE_PTR(container);
        }
        free(unit);
        free(container);
        return 0;
}

int proc_table_expect_exit(ProcTable *t, uint32_t pid, uint64_t start_time) {
        CollectorProc *p = proc_table_find(t, pid, start_time);

        if (p) {
                p->exiting = true;
                return 0;
        }
        return proc_keys_add(&t->exits, pid, start_time);
}

/* A child that never exec'd runs its parent's program: while it lives /proc says so, once it is
 * gone its parent is the one to ask (as ps shows a forked child with its parent's command line),
 * and it starts in its parent's unit. */
static void proc_inherit(ProcTable *t, CollectorProc *p, uint32_t ppid, uint64_t parent_start_time,
                         bool read_proc) {
        CollectorProc *parent = proc_table_find(t, ppid, parent_start_time);

        if (parent) {
                if (!p->info.cmdline && parent->info.cmdline)
                        p->info.cmdline = strdup(parent->info.cmdline);
                if (!p->info.unit && parent->info.unit)
                        p->info.unit = strdup(parent->info.unit);
                if (!p->info.container && parent->info.container &&
                    (p->info.container = malloc(sizeof(Container))))
                        *p->info.container = *parent->info.container;
                return;
        }
        if (!read_proc || ppid == 0 || !proc_is_alive(t->proc_fd, ppid, parent_start_time))
                return;
        if (!p->info.cmdline)
                (void) proc_read_cmdline(t->proc_fd, ppid, CMDLINE_MAX, &p->info.cmdline);
        if (!p->info.unit || !p->info.container)
                (void) proc_read_place(t, p, ppid, true);
}

/* One with an identity from BPF, beyond this tick's reads of /proc: named from what BPF recorded
 * (uid, name, the unit of its cgroup, its parent's command line when the parent is tracked); its
 * command line and unit are read from /proc in a later tick (proc_table_read_info()). A process
 * older than counting counts its minor/major faults from its first reading on. */
static int proc_new_later(ProcTable *t, CollectorProc *p, const struct ts_ident *id) {
        bool read_later = !p->exiting; /* one whose exit is in hand has nothing more in /proc */

        p->info.uid = id->uid;
        memcpy(p->info.comm, id->comm, sizeof(p->info.comm) - 1);
        pidns_from_ident(id, &p->info);
        proc_cgroup_place(t, p, id->cgroup_id, NULL);
        proc_inherit(t, p, id->ppid, id->parent_start_time, false);
        p->minmaj_seen.baseline = p->info.start_time < t->attached_boottime;
        p->stall_seen.baseline = p->minmaj_seen.baseline;
        if (!read_later)
                return 0;
        p->info_pending = true;
        return array_append((void **) &t->info_queue, &t->n_info_queue, &t->info_queue_capacity, sizeof(p), &p);
}

/* One read from /proc now, where it is this process; else named from BPF's record. */
static void proc_new_now(ProcTable *t, CollectorProc *p, const struct ts_ident *id) {
        uint32_t pid = p->info.pid;
        bool known = id && id->start_time == p->info.start_time, alive;
        ProcStat st;

        alive = proc_table_stat(t, p, &st) >= 0;
        if (known) {
                p->info.uid = id->uid;
                memcpy(p->info.comm, id->comm, sizeof(p->info.comm) - 1);
                pidns_from_ident(id, &p->info);
        } else if (alive) {
                memcpy(p->info.comm, st.comm, sizeof(p->info.comm));
                (void) proc_read_uid(t->proc_fd, pid, &p->info.uid);
        }
        /* /proc/PID/ is read only while it is this process, not one that got its pid since. */
        if (alive) {
                (void) proc_read_cmdline(t->proc_fd, pid, CMDLINE_MAX, &p->info.cmdline);
                (void) proc_read_place(t, p, pid, false);
        } else if (known)
                proc_cgroup_place(t, p, id->cgroup_id, NULL);
        if (known && (!p->info.cmdline || !p->info.unit))
                proc_inherit(t, p, id->ppid, id->parent_start_time, true);

        /* A process started after counting began has all of its min_flt/maj_flt in our window;
         * for an older one only what comes after the first reading counts. */
        if (p->info.start_time < t->attached_boottime) {
                /* Its delays from its first record on (/proc/PID/stat has none). */
                p->stall_seen.baseline = true;
                if (alive) {
                        p->minmaj_seen.minflt = st.minflt;
                        p->minmaj_seen.majflt = st.majflt;
                } else
                        p->minmaj_seen.baseline = true; /* its exit's figures */
        }
}

/* A process seen for the first time. id is what BPF recorded when the process was first counted,
 * so uid and comm are known however short its life; it is NULL only for an entry that carries
 * none (a per-CPU hash entry read while being created): then /proc tells, and a process already
 * gone is stored with an unknown user, never as root. */
static int proc_new(ProcTable *t, uint32_t pid, uint64_t start_time, const struct ts_ident *id, uint64_t now,
                    CollectorProc **ret) {
        CollectorProc *p;
        int r = 0;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->slot = -1;
        p->stat_fd = -1;
        p->info.pid = pid;
        p->info.start_time = start_time;
        p->info.uid = UID_UNKNOWN;
        p->info.first_seen_usec = now;
        p->last_counted_usec = now;
        p->exiting = proc_keys_contain(&t->exits, pid, start_time);
        /* A process with BPF's record waits for its reads of /proc past the tick's share; one
         * whose exit is in hand is named from that record alone. */
        if (id && id->start_time == start_time && (t->info_reads_new == 0 || p->exiting))
                r = proc_new_later(t, p, id);
        else {
                if (t->info_reads_new > 0)
                        t->info_reads_new--;
                proc_new_now(t, p, id);
        }
        /* Not indexed: the info queue lets go of it too (appended last). */
        if (r >= 0 && (r = proc_index_put(&t->index, pid, start_time, p)) < 0 && p->info_pending)
                t->n_info_queue--;
        if (r < 0) {
                proc_close_stat(t, p);
                proc_free(p);
                return r;
        }
        t->n_procs++;
        *ret = p;
        return 0;
}

bool proc_table_read_info(ProcTable *t, size_t max) {
        size_t reads = 0, i = t->info_queue_head;

        max = MIN(max, t->info_reads_later);
        for (; i < t->n_info_queue && reads < max; i++) {
                CollectorProc *p = t->info_queue[i];
                char *cmdline = NULL;

                /* Exec'd since (its exec read them), or gone (what BPF recorded stays). */
                if (!p->info_pending)
                        continue;
                p->info_pending = false;
                if (p->exiting)
                        continue; /* nothing more in /proc: what BPF recorded stays */
                reads++;
                if (!proc_is_alive(t->proc_fd, p->info.pid, p->info.start_time))
                        continue;
                if (proc_read_cmdline(t->proc_fd, p->info.pid, CMDLINE_MAX, &cmdline) >= 0) {
                        free(p->info.cmdline);
                        p->info.cmdline = cmdline;
                }
                (void) proc_read_place(t, p, p->info.pid, false);
                (void) proc_table_touch(t, p);
        }
        t->info_reads_later -= reads;
        t->info_queue_head = i;
        if (t->info_queue_head == t->n_info_queue)
                t->info_queue_head = t->n_info_queue = 0;
        return t->info_reads_later == 0 || t->n_info_queue == 0;
}

/* Before the dead are freed: the queue lets go of them. */
static void info_queue_forget_dead(ProcTable *t) {
        size_t m = 0;

        if (t->n_dead == 0)
                return;
        for (size_t i = t->info_queue_head; i < t->n_info_queue; i++)
                if (!t->info_queue[i]->info.exited && t->info_queue[i]->info_pending)
                        t->info_queue[m++] = t->info_queue[i];
        t->info_queue_head = 0;
        t->n_info_queue = m;
}

int proc_table_get(ProcTable *t, uint32_t pid, uint64_t start_time, const struct ts_ident *id, uint64_t now,
                   CollectorProc **ret) {
        CollectorProc *p = proc_table_find(t, pid, start_time);

        if (p) {
                /* First seen where no identity was at hand (a site, a hash entry being made). */
                if (p->info.n_pidns == 0 && id && id->start_time == start_time)
                        pidns_from_ident(id, &p->info);
                *ret = p;
                return 0;
        }
        return proc_new(t, pid, start_time, id, now, ret);
}

void proc_table_clear_slot(ProcTable *t, uint32_t slot) {
        if (t->slot_procs[slot])
                t->slot_procs[slot]->slot = -1;
        t->slot_procs[slot] = NULL;
}

void proc_table_set_slot(ProcTable *t, uint32_t slot, CollectorProc *p) {
        proc_table_clear_slot(t, slot);
        t->slot_procs[slot] = p;
        p->slot = (int) slot;
        p->slot_seen = (ProcCounters) {};
}

int proc_table_count_faults(ProcTable *t, CollectorProc *p, const ProcCounters *counters, ProcCounters *seen,
                            uint64_t now) {
        FaultTime time;
        Faults d = counters_delta(counters, seen, &time);

        /* A fault counted at its entry in one tick may complete in the next. */
        if (faults_is_zero(&d) && fault_time_is_zero(&time))
                return 0;
        faults_add(&p->delta, &d);
        if (!fault_time_is_zero(&time)) {
                if (!p->time_delta && !(p->time_delta = calloc(1, sizeof(*p->time_delta))))
                        return -ENOMEM;
                fault_time_add(p->time_delta, &time);
        }
        p->last_counted_usec = now;
        return proc_table_touch(t, p);
}

int proc_table_count_site(ProcTable *t, CollectorProc *p, SiteCount *delta, uint64_t now) {
        int k = array_append((void **) &p->sites, &p->n_sites, &p->sites_capacity, sizeof(*delta), delta);

        if (k < 0) {
                site_count_done(delta);
                return k;
        }
        p->last_counted_usec = now;
        return proc_table_touch(t, p);
}

int proc_table_count_traps(ProcTable *t, CollectorProc *p, const struct ts_traps *traps, uint64_t now) {
        Traps cur;

        if ((!p->traps_seen && !(p->traps_seen = calloc(1, sizeof(Traps)))) ||
            (!p->traps_delta && !(p->traps_delta = calloc(1, sizeof(Traps)))))
                return -ENOMEM;
        traps_from_bpf(traps, &cur);
        if (!traps_account(&cur, p->traps_seen, p->traps_delta))
                return 0;
        p->has_traps_delta = true;
        p->last_counted_usec = now;
        return proc_table_touch(t, p);
}

/* Returns whether name or user changed. */
static bool proc_set_ident(CollectorProc *p, uint32_t uid, const char *comm) {
        char name[COMM_MAX] = {};
        bool changed;

        memcpy(name, comm, COMM_MAX - 1);
        changed = p->info.uid != uid || strcmp(p->info.comm, name) != 0;
        p->info.uid = uid;
        memcpy(p->info.comm, name, COMM_MAX);
        return changed;
}

int proc_table_update_stat(ProcTable *t, CollectorProc *p, uint32_t uid, const char *comm, uint64_t minflt,
                           uint64_t majflt) {
        bool changed;

        changed = proc_set_ident(p, uid, comm);
        changed = minmaj_account(&p->minmaj_seen, minflt, majflt, &p->delta) || changed;
        return changed ? proc_table_touch(t, p) : 0;
}

int proc_table_update(ProcTable *t, CollectorProc *p, const struct ts_task_record *rec) {
        bool changed = t->stall_counted && stall_account(&p->stall_seen, &rec->delays, &p->stall_delta);
        int r = proc_table_update_stat(t, p, rec->uid, rec->comm, rec->min_flt, rec->maj_flt);

        return r == 0 && changed ? proc_table_touch(t, p) : r;
}

const ProcFileName *proc_table_file_name(const CollectorProc *p, uint32_t dev, uint64_t ino) {
        /* Linear: a process's sites are in a handful of files, and there are at most
         * PROC_FILE_NAMES_MAX. */
        for (size_t i = 0; i < p->n_file_names; i++)
                if (p->file_names[i].dev == dev && p->file_names[i].ino == ino)
                        return &p->file_names[i];
        return NULL;
}

int proc_table_add_file_name(ProcTable *t, CollectorProc *p, const ProcFileName *name) {
        size_t bytes = sizeof(ProcFileName) + (name->path ? strlen(name->path) + 1 : 0);
        ProcFileName copy = *name;
        int r;

        if (proc_table_file_name(p, name->dev, name->ino))
                return -EEXIST;
        uint32_t uid = p->n_file_names > 0 ? p->file_names_uid : p->info.uid;

        if (p->n_file_names >= PROC_FILE_NAMES_MAX)
                return -E2BIG;
        /* One user's processes cannot take the names of another's (root keeps a reserve). */
        r = name_shares_charge(&t->file_names, uid, bytes, PROC_FILE_NAMES_BYTES_MAX);
        if (r < 0)
                return r;
        if (name->path && !(copy.path = strdup(name->path))) {
                name_shares_release(&t->file_names, uid, bytes);
                return -ENOMEM;
        }
        r = array_append((void **) &p->file_names, &p->n_file_names, &p->file_names_capacity, sizeof(copy), &copy);
        if (r < 0) {
                free(copy.path);
                name_shares_release(&t->file_names, uid, bytes);
                return r;
        }
        p->file_names_uid = uid;
        p->file_names_bytes += bytes;
        return 0;
}

int proc_table_exec(ProcTable *t, CollectorProc *p, LifecycleEvent *e) {
        char *cmdline = NULL;
        ProcStat st;
        /* As proc_new() asks: through the process's stat fd where one is kept open; one whose
         * exit is in hand has only the event's copies left. */
        bool alive = !p->exiting && proc_table_stat(t, p, &st) >= 0;

        /* Another program maps other files: what its maps say is read anew. */
        file_names_clear(t, p);
        p->info_pending = false; /* read here */
        p->maps_error = 0;

        /* Counting goes on under the new name. /proc has the whole command line while the
         * process lives; the event's copy is cut at TS_ARGS_LEN but survives a process that is
         * already gone. */
        memcpy(p->info.comm, e->comm, sizeof(p->info.comm));
        /* Changing user and then exec'ing is how processes get their user (su, setpriv, service
         * managers): the uid seen at the first fault may be the launcher's. */
        p->info.uid = e->uid;
        if (!alive || proc_read_cmdline(t->proc_fd, p->info.pid, CMDLINE_MAX, &cmdline) < 0)
                cmdline = TAKE_PTR(e->cmdline);
        free(p->info.cmdline);
        p->info.cmdline = cmdline;
        /* So is the unit: a service manager forks, moves the child into the unit's cgroup and
         * then execs, and the child may have faulted before it moved. A process already gone
         * keeps the unit it had, unless BPF named its cgroup's at the exec (also that of a
         * process in another pid namespace, whose /proc/PID is not here), or, where BPF found
         * no unit within the levels it walks, the cgroup's id names one. */
        if (alive)
                (void) proc_read_place(t, p, p->info.pid, false);
        else
                proc_cgroup_place(t, p, e->cgroup_id, TAKE_PTR(e->unit));
        return proc_table_touch(t, p);
}

int proc_table_exit(ProcTable *t, CollectorProc *p, const LifecycleEvent *e) {
        /* A dead process counts no more: the event has the final figures, name and user. */
        (void) minmaj_account(&p->minmaj_seen, e->min_flt, e->maj_flt, &p->delta);
        if (t->stall_counted)
                (void) stall_account(&p->stall_seen, &e->delays, &p->stall_delta);
        (void) proc_set_ident(p, e->uid, e->comm);
        return proc_table_retire(t, p);
}

size_t proc_table_next_active(ProcTable *t, CollectorProc **ret, size_t max, bool *ret_done) {
        size_t n = 0;

        for (; t->minmaj_next < t->n_touched && n < max; t->minmaj_next++) {
                CollectorProc *p = t->touched[t->minmaj_next];

                /* Its exit event has the final figures: a storm's short processes are not read
                 * (open, read, close) only to be retired in the same tick. */
                if (!p->info.exited && !p->exiting)
                        ret[n++] = p;
        }
        *ret_done = t->minmaj_next == t->n_touched;
        return n;
}

bool proc_table_read_minmaj(ProcTable *t, size_t max, uint64_t *records) {
        CollectorProc *procs[max];
        bool done;
        size_t n = proc_table_next_active(t, procs, max, &done);

        for (size_t i = 0; i < n; i++) {
                ProcStat st;

                if (proc_table_stat(t, procs[i], &st) < 0)
                        continue;
                (void) minmaj_account(&procs[i]->minmaj_seen, st.minflt, st.majflt, &procs[i]->delta);
                memcpy(procs[i]->info.comm, st.comm, sizeof(procs[i]->info.comm));
        }
        *records += n;
        return done;
}

typedef struct GcWalk {
        ProcTable *t;
        uint64_t now, sweep, sweep_started;
        CollectorProc **victims;
        size_t n, capacity;
        int error;
} GcWalk;

static void gc_visit(CollectorProc *p, GcWalk *w) {
        ProcStat st;
        int r;

        /* Counted lately: its exit event may still come, after counts this tick's drain did not
         * see yet, which retiring it now would lose. */
        if (w->now - p->last_counted_usec < GC_INTERVAL_USEC)
                return;
        if (w->sweep) {
                proc_close_stat(w->t, p);
                if (p->swept == w->sweep || p->info.first_seen_usec > w->sweep_started)
                        return;
        }
        if (proc_table_stat(w->t, p, &st) >= 0)
                return;
        r = array_append((void **) &w->victims, &w->n, &w->capacity, sizeof(p), &p);
        if (r < 0)
                w->error = r;
}

int proc_table_vanished(ProcTable *t, uint64_t now, uint64_t sweep, uint64_t sweep_started, CollectorProc ***ret,
                        size_t *ret_n) {
        GcWalk w = { .t = t, .now = now, .sweep = sweep, .sweep_started = sweep_started };
        CollectorProc *p;

        *ret = NULL;
        *ret_n = 0;
        if (!sweep && now - t->last_gc_usec < GC_INTERVAL_USEC)
                return 0;
        t->last_gc_usec = now;
        /* Collected here, retired by the caller: retiring changes the index being walked. */
        PROC_INDEX_FOREACH(&t->index, p)
                gc_visit(p, &w);
        *ret = w.victims;
        *ret_n = w.n;
        return w.error;
}

size_t proc_table_count_visible(ProcTable *t, int64_t uid, uint32_t pidns) {
        const CollectorProc *p;
        uint32_t pid;
        size_t n = 0;

        PROC_INDEX_FOREACH(&t->index, p)
                n += (uid < 0 || p->info.uid == uid) && (!pidns || process_info_pid_in(&p->info, pidns, &pid));
        return n;
}

void proc_table_begin_tick(ProcTable *t) {
        t->info_reads_new = INFO_READS_NEW_PER_TICK;
        t->info_reads_later = INFO_READS_LATER_PER_TICK;
        t->minmaj_next = 0;
        proc_keys_clear(&t->exits);
        info_queue_forget_dead(t);
        for (size_t i = 0; i < t->n_touched; i++) {
                if (t->touched[i]->has_traps_delta)
                        *t->touched[i]->traps_delta = (Traps) {};
                t->touched[i]->has_traps_delta = false;
                for (size_t j = 0; j < t->touched[i]->n_sites; j++)
                        site_count_done(&t->touched[i]->sites[j]);
                t->touched[i]->n_sites = 0;
        }
        t->n_touched = 0;
        for (size_t i = 0; i < t->n_dead; i++) {
                name_shares_release(&t->file_names, t->dead[i]->file_names_uid, t->dead[i]->file_names_bytes);
                proc_free(t->dead[i]);
        }
        t->n_dead = 0;
}

int proc_table_samples(ProcTable *t, uint64_t now, const ProcessSample **ret, size_t *ret_n) {
        size_t n = 0;
        int r;

        r = array_grow((void **) &t->samples, &t->samples_capacity, 0, t->n_touched, sizeof(*t->samples));
        if (r < 0)
                return r;
        for (size_t i = 0; i < t->n_touched; i++) {
                CollectorProc *p = t->touched[i];

                p->info.last_seen_usec = now;
                t->samples[n++] = (ProcessSample) {
                        .process = &p->info,
                        .delta = p->delta,
                        .fault_time = p->time_delta ? *p->time_delta : (FaultTime) {},
                        .stall = p->stall_delta,
                        .traps = p->has_traps_delta ? p->traps_delta : NULL,
                        .sites = p->sites,
                        .n_sites = p->n_sites,
                };
                p->delta = (Faults) {};
                p->stall_delta = (Stall) {};
                if (p->time_delta)
                        *p->time_delta = (FaultTime) {};
                p->touched = false;
        }
        *ret = t->samples;
        *ret_n = n;
        return 0;
}

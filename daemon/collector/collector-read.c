/* SPDX-License-Identifier: MIT */
#include "collector-read.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array-util.h"
#include "file-util.h"
#include "macro.h"
#include "trapstat.skel.h"

/* Hash entries read per bpf_map_lookup_batch() call. */
#define BATCH_ENTRIES 256
/* The task iterator gives at most a record per task, and a task has a pid: PID_MAX_LIMIT. */
#define TASK_RECORDS_MAX ((size_t) 4194304)

int reader_init(CollectorReader *r, CollectorBpf *bpf, ProcTable *procs) {
        size_t n_cpus = (size_t) bpf->n_cpus;

        *r = (CollectorReader) { .bpf = bpf, .procs = procs };
        r->owners = calloc(bpf->n_slots, sizeof(uint32_t));
        r->batch_keys = calloc(BATCH_ENTRIES, sizeof(struct ts_proc_key));
        /* Per-CPU hash values come n_cpus at a time; trap values one at a time. */
        r->batch_values = calloc(BATCH_ENTRIES, MAX(sizeof(struct ts_proc) * n_cpus, sizeof(struct ts_traps)));
        if (!r->owners || !r->batch_keys || !r->batch_values)
                return -ENOMEM;
        return 0;
}

static void events_clear(CollectorReader *r) {
        for (size_t i = 0; i < r->n_events; i++)
                lifecycle_event_done(&r->events[i]);
        r->n_events = 0;
}

void reader_done(CollectorReader *r) {
        events_clear(r);
        free(r->events);
        free(r->records);
        free(r->owners);
        free(r->batch_keys);
        free(r->batch_values);
}

int reader_take_event(void *userdata, void *data, size_t size) {
        CollectorReader *r = userdata;
        LifecycleEvent e;
        int k;

        /* One user space does not know is skipped, not an error: the rest still count. */
        if (lifecycle_event_decode(data, size, &e) < 0)
                return 0;
        k = array_append((void **) &r->events, &r->n_events, &r->events_capacity, sizeof(e), &e);
        if (k < 0)
                lifecycle_event_done(&e);
        return k;
}

void reader_free_slot(CollectorReader *r, uint32_t slot) {
        collector_bpf_release_slot(r->bpf, slot);
        proc_table_clear_slot(r->procs, slot);
}

static bool owner_is_process(uint32_t owner) {
        return owner != TS_OWNER_FREE && owner != TS_OWNER_CLAIMING;
}

/* A process's per-CPU counters summed: n_cpus of them, the first at first, each stride bytes after
 * the one before. *next_max is the process's per-CPU state for the longest fault
 * (counters_sum()), allocated at the first read. */
static int percpu_sum(CollectorReader *r, const struct ts_counters *first, size_t stride, uint64_t **next_max,
                      struct ts_counters *ret) {
        struct ts_counters sum = {}, v;

        if (!*next_max && !(*next_max = calloc((size_t) r->bpf->n_cpus, sizeof(uint64_t))))
                return -ENOMEM;
        for (int cpu = 0; cpu < r->bpf->n_cpus; cpu++) {
                counters_load((const struct ts_counters *) ((const char *) first + (size_t) cpu * stride), &v);
                counters_sum(&v, r->fault_tick, &(*next_max)[cpu], &sum);
        }
        *ret = sum;
        return 0;
}

/* One owned slot. A slot whose owner exited is freed once drained: no BPF program writes it
 * meanwhile, its owner being marked exited. */
static int drain_slot(CollectorReader *r, uint32_t slot, uint32_t owner, uint64_t now) {
        CollectorProc *p = r->procs->slot_procs[slot];
        uint32_t tgid = owner & ~TS_OWNER_EXITED;
        struct ts_counters sum;
        int k;

        if (!p || p->info.pid != tgid) {
                /* Claimed since the last tick: the identity was written before the owner, which
                 * was read with acquire semantics. */
                struct ts_ident id = r->bpf->ident_map[slot];

                proc_table_clear_slot(r->procs, slot);
                k = proc_table_get(r->procs, tgid, id.start_time, &id, now, &p);
                if (k < 0)
                        return k;
                proc_table_set_slot(r->procs, slot, p);
                /* Its counters start from zero in the slot: so do the longest faults seen. */
                if (p->slot_next_max)
                        memset(p->slot_next_max, 0, (size_t) r->bpf->n_cpus * sizeof(uint64_t));
        }
        k = percpu_sum(r, collector_bpf_slot_counters(r->bpf, 0, slot),
                       (size_t) r->bpf->n_slots * sizeof(struct ts_counters), &p->slot_next_max, &sum);
        if (k < 0)
                return k;
        k = proc_table_count_faults(r->procs, p, &sum, &p->slot_seen, now);
        if (k < 0)
                return k;
        if (owner & TS_OWNER_EXITED)
                reader_free_slot(r, slot);
        return 0;
}

/* Owners and counters are read in place, without a system call. */
static int drain_slots(CollectorReader *r, uint64_t now) {
        uint32_t n_slots = r->bpf->n_slots;
        int k;

        for (uint32_t slot = 0; slot < n_slots; slot++)
                r->owners[slot] = __atomic_load_n(&r->bpf->owner_map[slot].tgid, __ATOMIC_ACQUIRE);
        for (uint32_t slot = 0; slot < n_slots; slot++) {
                if (!owner_is_process(r->owners[slot]))
                        continue;
                k = drain_slot(r, slot, r->owners[slot], now);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* Reads a hash keyed by process in batches of BATCH_ENTRIES and hands each entry to fn. */
static int for_each_entry(CollectorReader *r, struct bpf_map *map, size_t value_size,
                          int (*fn)(CollectorReader *r, const struct ts_proc_key *key, const void *value, uint64_t now),
                          uint64_t now) {
        struct ts_proc_key in_batch, out_batch;
        bool first = true, done = false;
        int k;

        while (!done) {
                __u32 count = BATCH_ENTRIES;

                k = bpf_map_lookup_batch(bpf_map__fd(map), first ? NULL : &in_batch, &out_batch, r->batch_keys,
                                         r->batch_values, &count, NULL);
                if (k < 0) {
                        /* ENOENT: this was the last batch (count may still be > 0). */
                        if (errno != ENOENT)
                                return -errno;
                        done = true;
                }
                for (__u32 i = 0; i < count; i++) {
                        k = fn(r, &r->batch_keys[i], (const char *) r->batch_values + i * value_size, now);
                        if (k < 0)
                                return k;
                }
                in_batch = out_batch;
                first = false;
        }
        return 0;
}

/* One entry of the per-CPU fallback hash: n_cpus values. */
static int drain_hash_entry(CollectorReader *r, const struct ts_proc_key *key, const void *value, uint64_t now) {
        const struct ts_proc *v = value;
        const struct ts_ident *id = NULL;
        struct ts_counters sum = {};
        CollectorProc *p;
        int k;

        for (int cpu = 0; cpu < r->bpf->n_cpus; cpu++)
                if (!id && v[cpu].id.start_time)
                        id = &v[cpu].id;
        k = proc_table_get(r->procs, key->tgid, key->start_time, id, now, &p);
        if (k < 0)
                return k;
        k = percpu_sum(r, &v[0].c, sizeof(*v), &p->hash_next_max, &sum);
        if (k < 0)
                return k;
        return proc_table_count_faults(r->procs, p, &sum, &p->hash_seen, now);
}

static int drain_traps_entry(CollectorReader *r, const struct ts_proc_key *key, const void *value, uint64_t now) {
        CollectorProc *p;
        int k;

        k = proc_table_get(r->procs, key->tgid, key->start_time, NULL, now, &p);
        if (k < 0)
                return k;
        return proc_table_count_traps(r->procs, p, value, now);
}

int reader_drain_maps(CollectorReader *r, uint64_t now) {
        struct trapstat_bpf *skel = r->bpf->skel;
        int k;

        /* The tick that ends: its longest faults are read while BPF keeps the next one's apart. */
        r->fault_tick = __atomic_load_n(&skel->bss->fault_tick, __ATOMIC_RELAXED);
        __atomic_store_n(&skel->bss->fault_tick, r->fault_tick + 1, __ATOMIC_SEQ_CST);
        if ((k = drain_slots(r, now)) < 0 ||
            (k = for_each_entry(r, skel->maps.processes, sizeof(struct ts_proc) * (size_t) r->bpf->n_cpus,
                                drain_hash_entry, now)) < 0 ||
            (k = for_each_entry(r, skel->maps.traps, sizeof(struct ts_traps), drain_traps_entry, now)) < 0)
                return k;
        return 0;
}

/* All of it is read in one pass over the tasks. */
int reader_read_tasks(CollectorReader *r) {
        _cleanup_close_ int fd = -1;
        size_t capacity = r->records_capacity * sizeof(*r->records), used = 0, n;
        char *buf = (char *) r->records;
        int k;

        fd = bpf_iter_create(bpf_link__fd(r->bpf->iter_link));
        if (fd < 0)
                return -errno;
        /* The buffer is kept for the next tick's read. */
        k = read_full_fd(fd, TASK_RECORDS_MAX * sizeof(*r->records), 0, &buf, &capacity, &used);
        r->records = (struct ts_task_record *) buf;
        r->records_capacity = capacity / sizeof(*r->records);
        if (k < 0)
                return k;

        n = used / sizeof(*r->records);
        for (size_t i = 0; i < n; i++) {
                const struct ts_task_record *rec = &r->records[i];
                CollectorProc *p = proc_table_find(r->procs, rec->tgid, rec->start_time);

                /* Not drained yet (first counted since): next tick. */
                if (!p)
                        continue;
                k = proc_table_update(r->procs, p, rec->uid, rec->comm, rec->min_flt, rec->maj_flt);
                if (k < 0)
                        return k;
        }
        return 0;
}

int reader_apply_events(CollectorReader *r, size_t n_before_drain) {
        size_t kept = 0;
        int k = 0;

        for (size_t i = 0; i < r->n_events; i++) {
                LifecycleEvent *e = &r->events[i];
                CollectorProc *p;

                if (e->type != TS_EVENT_EXEC && i >= n_before_drain) {
                        /* An exit read after the drain: counts of the process may have come
                         * between the two. It waits for the next tick's drain. */
                        r->events[kept++] = *e;
                        continue;
                }
                p = k >= 0 ? proc_table_find(r->procs, e->tgid, e->start_time) : NULL;
                if (p && e->type == TS_EVENT_EXEC)
                        k = proc_table_exec(r->procs, p, e);
                else if (p) {
                        /* Exit. The maps were drained after this event was read, and a dead
                         * process counts no more: its counts are complete. Remove its entries so
                         * the maps stay bounded (its slot was freed when drained, being marked
                         * exited). */
                        collector_bpf_forget(r->bpf, e->tgid, e->start_time);
                        k = proc_table_exit(r->procs, p, e);
                }
                lifecycle_event_done(e);
        }
        r->n_events = kept;
        return k;
}

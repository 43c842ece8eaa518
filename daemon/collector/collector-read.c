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
#include "macro.h"
#include "time-util.h"
#include "trapstat.skel.h"

/* Hash entries read per bpf_map_lookup_batch() call. */
#define BATCH_ENTRIES 256
/* The task iterator's sweep: every tracked process once in this long, a share of them each tick,
 * at least SWEEP_MIN_RECORDS. */
#define SWEEP_INTERVAL_USEC (30 * USEC_PER_SEC)
#define SWEEP_MIN_RECORDS ((size_t) 256)

int reader_init(CollectorReader *r, CollectorBpf *bpf, ProcTable *procs, uint64_t slot_idle_usec) {
        size_t n_cpus = (size_t) bpf->n_cpus;

        *r = (CollectorReader) { .bpf = bpf, .procs = procs, .slot_idle_usec = slot_idle_usec };
        /* Room in the fallback hash for a quarter of its capacity besides the tracked processes:
         * every owner that gives up its slot takes an entry there, and new processes whose slots
         * are taken need theirs. */
        r->slot_take_max_tracked = (size_t) bpf_map__max_entries(bpf->skel->maps.processes) / 4 * 3;
        r->sweep_fd = -1;
        r->owners = calloc(bpf->n_slots, sizeof(uint32_t));
        r->owners_read = calloc(bpf->n_slots, sizeof(uint32_t));
        r->dirty = calloc(2 * (((size_t) bpf->n_slots + 63) / 64), sizeof(uint64_t));
        r->batch_keys = calloc(BATCH_ENTRIES, sizeof(struct ts_proc_key));
        /* Per-CPU hash values come n_cpus at a time; trap values one at a time. */
        r->batch_values = calloc(BATCH_ENTRIES, MAX(sizeof(struct ts_proc) * n_cpus, sizeof(struct ts_traps)));
        r->active_records = calloc(TS_TASK_READS, sizeof(struct ts_task_record));
        if (!r->owners || !r->owners_read || !r->dirty || !r->batch_keys || !r->batch_values || !r->active_records)
                return -ENOMEM;
        return 0;
}

static void events_clear(CollectorReader *r) {
        /* With reader_apply_events() under way, those between the kept and the next were let go. */
        for (size_t i = 0; i < r->n_events; i++)
                if (i < r->apply_kept || i >= r->apply_next)
                        lifecycle_event_done(&r->events[i]);
        r->n_events = r->apply_kept = r->apply_next = 0;
}

void reader_done(CollectorReader *r) {
        events_clear(r);
        free(r->events);
        free(r->records);
        free(r->active_records);
        free(r->hash_keys);
        if (r->sweep_fd >= 0)
                close(r->sweep_fd);
        free(r->owners);
        free(r->owners_read);
        free(r->dirty);
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
        r->owners_read[slot] = TS_OWNER_FREE;
        proc_table_clear_slot(r->procs, slot);
}

static bool owner_is_process(uint32_t owner) {
        return owner != TS_OWNER_FREE && owner != TS_OWNER_CLAIMING;
}

/* Where a process's counters and fault time are, CPU by CPU: CPU 0's at counts and at times (NULL:
 * no fault time), each next CPU's stride bytes (times_stride for the times) after the one before. */
typedef struct PerCpu {
        const void *counts, *times;
        size_t stride, times_stride;
} PerCpu;

/* A process's per-CPU counters and fault time summed. *next_max is the process's per-CPU state for
 * the longest fault (counters_sum()), allocated at the first read. */
static int percpu_sum(CollectorReader *r, PerCpu at, uint64_t **next_max, ProcCounters *ret) {
        ProcCounters sum = {}, v;

        if (!*next_max && !(*next_max = calloc((size_t) r->bpf->n_cpus, sizeof(uint64_t))))
                return -ENOMEM;
        for (size_t cpu = 0; cpu < (size_t) r->bpf->n_cpus; cpu++) {
                counters_load((const struct ts_counters *) ((const char *) at.counts + cpu * at.stride),
                              at.times ? (const struct ts_fault_times *) ((const char *) at.times + cpu * at.times_stride)
                                       : NULL,
                              &v);
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
        ProcCounters sum;
        int k;

        r->tick_records++;
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
        } else if (p->slot_next_max && p->slot_read_tick + 1 != r->fault_tick)
                /* Not read in the last tick: what it saw of that tick's faults was reported then,
                 * and none completed since (they would have marked the slot changed). */
                memset(p->slot_next_max, 0, (size_t) r->bpf->n_cpus * sizeof(uint64_t));
        p->slot_read_tick = r->fault_tick;
        k = percpu_sum(r,
                       (PerCpu) { .counts = collector_bpf_slot_counters(r->bpf, 0, slot),
                                  .times = collector_bpf_slot_times(r->bpf, 0, slot),
                                  .stride = (size_t) r->bpf->n_slots * sizeof(struct ts_counters),
                                  .times_stride = (size_t) r->bpf->n_slots * sizeof(struct ts_fault_times) },
                       &p->slot_next_max, &sum);
        if (k < 0)
                return k;
        k = proc_table_count_faults(r->procs, p, &sum, &p->slot_seen, now);
        if (k < 0)
                return k;
        if (owner & TS_OWNER_EXITED)
                reader_free_slot(r, slot);
        return 0;
}

static bool bit_test(const uint64_t *bits, uint32_t i) {
        return bits[i / 64] & (UINT64_C(1) << (i % 64));
}

/* The slots BPF marked changed since the last tick (slot_dirty), into the first half of r->dirty,
 * and those of the last tick kept in its second half: a mark may be seen before the count it
 * follows. */
static void take_dirty(CollectorReader *r) {
        size_t n_words = ((size_t) r->bpf->n_slots + 63) / 64;
        uint32_t n = collector_bpf_dirty_words(r->bpf), mask = r->bpf->n_slots - 1;
        uint64_t *map = r->bpf->dirty_map, *last = r->dirty + n_words;

        memcpy(last, r->dirty, n_words * sizeof(uint64_t));
        memset(r->dirty, 0, n_words * sizeof(uint64_t));
        for (uint32_t w = 0; w < n; w++) {
                uint64_t bits;

                if (!__atomic_load_n(&map[w], __ATOMIC_RELAXED))
                        continue;
                bits = __atomic_exchange_n(&map[w], 0, __ATOMIC_ACQ_REL);
                for (; bits; bits &= bits - 1) {
                        uint32_t slot = (uint32_t) (((uint64_t) w * 64 + (uint64_t) __builtin_ctzll(bits)) & mask);

                        r->dirty[slot / 64] |= UINT64_C(1) << (slot % 64);
                }
        }
}

/* Whether a slot is to be read: counted into since the last tick or the one before, exited, or
 * owned by another process than at the last tick (or never read since it was claimed). From
 * arrays alone: the process table's entries are not touched for the slots that did not change. */
static bool slot_changed(CollectorReader *r, uint32_t slot, uint32_t owner) {
        size_t n_words = ((size_t) r->bpf->n_slots + 63) / 64;

        return bit_test(r->dirty, slot) || bit_test(r->dirty + n_words, slot) || (owner & TS_OWNER_EXITED) ||
               owner != r->owners_read[slot];
}

/* The drain's entries read between looks at the clock. */
#define DRAIN_PIECE 16

static bool past(uint64_t deadline_usec) {
        return deadline_usec != UINT64_MAX && now_usec(CLOCK_MONOTONIC) >= deadline_usec;
}

/* Owners and counters are read in place, without a system call; the counters only of the slots
 * that changed. The owners and the marks are taken at once (here), the slots read in pieces
 * (drain_slots()). */
static void take_slots(CollectorReader *r) {
        take_dirty(r);
        for (uint32_t slot = 0; slot < r->bpf->n_slots; slot++)
                r->owners[slot] = __atomic_load_n(&r->bpf->owner_map[slot].tgid, __ATOMIC_ACQUIRE);
        r->drain_slot_next = 0;
}

/* Returns 1 when every slot is read, 0 when the deadline came first. */
static int drain_slots(CollectorReader *r, uint64_t now, uint64_t deadline_usec) {
        uint32_t n_slots = r->bpf->n_slots;
        unsigned read = 0;
        int k;

        for (; r->drain_slot_next < n_slots; r->drain_slot_next++) {
                uint32_t slot = r->drain_slot_next;

                if (!owner_is_process(r->owners[slot]) || !slot_changed(r, slot, r->owners[slot]))
                        continue;
                if (++read % DRAIN_PIECE == 0 && past(deadline_usec))
                        return 0;
                /* Read under this owner from now on: it changes only with a claim or an exit. */
                r->owners_read[slot] = r->owners[slot];
                k = drain_slot(r, slot, r->owners[slot], now);
                if (k < 0)
                        return k;
        }
        return 1;
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
                r->tick_records += count;
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

/* Slots taken from idle owners, at most this many a tick: each is a hash insert by system call. */
#define SLOTS_TAKEN_PER_TICK 64

/* A process counts in its slot only while no other process owns it; else in the fallback hash,
 * whose entries cost a system call each to read, in each tick they are counted into. A slot owner
 * that has not counted for slot_idle_usec gives its slot up to such a process p that counts
 * (collector_bpf_take_slot()); it counts in the hash from then on, should it wake. So the
 * processes that count each tick hold the slots, whichever started first, and the hash holds
 * those that sleep. p claims the slot at its first fault after the next drain frees it. */
static int take_idle_slot(CollectorReader *r, CollectorProc *p, uint64_t now) {
        uint32_t slot = p->info.pid & (r->bpf->n_slots - 1), owner = r->owners[slot];
        CollectorProc *o = r->procs->slot_procs[slot];
        int k;

        /* Counted in this tick (not only read: a whole read of the hash reads the idle too), and
         * not on its way out. */
        if (p->last_counted_usec != now || p->exiting || r->slots_taken_tick >= SLOTS_TAKEN_PER_TICK ||
            r->procs->n_procs > r->slot_take_max_tracked)
                return 0;
        if (!owner_is_process(owner) || (owner & TS_OWNER_EXITED) || owner == p->info.pid || !o ||
            o->info.pid != owner || o->exiting || now - o->last_counted_usec < r->slot_idle_usec)
                return 0;
        /* Its hash entry is to be removed at its exit, whether it counts there or not. */
        if (!o->hash_seen && !(o->hash_seen = calloc(1, sizeof(*o->hash_seen))))
                return -ENOMEM;
        k = collector_bpf_take_slot(r->bpf, slot, o->info.pid, o->info.start_time);
        if (k <= 0)
                return k;
        r->slots_taken_tick++;
        r->slots_taken++;
        return 0;
}

/* One entry of the per-CPU fallback hash: n_cpus values. */
static int drain_hash_entry(CollectorReader *r, const struct ts_proc_key *key, const void *value, uint64_t now) {
        const struct ts_proc *v = value;
        const struct ts_ident *id = NULL;
        ProcCounters sum = {};
        CollectorProc *p;
        int k;

        for (int cpu = 0; cpu < r->bpf->n_cpus; cpu++)
                if (!id && v[cpu].id.start_time)
                        id = &v[cpu].id;
        k = proc_table_get(r->procs, key->tgid, key->start_time, id, now, &p);
        if (k < 0)
                return k;
        k = percpu_sum(r, (PerCpu) { .counts = &v[0].c, .times = &v[0].t, .stride = sizeof(*v), .times_stride = sizeof(*v) },
                       &p->hash_next_max, &sum);
        if (k < 0)
                return k;
        if (!p->hash_seen && !(p->hash_seen = calloc(1, sizeof(*p->hash_seen))))
                return -ENOMEM;
        k = proc_table_count_faults(r->procs, p, &sum, p->hash_seen, now);
        if (k < 0)
                return k;
        return take_idle_slot(r, p, now);
}

static int drain_traps_entry(CollectorReader *r, const struct ts_proc_key *key, const void *value, uint64_t now) {
        const struct ts_traps *t = value;
        CollectorProc *p;
        int k;

        k = proc_table_get(r->procs, key->tgid, key->start_time, NULL, now, &p);
        if (k < 0)
                return k;
        /* Named from /proc, as before; its namespaces only BPF can tell. */
        if (p->info.n_pidns == 0 && t->id.start_time == key->start_time)
                pidns_from_ident(&t->id, &p->info);
        return proc_table_count_traps(r->procs, p, value, now);
}

/* By map (the trap hash's keys last), then process. */
static int key_compare(const void *a, const void *b) {
        const struct ts_proc_key *x = a, *y = b;

        if (x->_pad0 != y->_pad0)
                return x->_pad0 < y->_pad0 ? -1 : 1;
        return process_identity_compare(x->tgid, x->start_time, y->tgid, y->start_time);
}

/* Appends the keys of one log to r->hash_keys; whether it overflowed. */
static int take_log(CollectorReader *r, const struct ts_hash_log *log, bool *overflowed) {
        uint32_t n = MIN(__atomic_load_n(&log->n, __ATOMIC_ACQUIRE), (uint32_t) TS_HASH_LOG_KEYS);
        int k;

        *overflowed = *overflowed || __atomic_load_n(&log->overflowed, __ATOMIC_RELAXED);
        for (uint32_t i = 0; i < n; i++) {
                struct ts_proc_key key = log->keys[i];

                k = array_append((void **) &r->hash_keys, &r->n_hash_keys, &r->hash_keys_capacity, sizeof(key), &key);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* One logged entry of the fallback or the trap hash, unless it is gone: its process exited, and
 * its last counts were read before. */
static int drain_logged(CollectorReader *r, const struct ts_proc_key *logged, uint64_t now) {
        struct trapstat_bpf *skel = r->bpf->skel;
        bool traps = logged->_pad0 == TS_LOG_TRAPS;
        struct ts_proc_key key = *logged;

        key._pad0 = 0;
        r->tick_records++;
        if (bpf_map_lookup_elem(bpf_map__fd(traps ? skel->maps.traps : skel->maps.processes), &key,
                                r->batch_values) < 0)
                return errno == ENOENT ? 0 : -errno;
        return traps ? drain_traps_entry(r, &key, r->batch_values, now)
                     : drain_hash_entry(r, &key, r->batch_values, now);
}

/* The fallback and trap hashes' entries counted into since the last tick (struct ts_hash_log):
 * the last epoch's logs whole, then reset (no program writes them a tick later), and the epoch
 * that ends now as far as it is visible yet; so every logged entry is read in two ticks, which
 * catches a count that lands after the first read. Where a log overflowed, both hashes whole,
 * also in the next tick. Taken at once (here), read in pieces (drain_hash()). */
static int take_hash_logs(CollectorReader *r) {
        struct trapstat_bpf *skel = r->bpf->skel;
        uint32_t epoch = __atomic_load_n(&skel->data->hash_epoch, __ATOMIC_RELAXED);
        bool overflowed = false;
        int k;

        r->n_hash_keys = 0;
        r->drain_hash_next = 0;
        for (int cpu = 0; cpu < r->bpf->n_cpus; cpu++) {
                struct ts_hash_log *log = &r->bpf->hash_log[cpu * 2 + ((epoch + 1) & 1)];

                k = take_log(r, log, &overflowed);
                if (k < 0)
                        return k;
                __atomic_store_n(&log->n, 0, __ATOMIC_RELAXED);
                __atomic_store_n(&log->overflowed, 0, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&skel->data->hash_epoch, epoch + 1, __ATOMIC_SEQ_CST);
        for (int cpu = 0; cpu < r->bpf->n_cpus; cpu++) {
                k = take_log(r, &r->bpf->hash_log[cpu * 2 + (epoch & 1)], &overflowed);
                if (k < 0)
                        return k;
        }
        r->drain_hash_whole = overflowed;
        /* Fallback hash entries first, as when both hashes are read whole. */
        if (r->n_hash_keys > 1)
                qsort(r->hash_keys, r->n_hash_keys, sizeof(*r->hash_keys), key_compare);
        return 0;
}

/* Returns 1 when every entry taken is read, 0 when the deadline came first. Both hashes whole
 * (a log overflowed, rare) are read in one piece. */
static int drain_hash(CollectorReader *r, uint64_t now, uint64_t deadline_usec) {
        struct trapstat_bpf *skel = r->bpf->skel;
        unsigned read = 0;
        int k;

        if (r->drain_hash_whole) {
                r->drain_hash_whole = false;
                k = for_each_entry(r, skel->maps.processes, sizeof(struct ts_proc) * (size_t) r->bpf->n_cpus,
                                   drain_hash_entry, now);
                if (k >= 0)
                        k = for_each_entry(r, skel->maps.traps, sizeof(struct ts_traps), drain_traps_entry, now);
                r->drain_hash_next = r->n_hash_keys;
                return k < 0 ? k : 1;
        }
        for (; r->drain_hash_next < r->n_hash_keys; r->drain_hash_next++) {
                size_t i = r->drain_hash_next;

                if (i > 0 && key_compare(&r->hash_keys[i - 1], &r->hash_keys[i]) == 0)
                        continue;
                if (++read % DRAIN_PIECE == 0 && past(deadline_usec))
                        return 0;
                k = drain_logged(r, &r->hash_keys[i], now);
                if (k < 0)
                        return k;
        }
        return 1;
}

int reader_drain_maps_begin(CollectorReader *r) {
        struct trapstat_bpf *skel = r->bpf->skel;

        /* The tick that ends: its longest faults are read while BPF keeps the next one's apart. */
        r->fault_tick = __atomic_load_n(&skel->bss->fault_tick, __ATOMIC_RELAXED);
        r->slots_taken_tick = 0;
        __atomic_store_n(&skel->bss->fault_tick, r->fault_tick + 1, __ATOMIC_SEQ_CST);
        take_slots(r);
        return take_hash_logs(r);
}

int reader_drain_maps_step(CollectorReader *r, uint64_t now, uint64_t deadline_usec) {
        int k;

        if (r->drain_slot_next < r->bpf->n_slots && (k = drain_slots(r, now, deadline_usec)) <= 0)
                return k;
        return drain_hash(r, now, deadline_usec);
}

/* Applies a piece of the sweep's records. */
static int apply_task_records(CollectorReader *r, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const struct ts_task_record *rec = &r->records[i];
                CollectorProc *p = proc_table_find(r->procs, rec->tgid, rec->start_time);
                int k;

                /* Not drained yet (first counted since): the next sweep. */
                if (!p)
                        continue;
                p->swept = r->sweep_generation;
                k = proc_table_update(r->procs, p, rec);
                if (k < 0)
                        return k;
        }
        return 0;
}

int reader_sweep_tasks(CollectorReader *r, uint64_t now, bool *ret_done) {
        size_t want, got = 0;
        int k;

        *ret_done = false;
        if (r->sweep_fd < 0) {
                if (r->sweep_started_usec && now - r->sweep_started_usec < SWEEP_INTERVAL_USEC)
                        return 0;
                r->sweep_fd = bpf_iter_create(bpf_link__fd(r->bpf->iter_link));
                if (r->sweep_fd < 0)
                        return -errno;
                r->sweep_generation++;
                r->sweep_started_usec = now;
                r->sweep_last_usec = now;
        }
        /* Its share of the tracked processes for the time since the last piece. */
        want = MAX(SWEEP_MIN_RECORDS, (size_t) ((double) r->procs->n_procs * (double) (now - r->sweep_last_usec) /
                                                SWEEP_INTERVAL_USEC) + 1);
        r->sweep_last_usec = now;
        if (r->records_capacity < want) {
                struct ts_task_record *a = reallocarray(r->records, want, sizeof(*a));

                if (!a)
                        return -ENOMEM;
                r->records = a;
                r->records_capacity = want;
        }
        k = collector_bpf_read_records(r->sweep_fd, r->records, want, &got);
        if (k != 0) {
                close(r->sweep_fd);
                r->sweep_fd = -1;
                if (k < 0)
                        return k;
                *ret_done = true;
        }
        r->tick_records += got;
        return apply_task_records(r, got);
}

int reader_read_active(CollectorReader *r, bool *ret_done) {
        CollectorProc *procs[TS_TASK_READS];
        struct ts_proc_key keys[TS_TASK_READS];
        size_t n = proc_table_next_active(r->procs, procs, TS_TASK_READS, ret_done);
        int got;

        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                keys[i] = (struct ts_proc_key) { .tgid = procs[i]->info.pid, .start_time = procs[i]->info.start_time };
        got = collector_bpf_read_tasks(r->bpf, keys, n, r->active_records);
        if (got < 0)
                return got;
        r->tick_records += n;
        /* One that is gone has no record: its exit event has the final figures. */
        for (int i = 0; i < got; i++) {
                const struct ts_task_record *rec = &r->active_records[i];
                CollectorProc *p = proc_table_find(r->procs, rec->tgid, rec->start_time);
                int k;

                if (p && (k = proc_table_update(r->procs, p, rec)) < 0)
                        return k;
        }
        return 0;
}

int reader_mark_exiting(CollectorReader *r) {
        for (size_t i = 0; i < r->n_events; i++) {
                const LifecycleEvent *e = &r->events[i];
                int k;

                if (e->type != TS_EVENT_EXEC && (k = proc_table_expect_exit(r->procs, e->tgid, e->start_time)) < 0)
                        return k;
        }
        return 0;
}

int reader_apply_events(CollectorReader *r, size_t n_before_drain, uint64_t deadline_usec) {
        size_t kept = r->apply_kept, i = r->apply_next;
        int k = 0;

        /* r->n_events may grow between two steps (events read meanwhile). After a failure the
         * events left are only let go, in this step. */
        for (; i < r->n_events; i++) {
                LifecycleEvent *e = &r->events[i];
                CollectorProc *p;

                if (k >= 0 && (i - r->apply_next) % DRAIN_PIECE == DRAIN_PIECE - 1 && past(deadline_usec)) {
                        r->apply_next = i;
                        r->apply_kept = kept;
                        return 0;
                }
                if (e->type != TS_EVENT_EXEC && i >= n_before_drain) {
                        /* An exit read after the drain: counts of the process may have come
                         * between the two. It waits for the next tick's drain. */
                        r->events[kept++] = *e;
                        continue;
                }
                p = k >= 0 ? proc_table_find(r->procs, e->tgid, e->start_time) : NULL;
                if (!p && k >= 0 && e->type == TS_EVENT_EXEC && i >= n_before_drain) {
                        /* An exec read after the drain, of a process the drain did not find: it
                         * claimed its slot (or hash entry) since, at the latest in the exec
                         * (sched_process_exec()). The next tick's drain finds it, under the
                         * identity BPF took at its first count, which may be older than the
                         * exec: a launcher's user (setpriv, su) or name. So the exec waits, and
                         * is applied after that drain, before the tick's samples. */
                        r->events[kept++] = *e;
                        continue;
                }
                if (p && e->type == TS_EVENT_EXEC)
                        k = proc_table_exec(r->procs, p, e);
                else if (p) {
                        /* Exit. The maps were drained after this event was read, and a dead
                         * process counts no more: its counts are complete. Remove its entries so
                         * the maps stay bounded (its slot was freed when drained, being marked
                         * exited). It has a hash entry only if a drain read one (hash_seen,
                         * traps_seen): every entry is logged as it is counted into, or its log
                         * overflows and the drain reads the hashes whole, and that drain came
                         * after the exit, after the process's last count. */
                        collector_bpf_forget(r->bpf, e->tgid, e->start_time, p->hash_seen != NULL,
                                             p->traps_seen != NULL);
                        k = proc_table_exit(r->procs, p, e);
                }
                lifecycle_event_done(e);
        }
        r->n_events = kept;
        r->apply_next = r->apply_kept = 0;
        return k < 0 ? k : 1;
}

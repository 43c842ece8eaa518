// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* Counts page faults and CPU traps per process in the kernel. User space drains the counters
 * every tick; nothing is sent per fault.
 *
 * The fault hot path: slot = tgid & slot_mask; when this CPU's counters of the slot name tgid as
 * their owner, add to them. That is one array lookup the verifier inlines, so a fault costs about
 * what the cheapest possible counter costs. Everything else (claiming a slot, the first
 * fault of a process on a CPU, a slot taken by another process, a process whose slot is marked
 * exited) goes to the slow path, where slot_owner says who owns the slot. */

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "trapstat.h"

/* One source, three objects (bpf/meson.build), one for each set of kernel capabilities the daemon
 * may find when it probes (daemon/collector/kernel-probe.c); it loads the richest its kernel
 * can run. Each leaves out what its kernels lack, never a count:
 *   trapstat.bpf.o           everything: bpf_loop and bpf_find_vma (Linux 5.17) and all below.
 *   trapstat-noloop.bpf.o    TS_NO_LOOP: no bpf_loop, no bpf_find_vma. The exit clears the slot's
 *                            copies with a loop written out (at most TS_NO_LOOP_MAX_CPUS CPUs);
 *                            a site's instruction is named by user space from /proc/PID/maps.
 *   trapstat-base.bpf.o      TS_BASE (also TS_NO_LOOP): none of bpf_get_current_task_btf and
 *                            task storage (5.11), atomic fetch and compare-and-exchange (5.12),
 *                            bpf_task_pt_regs (5.15). Every process counts in the per-CPU hash
 *                            (slots are claimed with compare-and-exchange), without sites or
 *                            fault time. It needs BTF, tp_btf, the ring buffer and the task
 *                            iterator: Linux 5.8, 5.10 in the distributions that ship BTF.
 * All three declare the same maps, programs and global variables, in the same order: the daemon
 * opens each through the one skeleton (bpf/meson.build checks that they agree). */
#ifdef TS_BASE
#define TS_NO_LOOP 1
/* The current task as a plain address: every read of it goes through bpf_probe_read_kernel(). */
#define current_task() ((struct task_struct *) bpf_get_current_task())
#else
/* The current task as a pointer the verifier trusts: fields are loaded directly. */
#define current_task() bpf_get_current_task_btf()
#endif

/* What only some architectures tell: the access kind of a page fault and the exception vector
 * of a trap. -D__TARGET_ARCH_<arch> comes from bpf/meson.build. */
#if defined(__TARGET_ARCH_x86)
#include "arch/x86.h"
#elif defined(__TARGET_ARCH_arm64)
#include "arch/arm64.h"
#else
#include "arch/generic.h"
#endif
/* group_faults() and task_record_fill(), after TS_NO_LOOP is settled. */
#include "task-faults.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* slots - 1 and log2(slots); set by user space before load together with the slot maps'
 * max_entries. */
const volatile __u32 slot_mask = TS_DEFAULT_SLOTS - 1;
const volatile __u32 slot_bits = 13;
/* Possible CPUs: slot_counters holds this many copies of every slot. Set by user space. */
const volatile __u32 n_cpus = 1;
/* Lifecycle events wake user space only once this many bytes wait in the ring buffer (it is
 * also read every tick): a storm of exits costs the daemon a wake-up per batch, not per exit.
 * Set by user space with the ring buffer's size. */
const volatile __u32 wakeup_bytes = TS_DEFAULT_EVENT_BUFFER / 16;
/* Fault sites: one in (fault_sample_mask + 1) user page faults of a process on a CPU records its
 * site (the per-CPU counter the fault just incremented, so the hot path pays one AND); none when
 * fault_sites is false, which the verifier then removes. Set by user space before load. */
const volatile bool fault_sites = true;
const volatile __u64 fault_sample_mask = TS_DEFAULT_FAULT_SAMPLE - 1;
/* Fault time: the fault's entry stores its start, its completion adds the duration (see
 * fault_done()). False when user space does not attach the completion programs; the verifier
 * then removes the entry's part. */
const volatile bool fault_timing = true;
/* Major faults by cause: the completion of a major fault looks up its address's VMA (see
 * major_cause_of_fault()). False when user space does not count them. */
const volatile bool major_cause = true;
/* The tick the longest fault is kept for (struct ts_counters max_ns); written by user space. */
__u64 fault_tick;
/* log2 of the page size, for the file offset of a mapping (vm_pgoff). */
const volatile __u32 page_shift = 12;
/* Entries of the site hash one epoch may create (the hash holds two epochs' worth: the one being
 * drained does not take room from the next); of them, those one process may create; those the
 * processes of one user (not root, not group trapstat) may; and how many leave only the reserve
 * of root and group trapstat. */
const volatile __u32 max_sites = TS_DEFAULT_MAX_SITES;
const volatile __u32 max_sites_per_process = TS_DEFAULT_MAX_SITES_PER_PROCESS;
const volatile __u32 max_sites_per_user = TS_DEFAULT_MAX_SITES / TS_DEFAULT_SITES_PER_USER_DIVISOR;
const volatile __u32 max_sites_shared = TS_DEFAULT_MAX_SITES - TS_DEFAULT_MAX_SITES / TS_DEFAULT_SITE_RESERVE_DIVISOR;

/* The site hash's epochs and occupancy (bpf/trapstat.h); mmap'd by user space. */
struct ts_site_epochs site_epochs;

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, TS_DEFAULT_SLOTS);
        __type(key, __u32);
        __type(value, struct ts_owner);
} slot_owner SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, TS_DEFAULT_SLOTS);
        __type(key, __u32);
        __type(value, struct ts_ident);
} slot_ident SEC(".maps");

/* The slots' counters of each CPU, CPU by CPU: CPU c's of slot s at (c << slot_bits) | s
 * (cpu_slot_key()). A plain array rather than a per-CPU one: its lookup is one inlined address
 * computation, and user space reads it in place (mmap'd). Sized by user space to n_cpus << slot_bits
 * entries. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, TS_DEFAULT_SLOTS);
        __type(key, __u32);
        __type(value, struct ts_counters);
} slot_counters SEC(".maps");

/* The slots' fault time, laid out as slot_counters (the same key). Sized by user space to
 * n_cpus << slot_bits entries with fault time on, else to one: it stays apart from the counts so
 * that, off (the default), the slots take 80 bytes a CPU, not 352. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, TS_DEFAULT_SLOTS);
        __type(key, __u32);
        __type(value, struct ts_fault_times);
} slot_times SEC(".maps");

/* Which slots' counters grew since user space last looked: bit k of this array of words is set
 * after CPU c counted into its copy of slot s, k = cpu_slot_key(c, s) (so each CPU's bits are
 * apart from the others' unless there are fewer than 64 slots). User space takes the words with an
 * atomic exchange and reads only the slots whose bit was set, in that tick and the next: a bit set
 * without an atomic operation, or seen before the count it follows, costs at most a read of a
 * slot that did not change. Sized by user space to n_cpus << slot_bits bits. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, TS_DEFAULT_SLOTS / 64);
        __type(key, __u32);
        __type(value, __u64);
} slot_dirty SEC(".maps");

#ifndef TS_BASE
/* The key of a CPU's counters of the slot of tgid. slot_bits is a constant to the verifier, which
 * removes every case but its own: the shift and the mask are then immediates, and a fault does not
 * wait for a load of .rodata before it can find its counters (about 25 ns per fault here,
 * bench/README.md). */
static __always_inline __u32 cpu_slot_key(__u32 cpu, __u32 tgid) {
        switch (slot_bits) {
#define TS_SLOT_KEY(bits)                                                                          \
        case bits:                                                                                 \
                return cpu << bits | (tgid & ((1U << bits) - 1));
                TS_SLOT_KEY(0) TS_SLOT_KEY(1) TS_SLOT_KEY(2) TS_SLOT_KEY(3) TS_SLOT_KEY(4) TS_SLOT_KEY(5)
                TS_SLOT_KEY(6) TS_SLOT_KEY(7) TS_SLOT_KEY(8) TS_SLOT_KEY(9) TS_SLOT_KEY(10) TS_SLOT_KEY(11)
                TS_SLOT_KEY(12) TS_SLOT_KEY(13) TS_SLOT_KEY(14) TS_SLOT_KEY(15) TS_SLOT_KEY(16)
                TS_SLOT_KEY(17) TS_SLOT_KEY(18) TS_SLOT_KEY(19) TS_SLOT_KEY(20) TS_SLOT_KEY(21)
                TS_SLOT_KEY(22)
#undef TS_SLOT_KEY
        default:
                return cpu << slot_bits | (tgid & slot_mask);
        }
}
_Static_assert(TS_MAX_SLOT_BITS == 22, "cpu_slot_key() has a case for every slot count");

/* This CPU's counters of the slot of tgid. The program runs with migration disabled, so they stay
 * this CPU's until it returns. */
static __always_inline struct ts_counters *cpu_slot_counters(__u32 tgid) {
        __u32 key = cpu_slot_key(bpf_get_smp_processor_id(), tgid);

        return bpf_map_lookup_elem(&slot_counters, &key);
}
#endif

/* Processes without a slot. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
        __uint(max_entries, TS_DEFAULT_MAX_PROCESSES);
        __type(key, struct ts_proc_key);
        __type(value, struct ts_proc);
} processes SEC(".maps");

/* Which of them were counted into, per CPU and epoch (struct ts_hash_log); n_cpus * 2 entries, sized
 * by user space. */
__u32 hash_epoch = 1;
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 2);
        __type(key, __u32);
        __type(value, struct ts_hash_log);
} hash_log SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, TS_DEFAULT_MAX_PROCESSES);
        __type(key, struct ts_proc_key);
        __type(value, struct ts_traps);
} traps SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, TS_DEFAULT_EVENT_BUFFER);
} events SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, TS_DROP_MAX);
        __type(key, __u32);
        __type(value, __u64);
} drops SEC(".maps");

/* Where processes trap and (sampled) fault: counts per (process, instruction, memory touched). */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 2 * TS_DEFAULT_MAX_SITES);
        __type(key, struct ts_site_key);
        __type(value, struct ts_site);
} sites SEC(".maps");

/* How many site entries each process, and the processes of each user, created in an epoch (their
 * shares of the site hash). */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 2 * TS_DEFAULT_MAX_PROCESSES);
        __type(key, struct ts_site_quota_key);
        __type(value, struct ts_site_quota);
} site_quota SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 2 * TS_DEFAULT_MAX_PROCESSES);
        __type(key, struct ts_site_quota_key);
        __type(value, struct ts_site_quota);
} site_user_quota SEC(".maps");

/* The path of every file a site was found in, written once per file. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, TS_MAX_FILE_NAMES);
        __type(key, struct ts_file_key);
        __type(value, struct ts_file_name);
} file_names SEC(".maps");

/* A path is put together here: too big for the BPF stack. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct ts_file_name);
} file_name_scratch SEC(".maps");

/* The code mapping a process's last site was found in (the instruction's VMA), so that the next
 * site in the same code spends its one VMA lookup on the faulting address instead (see
 * locate_site()). An LRU: processes that stopped trapping and faulting fall out. */
struct code_mapping {
        __u64 start, end; /* [vm_start, vm_end) */
        __u64 ino;
        __u64 file_start; /* file offset of start; for code in no file 0 */
        __u32 dev;
        __u32 kind;       /* TS_MEM_* */
};

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 4096);
        __type(key, struct ts_proc_key);
        __type(value, struct code_mapping);
} code_mappings SEC(".maps");

/* A thread's fault in progress: when it started, where, and in which mode. Per thread, not per
 * CPU: a major fault sleeps and may resume on another CPU. */
struct fault_start {
        __u64 ns;      /* bpf_ktime_get_ns() at the entry; 0 when none is in progress */
        __u64 address; /* the faulting address: the completion must name the same one */
        __u32 kernel;  /* taken in kernel mode */
        __u32 sampled; /* its site was recorded (site): the completion adds its time there */
        struct ts_site_key site;
};

#ifndef TS_BASE
struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct fault_start);
} fault_starts SEC(".maps");
#else
/* No task storage before 5.11, and no fault time: a map of the same name, never used, so that
 * the object matches the skeleton. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 1);
        __type(key, int);
        __type(value, struct fault_start);
} fault_starts SEC(".maps");
#endif

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, TS_MAX_DROP_USERS);
        __type(key, __u32);
        __type(value, struct ts_user_drops);
} user_drops SEC(".maps");

/* The initial value of a user_drops entry. Never written. */
static struct ts_user_drops zero_user_drops;
/* A new entry of the fallback hash, before its identity is written (hash_counters()). Never
 * written itself. */
static struct ts_proc zero_proc;

/* One loss, of a process of task's user: counted for the machine and for the user. */
static __noinline void count_drop(__u32 what, struct task_struct *task) {
        __u32 uid = BPF_CORE_READ(task, real_cred, uid.val);
        __u64 *n = bpf_map_lookup_elem(&drops, &what);
        struct ts_user_drops *u;

        if (n)
                (*n)++;
        u = bpf_map_lookup_elem(&user_drops, &uid);
        if (!u) {
                /* -E2BIG when TS_MAX_DROP_USERS users have lost something: counted above only. */
                (void) bpf_map_update_elem(&user_drops, &uid, &zero_user_drops, BPF_NOEXIST);
                u = bpf_map_lookup_elem(&user_drops, &uid);
                if (!u)
                        return;
        }
        /* Checked here, after the calls, where the verifier sees the bound of the index it uses. */
        if (what < TS_DROP_MAX)
                __sync_fetch_and_add(&u->count[what], 1);
}

/* The task's cgroup in the unified hierarchy, as bpf_get_current_cgroup_id() gives it for the
 * current task: user space names its unit where /proc cannot (a process outside trapstatd's pid
 * namespace). 0 when it cannot be read. */
static __always_inline __u64 task_cgroup_id(struct task_struct *task) {
        return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/* kernfs_node's parent is __parent since Linux 6.15, parent before. */
struct kernfs_node___new {
        struct kernfs_node *__parent;
} __attribute__((preserve_access_index));
struct kernfs_node___old {
        struct kernfs_node *parent;
} __attribute__((preserve_access_index));

static __always_inline struct kernfs_node *kernfs_parent(struct kernfs_node *kn) {
        if (bpf_core_field_exists(((struct kernfs_node___new *) kn)->__parent))
                return BPF_CORE_READ((struct kernfs_node___new *) kn, __parent);
        return BPF_CORE_READ((struct kernfs_node___old *) kn, parent);
}

/* Whether the len characters in unit end in suffix (n characters). */
static __always_inline bool unit_ends_with(const char *unit, long len, const char *suffix, int n) {
        if (len <= n || len >= TS_UNIT_LEN)
                return false;
        for (int i = 0; i < n; i++)
                if (unit[(len - n + i) & (TS_UNIT_LEN - 1)] != suffix[i])
                        return false;
        return true;
}

#define TS_CGROUP_DEPTH 16

/* The innermost unit of the task's cgroup (v2) into unit: the first name ending in .service or
 * .scope on the way up, as user space reads units from /proc/PID/cgroup; "" when none is within
 * TS_CGROUP_DEPTH levels. Read here because a unit may end, and its cgroup go, within a tick. */
static __always_inline void cgroup_unit(struct task_struct *task, char *unit) {
        struct kernfs_node *kn = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn);

        for (int i = 0; i < TS_CGROUP_DEPTH && kn; i++) {
                long n = bpf_probe_read_kernel_str(unit, TS_UNIT_LEN, BPF_CORE_READ(kn, name));

                if (n > 1 && (unit_ends_with(unit, n - 1, ".service", 8) || unit_ends_with(unit, n - 1, ".scope", 6)))
                        return;
                kn = kernfs_parent(kn);
        }
        unit[0] = '\0';
}

/* The pid namespaces of the task's process (its group leader's pid), outermost first, as struct
 * ts_ident keeps them: levels 0 .. TS_PIDNS_LEVELS - 2 and the innermost. */
static __always_inline void pidns_fill(struct ts_ident *id, struct task_struct *task) {
        struct pid *pid = BPF_CORE_READ(task, group_leader, thread_pid);
        __u32 level = BPF_CORE_READ(pid, level), n = 0;
        __u64 numbers = bpf_core_field_offset(struct pid, numbers);

        for (__u32 i = 0; i < TS_PIDNS_LEVELS; i++) {
                __u32 l = i == TS_PIDNS_LEVELS - 1 ? level : i;
                struct upid u;

                if (i > level)
                        break;
                if (bpf_probe_read_kernel(&u, sizeof(u), (char *) pid + numbers + (__u64) l * sizeof(struct upid)))
                        break;
                id->pidns[i].ns = BPF_CORE_READ(u.ns, ns.inum);
                id->pidns[i].pid = (__u32) u.nr;
                n = i + 1;
        }
        id->pidns_level = level;
        id->n_pidns = n;
}

static __always_inline void ident_fill(struct ts_ident *id, struct task_struct *task) {
        id->start_time = BPF_CORE_READ(task, group_leader, start_boottime);
        id->parent_start_time = BPF_CORE_READ(task, real_parent, group_leader, start_boottime);
        id->uid = BPF_CORE_READ(task, real_cred, uid.val);
        id->ppid = BPF_CORE_READ(task, real_parent, tgid);
        id->cgroup_id = task_cgroup_id(task);
        pidns_fill(id, task);
        /* The leader's comm, not the thread's: that is the process's name. */
        BPF_CORE_READ_STR_INTO(&id->comm, task, group_leader, comm);
}

static __always_inline void proc_key_fill(struct ts_proc_key *key, struct task_struct *task) {
        key->tgid = BPF_CORE_READ(task, tgid);
        key->_pad0 = 0;
        key->start_time = BPF_CORE_READ(task, group_leader, start_boottime);
}

/* Puts key into this CPU's log of the epoch; whether it fit. Only this CPU writes its log, from
 * programs that run to their end without preemption: no atomics. */
static __always_inline bool hash_log_add(struct ts_proc_key *key, __u32 epoch) {
        __u32 i = bpf_get_smp_processor_id() * 2 + (epoch & 1), n;
        struct ts_hash_log *log = bpf_map_lookup_elem(&hash_log, &i);

        if (!log)
                return false;
        n = log->n;
        if (n >= TS_HASH_LOG_KEYS) {
                log->overflowed = 1;
                return false;
        }
        log->keys[n & (TS_HASH_LOG_KEYS - 1)] = *key;
        log->n = n + 1;
        return true;
}

/* The entry key is about to be counted into on this CPU: logged for user space once per epoch (a
 * count user space reads before it lands is read again in the next tick). */
static __always_inline void hash_counted(struct ts_counters *c, struct ts_proc_key *key) {
        __u32 epoch = *(volatile __u32 *) &hash_epoch;

        if (c->logged != epoch && hash_log_add(key, epoch))
                c->logged = epoch;
}

/* Counters of the current process in the fallback hash, created on first use. */
static __noinline struct ts_counters *hash_counters(void) {
        struct task_struct *task = current_task();
        struct ts_proc_key key;
        struct ts_proc *p;
        long created;

        proc_key_fill(&key, task);
        p = bpf_map_lookup_elem(&processes, &key);
        if (p) {
                hash_counted(&p->c, &key);
                return &p->c;
        }

        /* Inserted from a zero entry in .bss, not one on the stack: 392 bytes there would take
         * the exec program's three frames past the 512 bytes a kernel without private BPF stacks
         * allows (6.12 rejected it). -EEXIST when another CPU created it meanwhile: look it up
         * either way. A per-CPU insert from BPF zeroes the other CPUs' copies; user space takes
         * identity from the key and from any CPU whose start_time is set (until it is, from
         * /proc). */
        created = bpf_map_update_elem(&processes, &key, &zero_proc, BPF_NOEXIST);
        p = bpf_map_lookup_elem(&processes, &key);
        if (!p) {
                count_drop(TS_DROP_MAP_FULL, task);
                return NULL;
        }
        if (created == 0)
                ident_fill(&p->id, task);
        hash_counted(&p->c, &key);
        return &p->c;
}

#ifndef TS_BASE
/* The counters the current process has already, without claiming a slot or creating a hash
 * entry: NULL (and no drop, the fault's entry counted that) where it has none. */
static __noinline struct ts_counters *hash_counters_existing(void) {
        struct ts_proc_key key;
        struct ts_proc *p;

        proc_key_fill(&key, current_task());
        p = bpf_map_lookup_elem(&processes, &key);
        if (!p)
                return NULL;
        hash_counted(&p->c, &key);
        return &p->c;
}

/* This CPU's copy of the slot's owner: the process owns the slot (owner) and counts into c from now
 * on. The exit of the process clears the copies of every CPU after it marks the owner exited
 * (clear_owner_copies()); re-reading the owner after writing the copy, both fully ordered, makes
 * sure a copy written while the process exits on another CPU is cleared by one side or the other,
 * so no process with the same pid later counts into this one's slot. */
static __always_inline struct ts_counters *adopt_slot(struct ts_owner *owner, struct ts_counters *c, __u32 tgid) {
        c->owner = tgid;
        if (__sync_val_compare_and_swap(&owner->tgid, tgid, tgid) == tgid)
                return c;
        c->owner = 0;
        return NULL;
}

/* The slow path: the process's first fault on this CPU in its slot; claim the slot when it is
 * free; else count in the hash. */
static __noinline struct ts_counters *claim_or_hash(__u32 tgid) {
        struct ts_counters *c = cpu_slot_counters(tgid);
        __u32 slot = tgid & slot_mask;
        struct ts_owner *owner;
        struct ts_ident *id;

        owner = bpf_map_lookup_elem(&slot_owner, &slot);
        if (!owner || !c)
                return NULL;
        if (owner->tgid == tgid)
                return adopt_slot(owner, c, tgid) ?: hash_counters();
        if (owner->tgid != TS_OWNER_FREE ||
            __sync_val_compare_and_swap(&owner->tgid, TS_OWNER_FREE, TS_OWNER_CLAIMING) != TS_OWNER_FREE)
                return hash_counters();

        /* Ours. Identity first, then publish the owner with a full barrier (xchg), so user space
         * never sees an owner without its identity. The slot's counters are zero: user space
         * zeroes them before it frees a slot. */
        id = bpf_map_lookup_elem(&slot_ident, &slot);
        if (id)
                ident_fill(id, current_task());
        __sync_lock_test_and_set(&owner->tgid, tgid);
        return adopt_slot(owner, c, tgid) ?: hash_counters();
}

/* The current process's tgid: a load from the current task instead of the
 * bpf_get_current_pid_tgid() call, a few ns less per fault here (bench/README.md). */
static __always_inline __u32 current_tgid(void) {
        return current_task()->tgid;
}

/* The current process's counters; *key is this CPU's key of its slot, for slot_counted(). */
static __always_inline struct ts_counters *current_counters(__u32 *key) {
        __u32 tgid = current_tgid();
        struct ts_counters *c;

        *key = cpu_slot_key(bpf_get_smp_processor_id(), tgid);
        c = bpf_map_lookup_elem(&slot_counters, key);
        return c && c->owner == tgid ? c : claim_or_hash(tgid);
}

/* After counting into c: tells user space that its slot changed (slot_dirty). Counters in the hash
 * (owner 0 there) are read whole every tick. A plain load and store, on a word only this CPU
 * writes where slots are 64 or more: the bit is nearly always set already. */
static __always_inline void slot_counted(struct ts_counters *c, __u32 key) {
        __u32 word = key >> 6;
        __u64 bit = 1ULL << (key & 63), *w;

        if (!c->owner)
                return;
        w = bpf_map_lookup_elem(&slot_dirty, &word);
        if (w && !(*w & bit))
                *w |= bit;
}

/* The same for a process that owns its slot but has not counted on this CPU yet. */
static __noinline struct ts_counters *existing_slow(__u32 tgid) {
        struct ts_counters *c = cpu_slot_counters(tgid);
        __u32 slot = tgid & slot_mask;
        struct ts_owner *owner = bpf_map_lookup_elem(&slot_owner, &slot);

        if (owner && c && owner->tgid == tgid)
                return adopt_slot(owner, c, tgid) ?: hash_counters_existing();
        return hash_counters_existing();
}

static __always_inline struct ts_counters *existing_counters(__u32 *key) {
        __u32 tgid = current_tgid();
        struct ts_counters *c;

        *key = cpu_slot_key(bpf_get_smp_processor_id(), tgid);
        c = bpf_map_lookup_elem(&slot_counters, key);
        return c && c->owner == tgid ? c : existing_slow(tgid);
}

/* The fault time of the current process, beside its counters c (existing_counters(), key): its
 * slot's on this CPU in slot_times, or its fallback hash entry's. NULL when there is none. */
static __noinline struct ts_fault_times *hash_times_existing(void) {
        struct ts_proc_key key;
        struct ts_proc *p;

        proc_key_fill(&key, current_task());
        p = bpf_map_lookup_elem(&processes, &key);
        return p ? &p->t : NULL;
}

static __always_inline struct ts_fault_times *existing_times(struct ts_counters *c, __u32 key) {
        return c->owner ? bpf_map_lookup_elem(&slot_times, &key) : hash_times_existing();
}

#else
/* Without compare-and-exchange no slot can be claimed: every process counts in the hash. */
static __always_inline struct ts_counters *current_counters(__u32 *key) {
        *key = 0;
        return hash_counters();
}

static __always_inline void slot_counted(struct ts_counters *c, __u32 key) {
}
#endif

/* ---- Fault time ---- */

#ifndef TS_BASE

/* The entry of a fault of the current thread: remembered until its completion. A fault that never
 * completes (a bad address that becomes a signal, VM_FAULT_ERROR) leaves its start behind, but
 * the thread's next fault overwrites it at its own entry, and a completion only takes a start of
 * its own address. */
static __always_inline struct fault_start *fault_begin(__u64 address, bool kernel) {
        struct fault_start *s;

        if (!fault_timing)
                return NULL;
        s = bpf_task_storage_get(&fault_starts, current_task(), NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
        if (!s)
                return NULL;
        s->address = address;
        s->kernel = kernel;
        s->sampled = 0;
        s->ns = bpf_ktime_get_ns();
        return s;
}

static void site_add(struct ts_site_key *key, struct task_struct *task, __u64 count, __u64 time_ns);

/* The histogram bucket of a fault of ns nanoseconds (TS_FAULT_BUCKETS in bpf/trapstat.h): 0 under
 * 1 us, else 1 + floor(log2(us)) for us = floor(ns / 1000), capped. Without the division, which
 * costs tens of cycles on every fault: us >= 2^k exactly when ns >= 1000 * 2^k, so the binary
 * search for the highest such k compares ns with 1000 << k. */
static __always_inline __u32 fault_bucket(__u64 ns) {
        __u64 t = 1000; /* 1000 * 2^(b - 1) <= ns */
        __u32 b = 1;

        if (ns < 1000)
                return 0;
        if (ns >= 1000ULL << (TS_FAULT_BUCKETS - 2))
                return TS_FAULT_BUCKETS - 1;
        /* ns < 1000 * 2^22 */
        if (ns >= t << 16) { t <<= 16; b += 16; }
        if (ns >= t << 8) { t <<= 8; b += 8; }
        if (ns >= t << 4) { t <<= 4; b += 4; }
        if (ns >= t << 2) { t <<= 2; b += 2; }
        if (ns >= t << 1) b += 1;
        return b;
}

static __u32 major_cause_of_fault(__u64 address, struct ts_location *memory);
int record_major_site(__u64 ip, __u64 ns, __u32 kind, __u32 dev, __u64 ino);

/* The completion of the current thread's fault at address, as the kernel accounts it (minor or
 * major; a major one's cause, TS_MAJOR_CAUSES when not told): the time since its entry goes to the
 * process, and a major fault's cause is counted. A completion without an entry of its own (nested
 * faults, a source disabled) is not timed. Returns the fault's time, 0 when not timed. */
static __always_inline __u64 fault_done(__u64 address, bool major, __u32 cause) {
        struct fault_start *s = fault_timing ? bpf_task_storage_get(&fault_starts, current_task(), NULL, 0) : NULL;
        struct ts_fault_times *t;
        struct ts_counters *c;
        __u64 d = 0, tick;
        __u32 i, key;
        bool timed = s && s->ns && s->address == address;

        if (timed) {
                d = bpf_ktime_get_ns() - s->ns;
                s->ns = 0;
                /* A sampled fault's time goes to its site too, in the epoch now current: one that
                 * flipped since the entry has its count in the last epoch and its time in this one. */
                if (s->sampled) {
                        s->sampled = 0;
                        site_add(&s->site, current_task(), 0, d);
                }
        } else if (cause >= TS_MAJOR_CAUSES) {
                return 0;
        }
        /* The entry counted the fault, and claimed or created what it counts in (or counted a
         * drop): the completion only adds to what is there. */
        c = existing_counters(&key);
        if (!c)
                return d;
        if (cause < TS_MAJOR_CAUSES)
                c->major_cause[cause]++;
        t = timed ? existing_times(c, key) : NULL;
        if (t) {
                if (cause < TS_MAJOR_CAUSES)
                        t->major_cause_ns[cause] += d;
                if (s->kernel)
                        t->kernel_ns += d;
                else if (major)
                        t->major_ns += d;
                else
                        t->minor_ns += d;
                i = fault_bucket(d);
                if (i < TS_FAULT_BUCKETS)
                        t->buckets[i]++;
                tick = fault_tick;
                i = tick & 1;
                if (t->max_tick[i] != tick) {
                        t->max_tick[i] = tick;
                        t->max_ns[i] = d;
                } else if (d > t->max_ns[i]) {
                        t->max_ns[i] = d;
                }
        }
        slot_counted(c, key);
        return d;
}

/* PAGE_FAULTS_MIN and PAGE_FAULTS_MAJ, one event per CPU each: the kernel raises them in
 * mm_account_fault() once a fault completed (not on a retry, not for get_user_pages()), in the
 * faulting thread, with the faulting address. The MIN one is attached for fault time only, the
 * MAJ one for fault time or major causes. */
SEC("perf_event")
int fault_done_minor(struct bpf_perf_event_data *ctx) {
        fault_done(ctx->addr, false, TS_MAJOR_CAUSES);
        return 0;
}

/* A major fault's completion: its cause and, taken in user mode, its site (the faulting user
 * registers are the event's). One taken in kernel mode (copy_from_user and the like: the
 * instruction is the kernel's, its address has the top bit set) has no site. */
SEC("perf_event")
int fault_done_major(struct bpf_perf_event_data *ctx) {
        __u64 ip = PT_REGS_IP(&ctx->regs), ns;
        bool user = (__s64) ip >= 0;
        struct ts_location memory = { .kind = TS_MEM_UNKNOWN };
        __u32 cause = major_cause_of_fault(ctx->addr, user ? &memory : NULL);

        ns = fault_done(ctx->addr, true, cause);
        if (user)
                (void) record_major_site(ip, ns, memory.kind, memory.dev, memory.ino);
        return 0;
}
#else
/* No task storage to keep a thread's fault start in: fault time is not measured (the daemon
 * leaves the completion programs unloaded). */
static __always_inline struct fault_start *fault_begin(__u64 address, bool kernel) {
        return NULL;
}

SEC("perf_event")
int fault_done_minor(struct bpf_perf_event_data *ctx) {
        return 0;
}

SEC("perf_event")
int fault_done_major(struct bpf_perf_event_data *ctx) {
        return 0;
}
#endif

/* ---- Sites ---- */

#ifndef TS_BASE

/* From the kernel's uapi headers, which vmlinux.h does not carry. */
#define TS_ENOENT 2
#define TS_RLIMIT_STACK 3

/* The inode's change time under the names kernels gave it: i_ctime_sec/i_ctime_nsec since 6.11,
 * __i_ctime from 6.6, i_ctime before. Each through a flavor of its own, so that the object builds
 * against the vmlinux.h of any of them. */
struct inode___ctime_split {
        time64_t i_ctime_sec;
        u32 i_ctime_nsec;
} __attribute__((preserve_access_index));
struct inode___ctime_ts {
        struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));
struct inode___ctime_old {
        struct timespec64 i_ctime;
} __attribute__((preserve_access_index));

static __always_inline void inode_stamp(struct inode *inode, struct ts_file_name *n) {
        if (bpf_core_field_exists(((struct inode___ctime_split *) inode)->i_ctime_sec)) {
                n->ctime_sec = BPF_CORE_READ((struct inode___ctime_split *) inode, i_ctime_sec);
                /* Bit 31 says whether the time was queried (multigrain timestamps, 6.13+), not
                 * part of it. */
                n->ctime_nsec = BPF_CORE_READ((struct inode___ctime_split *) inode, i_ctime_nsec) & ~(1U << 31);
        } else if (bpf_core_field_exists(((struct inode___ctime_ts *) inode)->__i_ctime)) {
                n->ctime_sec = BPF_CORE_READ((struct inode___ctime_ts *) inode, __i_ctime.tv_sec);
                n->ctime_nsec = BPF_CORE_READ((struct inode___ctime_ts *) inode, __i_ctime.tv_nsec);
        } else {
                n->ctime_sec = BPF_CORE_READ((struct inode___ctime_old *) inode, i_ctime.tv_sec);
                n->ctime_nsec = BPF_CORE_READ((struct inode___ctime_old *) inode, i_ctime.tv_nsec);
        }
        n->generation = BPF_CORE_READ(inode, i_generation);
}

/* Puts the path of file into file_names: from its dentry up through the mounts to the root,
 * innermost component first (user space joins them). bpf_d_path() is not allowed here. Once per
 * version of the inode and name: again when its change time or generation moved (an inode
 * number reused, a change) or the dentry's name hash did (a rename, also one within a tick of
 * the coarse clock that leaves the change time as it was), so that the name is the file's
 * current one, never a former file's. */
static __noinline void remember_file_name(struct file *file, __u32 dev, __u64 ino) {
        struct ts_file_key key = { .ino = ino, .dev = dev };
        struct ts_file_name *n, *known;
        struct vfsmount *vfsmnt;
        struct dentry *d, *root;
        struct mount *mnt;
        __u32 zero = 0;

        if (!file)
                return;
        n = bpf_map_lookup_elem(&file_name_scratch, &zero);
        if (!n)
                return;
        inode_stamp(BPF_CORE_READ(file, f_inode), n);
        n->name_hash = BPF_CORE_READ(file, f_path.dentry, d_name.hash_len);
        known = bpf_map_lookup_elem(&file_names, &key);
        if (known && known->ctime_sec == n->ctime_sec && known->ctime_nsec == n->ctime_nsec &&
            known->generation == n->generation && known->name_hash == n->name_hash)
                return;
        n->depth = 0;
        n->truncated = 0;
        d = BPF_CORE_READ(file, f_path.dentry);
        vfsmnt = BPF_CORE_READ(file, f_path.mnt);
        mnt = (void *) vfsmnt - bpf_core_field_offset(struct mount, mnt);
        root = BPF_CORE_READ(vfsmnt, mnt_root);
        /* Each step is a component or a crossing from a mount to its mount point. */
        for (int i = 0; i < 2 * TS_PATH_DEPTH; i++) {
                struct dentry *parent = BPF_CORE_READ(d, d_parent);
                __u32 depth = n->depth;

                /* A dentry in no directory that is not a mount's root: a file made for itself (a
                 * memfd, shared anonymous memory), whose name is all of its path, as the maps
                 * show it ("/memfd:NAME (deleted)"). */
                if (d == parent && d != root && depth == 0) {
                        bpf_probe_read_kernel_str(n->names[0], TS_NAME_LEN, BPF_CORE_READ(d, d_name.name));
                        n->depth = 1;
                        break;
                }
                if (d == root || d == parent) {
                        struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

                        if (up == mnt || !up)
                                break; /* the root of the mount tree */
                        d = BPF_CORE_READ(mnt, mnt_mountpoint);
                        mnt = up;
                        root = BPF_CORE_READ(mnt, mnt.mnt_root);
                        continue;
                }
                if (depth >= TS_PATH_DEPTH) {
                        n->truncated = 1;
                        break;
                }
                bpf_probe_read_kernel_str(n->names[depth & (TS_PATH_DEPTH - 1)], TS_NAME_LEN,
                                          BPF_CORE_READ(d, d_name.name));
                n->depth = depth + 1;
                d = parent;
        }
        /* Fails only when the map is full (a rewrite never needs room). */
        if (bpf_map_update_elem(&file_names, &key, n, BPF_ANY) < 0)
                count_drop(TS_DROP_FILE_NAME, current_task());
}

#ifndef TS_NO_LOOP
/* What a VMA lookup fills in: where addr is. */
struct vma_lookup {
        __u64 addr;
        struct ts_location *loc;
        struct code_mapping *mapping; /* also the VMA itself, when not NULL */
        bool code;                    /* the offset matters (an instruction), not only the kind */
};

/* Fills in l from vma, the VMA of l->addr. */
static __always_inline void vma_locate(struct vm_area_struct *vma, struct vma_lookup *l) {
        struct file *file = BPF_CORE_READ(vma, vm_file);
        struct mm_struct *mm = BPF_CORE_READ(vma, vm_mm);
        __u64 start = BPF_CORE_READ(vma, vm_start), end = BPF_CORE_READ(vma, vm_end), file_start = 0;
        struct ts_location *loc = l->loc;

        if (file) {
                loc->kind = TS_MEM_FILE;
                loc->ino = BPF_CORE_READ(file, f_inode, i_ino);
                loc->dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
                file_start = (__u64) BPF_CORE_READ(vma, vm_pgoff) << page_shift;
                remember_file_name(file, loc->dev, loc->ino);
        } else if (start <= BPF_CORE_READ(mm, brk) && end > BPF_CORE_READ(mm, start_brk))
                loc->kind = TS_MEM_HEAP;
        else if (start <= BPF_CORE_READ(mm, start_stack) && end > BPF_CORE_READ(mm, start_stack))
                loc->kind = TS_MEM_STACK;
        else if (start == ts_arch_vdso_start(mm))
                loc->kind = TS_MEM_VDSO;
        else
                loc->kind = TS_MEM_ANON;
        /* An instruction in a file is named by its file offset; elsewhere by its address. */
        if (l->code)
                loc->offset = file ? l->addr - start + file_start : l->addr;
        if (l->mapping)
                *l->mapping = (struct code_mapping) { .start = start, .end = end, .ino = loc->ino,
                                                      .file_start = file_start, .dev = loc->dev, .kind = loc->kind };
}

static long locate_in_vma(struct task_struct *task, struct vm_area_struct *vma, void *data) {
        vma_locate(vma, data);
        return 0;
}

/* Where addr is in task's memory: one bpf_find_vma(). Only one per run of a program that runs with
 * interrupts off (the tracepoints of faults and signals): the mmap lock it takes there is released
 * by a per-CPU irq_work, which a second lookup would find still pending (-EBUSY). With interrupts
 * on (the completion of a major fault) the lock is released at once, and lookups may follow one
 * another. */
static __always_inline void locate(struct task_struct *task, __u64 addr, bool code, struct ts_location *loc,
                                   struct code_mapping *mapping) {
        struct vma_lookup l = { .addr = addr, .loc = loc, .mapping = mapping, .code = code };
        long err = bpf_find_vma(task, addr, locate_in_vma, &l, 0);

        if (err == -TS_ENOENT) {
                loc->kind = TS_MEM_UNMAPPED;
                loc->offset = code ? addr : 0;
        } else if (err < 0) {
                /* Counted: user space names the instruction from /proc/PID/maps while it can. */
                count_drop(TS_DROP_VMA_LOOKUP, task);
                loc->kind = TS_MEM_UNKNOWN;
                loc->offset = code ? addr : 0;
        }
}
#else
/* No bpf_find_vma() before Linux 5.17: the instruction is named by user space from
 * /proc/PID/maps while the process lives (as after a failed lookup, but not counted as a loss),
 * the memory touched is classified without a lookup (classify()). */
static __always_inline void locate(struct task_struct *task, __u64 addr, bool code, struct ts_location *loc,
                                   struct code_mapping *mapping) {
        loc->kind = TS_MEM_UNKNOWN;
        loc->offset = code ? addr : 0;
}
#endif

/* ---- Major faults by cause ---- */

#ifndef TS_BASE
#ifndef TS_NO_LOOP
/* The magic number of tmpfs, whose files back shared memory: memfd, SysV shm, shared anonymous
 * mappings (shm_mnt) and tmpfs files alike. */
#define TS_TMPFS_MAGIC 0x01021994

/* What a major fault's lookup finds: its cause and, for its site, its memory (where.loc NULL:
 * not wanted). */
struct cause_lookup {
        __u32 cause;
        struct vma_lookup where;
};

static long major_cause_of_vma(struct task_struct *task, struct vm_area_struct *vma, void *data) {
        struct cause_lookup *l = data;
        struct file *file = BPF_CORE_READ(vma, vm_file);

        if (!file)
                l->cause = TS_MAJOR_ANON;
        else if (BPF_CORE_READ(file, f_inode, i_sb, s_magic) == TS_TMPFS_MAGIC)
                l->cause = TS_MAJOR_SHMEM;
        else
                l->cause = TS_MAJOR_FILE;
        if (l->where.loc)
                vma_locate(vma, &l->where);
        return 0;
}

/* What the major fault at address mapped, by its VMA, looked up at the fault's completion (major
 * faults are rare: the lookup costs nothing on the counting path). TS_MAJOR_CAUSES when not
 * counted or when the lookup fails (the mapping's lock contended: counted as a drop). The same
 * VMA fills in memory (unless NULL) for the fault's site, as a site's lookup of the faulting
 * address would: the site's own lookup is left for its instruction; memory stays as it was when
 * the lookup fails. */
static __noinline __u32 major_cause_of_fault(__u64 address, struct ts_location *memory) {
        struct task_struct *task = current_task();
        struct cause_lookup l = { .cause = TS_MAJOR_CAUSES, .where = { .addr = address, .loc = memory } };

        if (!major_cause)
                return TS_MAJOR_CAUSES;
        if (bpf_find_vma(task, address, major_cause_of_vma, &l, 0) < 0) {
                count_drop(TS_DROP_CAUSE_LOOKUP, task);
                return TS_MAJOR_CAUSES;
        }
        return l.cause;
}
#else
/* No bpf_find_vma() before Linux 5.17: the cause is not told (the daemon reports it null). */
static __noinline __u32 major_cause_of_fault(__u64 address, struct ts_location *memory) {
        return TS_MAJOR_CAUSES;
}
#endif
#endif

/* Lowest address a mapping may have by default (vm.mmap_min_addr): below it nothing is mapped,
 * e.g. a null pointer plus a small offset. */
#define TS_MMAP_MIN_ADDR 65536

/* What addr is in, without a VMA lookup (the program's one went to the instruction, whose VMA
 * is in code): the instruction's own mapping, the null page, the heap, the main thread's stack,
 * the executable's image; else not known. */
static __noinline void classify(struct task_struct *task, __u64 addr, const struct code_mapping *code,
                                struct ts_location *loc) {
        struct mm_struct *mm = BPF_CORE_READ(task, mm);
        __u64 stack = BPF_CORE_READ(mm, start_stack), stack_limit;

        loc->offset = 0;
        if (addr >= code->start && addr < code->end) {
                loc->kind = code->kind;
                loc->ino = code->ino;
                loc->dev = code->dev;
                return;
        }
        if (addr < TS_MMAP_MIN_ADDR) {
                loc->kind = TS_MEM_UNMAPPED;
                return;
        }
        if (addr >= BPF_CORE_READ(mm, start_brk) && addr < BPF_CORE_READ(mm, brk)) {
                loc->kind = TS_MEM_HEAP;
                return;
        }
        /* The main stack grows down from start_stack to at most its rlimit; above start_stack
         * are the arguments and the environment. */
        stack_limit = BPF_CORE_READ(task, signal, rlim[TS_RLIMIT_STACK].rlim_cur);
        if (stack_limit > (1ULL << 30))
                stack_limit = 1ULL << 30;
        if (addr < BPF_CORE_READ(mm, env_end) && addr + stack_limit >= stack) {
                loc->kind = TS_MEM_STACK;
                return;
        }
        if ((addr >= BPF_CORE_READ(mm, start_code) && addr < BPF_CORE_READ(mm, end_code)) ||
            (addr >= BPF_CORE_READ(mm, start_data) && addr < BPF_CORE_READ(mm, end_data))) {
                struct file *exe = BPF_CORE_READ(mm, exe_file);

                if (exe) {
                        loc->kind = TS_MEM_FILE;
                        loc->ino = BPF_CORE_READ(exe, f_inode, i_ino);
                        loc->dev = BPF_CORE_READ(exe, f_inode, i_sb, s_dev);
                        remember_file_name(exe, loc->dev, loc->ino);
                        return;
                }
        }
        loc->kind = TS_MEM_UNKNOWN;
}

/* The epoch this program counts a site in, announced in active[] so that user space does not
 * drain it meanwhile (struct ts_site_epochs); -1 when user space flipped it three times in a row
 * under us (it flips once a tick). Atomics that return their value: those are fully ordered. */
static __always_inline int site_epoch_enter(void) {
        for (int i = 0; i < 3; i++) {
                __u32 e = *(volatile __u32 *) &site_epochs.epoch & 1, old;

                old = __sync_fetch_and_add(&site_epochs.active[e], 1);
                barrier_var(old);
                if ((*(volatile __u32 *) &site_epochs.epoch & 1) == e)
                        return e;
                old = __sync_fetch_and_add(&site_epochs.active[e], -1);
                barrier_var(old);
        }
        return -1;
}

/* After the program's last write to the epoch's entries. */
static __always_inline void site_epoch_leave(__u32 e) {
        __u32 old = __sync_fetch_and_add(&site_epochs.active[e & 1], -1);

        barrier_var(old);
}

/* Takes one from a share: the entry's count goes up first, so that CPUs creating entries at the
 * same time cannot all pass the limit; false (and the count as it was) when it was full. A share
 * whose entry cannot be had is not limited: the hash still is. */
static __always_inline bool share_take(void *map, struct ts_site_quota_key *key, __u32 limit,
                                       struct ts_site_quota **ret) {
        struct ts_site_quota *q, none = {};

        *ret = NULL;
        q = bpf_map_lookup_elem(map, key);
        if (!q) {
                (void) bpf_map_update_elem(map, key, &none, BPF_NOEXIST);
                q = bpf_map_lookup_elem(map, key);
                if (!q)
                        return true;
        }
        if (__sync_fetch_and_add(&q->n, 1) >= limit) {
                __sync_fetch_and_add(&q->n, -1);
                return false;
        }
        *ret = q;
        return true;
}

static __always_inline void share_give_back(struct ts_site_quota *q) {
        if (q)
                __sync_fetch_and_add(&q->n, -1);
}

/* Root, or a member of group trapstat (its real or a supplementary group), as the daemon's socket
 * tells who is privileged: those keep the reserve of the site hash and have no per-user share. */
#define TS_MAX_GROUPS 32
static __noinline bool task_privileged(struct task_struct *task) {
        const struct cred *cred = BPF_CORE_READ(task, real_cred);
        struct group_info *groups;
        __u32 gid = site_epochs.privileged_gid;
        int n;

        if (BPF_CORE_READ(cred, uid.val) == 0)
                return true;
        if (!site_epochs.privileged_group)
                return false;
        if (BPF_CORE_READ(cred, gid.val) == gid)
                return true;
        groups = BPF_CORE_READ(cred, group_info);
        n = BPF_CORE_READ(groups, ngroups);
        for (int i = 0; i < TS_MAX_GROUPS && i < n; i++) {
                kgid_t g;

                if (bpf_probe_read_kernel(&g, sizeof(g), &groups->gid[i]) < 0)
                        break;
                if (g.val == gid)
                        return true;
        }
        return false;
}

/* Whether a new entry may be created in epoch e for the process of key: within its process's
 * share, its user's share (unless privileged), the epoch's room and, unless privileged, short of
 * the reserve. The shares taken are in ret_process and ret_user, given back when the entry is not
 * created after all. The refusal is counted. */
static __noinline bool site_shares_take(struct ts_site_key *key, struct task_struct *task, __u32 e,
                                        struct ts_site_quota **ret_process, struct ts_site_quota **ret_user) {
        struct ts_site_quota_key pkey = { .id = key->tgid, .epoch = e, .start_time = key->start_time };
        struct ts_site_quota_key ukey = { .id = BPF_CORE_READ(task, real_cred, uid.val), .epoch = e };
        struct ts_site_quota *process, *user = NULL;
        bool privileged = ukey.id == 0; /* the rest is looked at only when it matters */
        __u32 held;

        if (!share_take(&site_quota, &pkey, max_sites_per_process, &process)) {
                count_drop(TS_DROP_SITE_QUOTA, task);
                return false;
        }
        if (!privileged && !share_take(&site_user_quota, &ukey, max_sites_per_user, &user)) {
                privileged = task_privileged(task);
                if (!privileged) {
                        share_give_back(process);
                        count_drop(TS_DROP_SITE_USER_QUOTA, task);
                        return false;
                }
        }
        held = __sync_fetch_and_add(&site_epochs.entries[e & 1], 1);
        if (held >= max_sites || (held >= max_sites_shared && !privileged && !task_privileged(task))) {
                __sync_fetch_and_add(&site_epochs.entries[e & 1], -1);
                share_give_back(user);
                share_give_back(process);
                count_drop(held >= max_sites ? TS_DROP_SITES_FULL : TS_DROP_SITE_RESERVE, task);
                return false;
        }
        *ret_process = process;
        *ret_user = user;
        return true;
}

/* Adds count events and time_ns nanoseconds to the site of key in the current epoch, created
 * within the process's and its user's shares when it is not there. Returns whether it was
 * added. */
static __noinline bool site_add_epoch(struct ts_site_key *key, struct task_struct *task, __u64 count, __u64 time_ns) {
        struct ts_site_quota *process, *user;
        struct ts_site *v, zero = {};
        int e = site_epoch_enter();
        bool added = false;
        long err;

        if (e < 0) {
                count_drop(TS_DROP_SITES_FULL, task);
                return false;
        }
        key->epoch = e;
        v = bpf_map_lookup_elem(&sites, key);
        if (!v) {
                if (!site_shares_take(key, task, e, &process, &user))
                        goto out;
                /* -EEXIST: another CPU created it meanwhile, with its own shares. */
                err = bpf_map_update_elem(&sites, key, &zero, BPF_NOEXIST);
                if (err < 0) {
                        __sync_fetch_and_add(&site_epochs.entries[e & 1], -1);
                        share_give_back(user);
                        share_give_back(process);
                }
                v = bpf_map_lookup_elem(&sites, key);
                if (!v) {
                        count_drop(TS_DROP_SITES_FULL, task);
                        goto out;
                }
        }
        if (count)
                __sync_fetch_and_add(&v->count, count);
        if (time_ns)
                __sync_fetch_and_add(&v->time_ns, time_ns);
        added = true;
out:
        site_epoch_leave(e);
        return added;
}

static void site_add(struct ts_site_key *key, struct task_struct *task, __u64 count, __u64 time_ns) {
        (void) site_add_epoch(key, task, count, time_ns);
}

static __always_inline void count_site(struct ts_site_key *key, struct task_struct *task) {
        site_add(key, task, 1, 0);
}

/* Names the instruction at ip (key->ip) of the process of key. When it is in the code mapping
 * where this process's last site was found (the usual case: a loop touching pages, a function
 * trapping again), that mapping names it without a VMA lookup: true. Otherwise the lookup goes to
 * the instruction and its mapping, also written to *code, is remembered: false. */
static __always_inline bool locate_instruction(struct task_struct *task, __u64 ip, struct ts_site_key *key,
                                               struct code_mapping *code) {
        struct ts_proc_key pkey = { .tgid = key->tgid, .start_time = key->start_time };
        struct code_mapping *cached = bpf_map_lookup_elem(&code_mappings, &pkey);

        if (cached && ip >= cached->start && ip < cached->end) {
                key->ip.kind = cached->kind;
                key->ip.ino = cached->ino;
                key->ip.dev = cached->dev;
                key->ip.offset = cached->kind == TS_MEM_FILE ? ip - cached->start + cached->file_start : ip;
                return true;
        }
        locate(task, ip, true, &key->ip, code);
        if (key->ip.kind != TS_MEM_UNKNOWN && key->ip.kind != TS_MEM_UNMAPPED)
                (void) bpf_map_update_elem(&code_mappings, &pkey, code, BPF_ANY);
        return false;
}

/* Fills in where a trap or a sampled fault happened: the instruction at ip and, when there is an
 * address, the memory it is in. A program run may make one VMA lookup (see locate()): when the
 * instruction's mapping is remembered (locate_instruction()) the lookup goes to the address, so
 * the memory is exact; otherwise it went to the instruction, and the memory is classified without
 * one (classify()). */
static __noinline void locate_site(struct task_struct *task, __u64 ip, __u64 addr, bool has_addr,
                                   struct ts_site_key *key) {
        struct code_mapping code = {};

        if (locate_instruction(task, ip, key, &code)) {
                if (has_addr)
                        locate(task, addr, false, &key->memory, NULL);
                else
                        key->memory.kind = TS_MEM_NONE;
                return;
        }
        if (has_addr)
                classify(task, addr, &code, &key->memory);
        else
                key->memory.kind = TS_MEM_NONE;
}

/* A trap's site: its instruction (the trapping thread's user registers, where the architecture
 * header says the trapping instruction is) and si_addr's memory. */
static __noinline void record_trap_site(struct task_struct *task, __u32 vector, __u64 addr, bool has_addr) {
        struct pt_regs *regs = (struct pt_regs *) bpf_task_pt_regs(task);
        struct ts_site_key key = {};
        __u64 ip = ts_arch_trap_ip(vector, PT_REGS_IP_CORE(regs));

        key.tgid = BPF_CORE_READ(task, tgid);
        key.start_time = BPF_CORE_READ(task, group_leader, start_boottime);
        key.kind = TS_SITE_TRAP;
        key.vector = vector;
        locate_site(task, ip, addr, has_addr, &key);
        count_site(&key, task);
}

/* A sampled fault's site: the faulting instruction and the memory of the faulting address. The
 * fault's start (NULL when faults are not timed) remembers it, for its completion to add the
 * fault's time to it. */
static __noinline void record_fault_site(__u64 address, __u64 ip, struct fault_start *start) {
        struct task_struct *task = current_task();
        struct ts_site_key key = {};

        key.tgid = BPF_CORE_READ(task, tgid);
        key.start_time = BPF_CORE_READ(task, group_leader, start_boottime);
        key.kind = TS_SITE_FAULT;
        key.vector = 14; /* #PF */
        locate_site(task, ip, address, true, &key);
        if (site_add_epoch(&key, task, 1, 0) && start) {
                start->site = key;
                start->sampled = 1;
        }
}

#ifndef TS_NO_LOOP
/* A major fault's site, every one taken in user mode: the faulting instruction, and the memory
 * (kind, dev, ino) the faulting address was in as the cause's lookup of it found it (TS_MEM_UNKNOWN
 * when that failed), with the fault's time ns (0: not timed). Only with the causes: their lookup
 * gives the memory, and the site's own lookup goes to the instruction when the process's
 * remembered code mapping does not name it (the completion runs with interrupts on: a second
 * lookup may follow the first, see locate()). A global function, verified once on its own: as a
 * static one it would be verified again for every state its caller reaches it in (timed or not,
 * each cause), past the verifier's limit. Scalars only, for that. */
__noinline int record_major_site(__u64 ip, __u64 ns, __u32 kind, __u32 dev, __u64 ino) {
        struct task_struct *task = current_task();
        struct ts_site_key key = {};
        struct code_mapping code = {};

        if (!major_cause)
                return 0;
        key.tgid = BPF_CORE_READ(task, tgid);
        key.start_time = BPF_CORE_READ(task, group_leader, start_boottime);
        key.kind = TS_SITE_MAJOR;
        key.vector = 14; /* #PF */
        key.memory.kind = kind;
        key.memory.ino = ino;
        key.memory.dev = dev;
        (void) locate_instruction(task, ip, &key, &code);
        site_add(&key, task, 1, ns);
        return 0;
}
#else
/* Without bpf_find_vma() the causes are not told, and major faults have no sites. */
__noinline int record_major_site(__u64 ip, __u64 ns, __u32 kind, __u32 dev, __u64 ino) {
        return 0;
}
#endif
#else
/* Sites take atomic fetch operations (the epochs, the shares) and bpf_task_pt_regs(): none here
 * (fault_sites is false, trap sites inactive). */
static __always_inline void record_fault_site(__u64 address, __u64 ip, struct fault_start *start) {
}

static __always_inline void record_trap_site(struct task_struct *task, __u32 vector, __u64 addr, bool has_addr) {
}
#endif

/* Whether the current task has user memory: kernel threads have none to fault on for anyone. */
static __always_inline bool current_has_mm(void) {
#ifdef TS_BASE
        return BPF_CORE_READ(current_task(), mm) != NULL;
#else
        return current_task()->mm != NULL;
#endif
}

/* Faults taken in user mode: x86's exceptions:page_fault_user. Every architecture builds it (the
 * daemon leaves it unloaded where the kernel lacks the tracepoint); the access breakdown from the
 * error code is the architecture header's. */
SEC("tp_btf/page_fault_user")
int BPF_PROG(page_fault_user, unsigned long address, struct pt_regs *regs, unsigned long error_code) {
        __u32 key;
        struct ts_counters *c = current_counters(&key);
        struct fault_start *start = fault_begin(address, false);

        if (!c)
                return 0;
        c->user_faults++;
        ts_arch_fault_access(c, error_code);
        slot_counted(c, key);
        if (fault_sites && !(c->user_faults & fault_sample_mask))
                record_fault_site(address, PT_REGS_IP_CORE(regs), start);
        return 0;
}

/* Faults taken in kernel mode on behalf of the current process (copy_from_user and friends). */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(page_fault_kernel, unsigned long address, struct pt_regs *regs, unsigned long error_code) {
        struct ts_counters *c;
        __u32 key;

        /* Kernel threads have no user memory to fault on for anyone; don't track them. */
        if (!current_has_mm())
                return 0;
        fault_begin(address, true);
        c = current_counters(&key);
        if (!c)
                return 0;
        c->kernel_faults++;
        slot_counted(c, key);
        return 0;
}

/* The initial value of a trap hash entry: too big for the 512-byte BPF stack. Never written. */
static struct ts_traps zero_traps;

/* Where the x86 exception events are missing (other architectures, older kernels) the perf
 * software event PAGE_FAULTS is the page fault source: one event per CPU for user mode
 * (exclude_kernel) and one for kernel mode (exclude_user). It does not tell the access kind
 * (replies say so: null). Its sample has the faulting user registers: fault sites are sampled
 * as from the exception event. Costlier than the tracepoints: only loaded when they are not
 * there. */
SEC("perf_event")
int perf_page_fault_user(struct bpf_perf_event_data *ctx) {
        __u32 key;
        struct ts_counters *c = current_counters(&key);
        struct fault_start *start = fault_begin(ctx->addr, false);

        if (!c)
                return 0;
        c->user_faults++;
        slot_counted(c, key);
        if (fault_sites && !(c->user_faults & fault_sample_mask))
                record_fault_site(ctx->addr, PT_REGS_IP(&ctx->regs), start);
        return 0;
}

SEC("perf_event")
int perf_page_fault_kernel(struct bpf_perf_event_data *ctx) {
        struct ts_counters *c;
        __u32 key;

        if (!current_has_mm())
                return 0;
        fault_begin(ctx->addr, true);
        c = current_counters(&key);
        if (!c)
                return 0;
        c->kernel_faults++;
        slot_counted(c, key);
        return 0;
}

static __always_inline int signal_index(int sig) {
        switch (sig) {
#define TS_SIGNAL_CASE(name, number)                                                               \
        case number:                                                                               \
                return TS_SIG_##name;
                TS_SIGNALS(TS_SIGNAL_CASE)
#undef TS_SIGNAL_CASE
        default:
                return -1;
        }
}

/* A CPU exception the kernel turned into a signal: SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGTRAP
 * with si_code > 0 (kill(2) and friends send si_code <= 0). Counted whether or not the signal
 * is then delivered, ignored or already pending: the trap happened either way. */
SEC("tp_btf/signal_generate")
int BPF_PROG(signal_generate, int sig, struct kernel_siginfo *info, struct task_struct *task, int group, int result) {
        struct ts_traps *t;
        struct ts_proc_key key;
        int index, code, code_index;
        __u32 vector;

        index = signal_index(sig);
        if (index < 0 || (unsigned long) info <= 1 /* SEND_SIG_NOINFO, SEND_SIG_PRIV */)
                return 0;
        code = BPF_CORE_READ(info, si_code);
        if (code <= 0)
                return 0;

        proc_key_fill(&key, task);
        t = bpf_map_lookup_elem(&traps, &key);
        if (!t) {
                (void) bpf_map_update_elem(&traps, &key, &zero_traps, BPF_NOEXIST);
                t = bpf_map_lookup_elem(&traps, &key);
                if (!t) {
                        count_drop(TS_DROP_TRAPS_FULL, task);
                        return 0;
                }
                /* A process may trap before it faults, and die of the trap: its identity must
                 * not depend on a counting slot or on /proc. Another CPU filling it at the same
                 * time writes the same values. */
                if (!t->id.start_time)
                        ident_fill(&t->id, task);
        }

        /* Logged for user space, as the fallback hash's entries are (hash_counted()). */
        if (t->logged != *(volatile __u32 *) &hash_epoch) {
                __u32 epoch = *(volatile __u32 *) &hash_epoch;

                key._pad0 = TS_LOG_TRAPS;
                if (hash_log_add(&key, epoch))
                        t->logged = epoch;
                key._pad0 = 0;
        }

        vector = ts_arch_trap_vector(task, sig, code, (__u64) BPF_CORE_READ(info, _sifields._sigfault._addr));
        if (vector < TS_N_VECTORS)
                __sync_fetch_and_add(&t->vector[vector], 1);
        else
                __sync_fetch_and_add(&t->vector_unknown, 1);

        code_index = code == TS_SI_KERNEL ? 0 : code < TS_SI_CODE_OTHER ? code : TS_SI_CODE_OTHER;
        /* Bounded by a mask the compiler cannot drop as redundant, not only by the comparisons:
         * 6.1's verifier loses a comparison's bound on the copy the compiler indexes with ("R8
         * unbounded memory access"). */
        _Static_assert((TS_N_SI_CODES & (TS_N_SI_CODES - 1)) == 0, "a mask bounds the si_code slot");
        barrier_var(code_index);
        code_index &= TS_N_SI_CODES - 1;
        if (index < TS_N_SIGNALS)
                __sync_fetch_and_add(&t->signal[index][code_index], 1);

        /* SI_KERNEL signals (int3, #GP) carry no address; the others their si_addr. */
        record_trap_site(task, vector < TS_N_VECTORS ? vector : TS_N_VECTORS,
                         code == TS_SI_KERNEL ? 0 : (__u64) BPF_CORE_READ(info, _sifields._sigfault._addr),
                         code != TS_SI_KERNEL);
        return 0;
}

/* Lifecycle events wake user space in batches (see wakeup_bytes). */
static __always_inline __u64 submit_flags(void) {
        return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

#ifndef TS_BASE
static long clear_owner_copy(__u32 cpu, void *ctx) {
        __u32 key = cpu_slot_key(cpu, *(__u32 *) ctx);
        struct ts_counters *c = bpf_map_lookup_elem(&slot_counters, &key);

        if (c)
                c->owner = 0;
        return 0;
}

/* After the slot's owner is marked exited: no CPU's copy names the process any more, so its
 * faults from here on (kernel-mode ones while it exits) and those of a new process with its pid
 * take the slow path, which finds the slot not theirs (adopt_slot()). */
static __always_inline void clear_owner_copies(__u32 slot) {
#ifndef TS_NO_LOOP
        bpf_loop(n_cpus, clear_owner_copy, &slot, 0);
#else
        /* Written out: the daemon loads this object only with at most TS_NO_LOOP_MAX_CPUS. */
        for (__u32 cpu = 0; cpu < TS_NO_LOOP_MAX_CPUS && cpu < n_cpus; cpu++)
                clear_owner_copy(cpu, &slot);
#endif
}
#endif

/* The last thread of a process is exiting. Mark its slot exited, so that a new process with
 * the same pid cannot count into it, and tell user space to drain the process one last time
 * and free what it used. signal->live reached zero before this tracepoint on every kernel that
 * has it (newer kernels also pass group_dead, older ones don't). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit, struct task_struct *task) {
        struct ts_exit_event *e;
        struct ts_proc_key key;
        bool tracked = false;
#ifndef TS_BASE
        struct ts_owner *owner;
        __u32 slot;
#endif

        if (BPF_CORE_READ(task, signal, live.counter) != 0)
                return 0;
        proc_key_fill(&key, task);
#ifndef TS_BASE
        slot = key.tgid & slot_mask;
        owner = bpf_map_lookup_elem(&slot_owner, &slot);
        if (owner && owner->tgid == key.tgid) {
                __sync_lock_test_and_set(&owner->tgid, key.tgid | TS_OWNER_EXITED);
                clear_owner_copies(slot);
                tracked = true;
        }
#endif
        tracked = tracked || bpf_map_lookup_elem(&processes, &key) || bpf_map_lookup_elem(&traps, &key);
        if (!tracked)
                return 0;

        e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                count_drop(TS_DROP_EXIT_EVENT, task);
                return 0;
        }
        e->h.type = TS_EVENT_EXIT;
        e->h.tgid = key.tgid;
        e->h.start_time = key.start_time;
        group_faults(task, &e->min_flt, &e->maj_flt, &e->delays);
        /* The live threads' sum leaves out the exiting one: the whole process is in signal->stats. */
        exit_delays(task, &e->delays);
        e->uid = BPF_CORE_READ(task, group_leader, real_cred, uid.val);
        e->_pad0 = 0;
        BPF_CORE_READ_STR_INTO(&e->comm, task, group_leader, comm);
        bpf_ringbuf_submit(e, submit_flags());
        return 0;
}

/* A process ran execve(): its command name and line changed (by now the exec'ing thread is the
 * group leader and comm is the new one). The event carries the arguments, because a process
 * that exits within a tick is gone from /proc before user space could read them. The process
 * is tracked from here on. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm) {
        unsigned long arg_start, arg_end, len;
        struct ts_exec_event *e;
        struct ts_proc_key key;
        struct mm_struct *mm;
        __u32 slot_key;

        /* The old program's code is gone: a mapping remembered for it would name the new one's. */
        proc_key_fill(&key, task);
        (void) bpf_map_delete_elem(&code_mappings, &key);
        /* Tracked from here on: a slot claimed (user space finds its new owner) or a hash entry. */
        if (!current_counters(&slot_key))
                return 0;
        e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                count_drop(TS_DROP_EXEC_EVENT, task);
                return 0;
        }
        e->h.type = TS_EVENT_EXEC;
        e->h.tgid = BPF_CORE_READ(task, tgid);
        e->h.start_time = BPF_CORE_READ(task, group_leader, start_boottime);
        e->uid = BPF_CORE_READ(task, real_cred, uid.val);
        BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
        e->cgroup_id = task_cgroup_id(task);
        cgroup_unit(task, e->unit);

        mm = BPF_CORE_READ(task, mm);
        arg_start = BPF_CORE_READ(mm, arg_start);
        arg_end = BPF_CORE_READ(mm, arg_end);
        len = arg_end > arg_start ? arg_end - arg_start : 0;
        if (len > TS_ARGS_LEN)
                len = TS_ARGS_LEN;
        if (bpf_probe_read_user(e->args, len, (void *) arg_start) < 0)
                len = 0;
        e->args_len = len;
        bpf_ringbuf_submit(e, submit_flags());
        return 0;
}

/* Every tick user space reads this iterator: one record per tracked process with the kernel's
 * fault accounting, current name and user. It costs a fraction of a microsecond per task, where
 * formatting /proc/PID/stat costs about ten per process. */
SEC("iter/task")
int tracked_tasks(struct bpf_iter__task *ctx) {
        struct task_struct *task = ctx->task;
        struct ts_task_record r;
        struct ts_owner *owner;
        struct ts_proc_key key;
        __u32 slot;

        /* One record per process: its group leader (threads are summed by group_faults). */
        if (!task || task != task->group_leader)
                return 0;
        key.tgid = task->tgid;
        key._pad0 = 0;
        key.start_time = task->start_boottime; /* task is the leader */
        slot = key.tgid & slot_mask;
        owner = bpf_map_lookup_elem(&slot_owner, &slot);
        if (!(owner && (owner->tgid & ~TS_OWNER_EXITED) == key.tgid) && !bpf_map_lookup_elem(&processes, &key) &&
            !bpf_map_lookup_elem(&traps, &key))
                return 0;

        task_record_fill(task, &r);
        bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
        return 0;
}

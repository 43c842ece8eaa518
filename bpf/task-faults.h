/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
#pragma once
/* The kernel's fault accounting of a whole process, and the record user space reads it in: shared
 * by trapstat.bpf.c (the exit event, the task iterator's sweep) and task-reads.bpf.c (the
 * processes active in a tick). Included after vmlinux.h, the libbpf headers and trapstat.h. */

/* The kernel's minor and major faults of a whole process, as getrusage(RUSAGE_SELF) and wait4()
 * count them: those of every thread still in the thread group plus those of threads already
 * reaped (signal->min_flt). Reaping a thread moves its counts into signal and unlinks it under
 * signal->stats_lock, a seqlock: a sum that saw a writer is taken again. This stays exact when a
 * thread that already passed its own exit is slow to finish it (a large file table to close),
 * which adding up the exiting thread, the leader and signal alone is not. */
/* PF_EXITING in task_struct.flags (include/linux/sched.h): set as a thread starts to exit, before
 * the kernel moves its delay accounting into signal->stats (taskstats_exit()). */
#define TS_PF_EXITING 0x00000004

/* One thread's delay accounting (task_struct.delays, NULL where the kernel keeps none for it)
 * added to d. The member exists only in kernels built with CONFIG_TASK_DELAY_ACCT (the collector
 * says so from the kernel's BTF); compact_delay is Linux 5.12's, the others are in every kernel
 * with BTF. */
static __always_inline void delays_add_thread(struct ts_delays *d, struct task_struct *t) {
        struct task_delay_info *di;

        if (!bpf_core_field_exists(t->delays))
                return;
        di = BPF_CORE_READ(t, delays);
        if (!di)
                return;
        d->ns[TS_STALL_SWAPIN] += BPF_CORE_READ(di, swapin_delay);
        d->count[TS_STALL_SWAPIN] += BPF_CORE_READ(di, swapin_count);
        d->ns[TS_STALL_THRASHING] += BPF_CORE_READ(di, thrashing_delay);
        d->count[TS_STALL_THRASHING] += BPF_CORE_READ(di, thrashing_count);
        d->ns[TS_STALL_RECLAIM] += BPF_CORE_READ(di, freepages_delay);
        d->count[TS_STALL_RECLAIM] += BPF_CORE_READ(di, freepages_count);
        if (bpf_core_field_exists(di->compact_delay)) {
                d->ns[TS_STALL_COMPACT] += BPF_CORE_READ(di, compact_delay);
                d->count[TS_STALL_COMPACT] += BPF_CORE_READ(di, compact_count);
        }
        d->ns[TS_STALL_BLKIO] += BPF_CORE_READ(di, blkio_delay);
        d->count[TS_STALL_BLKIO] += BPF_CORE_READ(di, blkio_count);
}

/* The delay accounting of the threads that exited (signal->stats, which taskstats_exit() keeps
 * once a thread of a group of several exits; NULL before; no member without CONFIG_TASKSTATS). */
static __always_inline void delays_add_exited(struct ts_delays *d, struct signal_struct *sig) {
        struct taskstats *st;

        if (!bpf_core_field_exists(sig->stats))
                return;
        st = BPF_CORE_READ(sig, stats);
        if (!st)
                return;
        d->ns[TS_STALL_SWAPIN] += BPF_CORE_READ(st, swapin_delay_total);
        d->count[TS_STALL_SWAPIN] += BPF_CORE_READ(st, swapin_count);
        d->ns[TS_STALL_THRASHING] += BPF_CORE_READ(st, thrashing_delay_total);
        d->count[TS_STALL_THRASHING] += BPF_CORE_READ(st, thrashing_count);
        d->ns[TS_STALL_RECLAIM] += BPF_CORE_READ(st, freepages_delay_total);
        d->count[TS_STALL_RECLAIM] += BPF_CORE_READ(st, freepages_count);
        if (bpf_core_field_exists(st->compact_delay_total)) {
                d->ns[TS_STALL_COMPACT] += BPF_CORE_READ(st, compact_delay_total);
                d->count[TS_STALL_COMPACT] += BPF_CORE_READ(st, compact_count);
        }
        d->ns[TS_STALL_BLKIO] += BPF_CORE_READ(st, blkio_delay_total);
        d->count[TS_STALL_BLKIO] += BPF_CORE_READ(st, blkio_count);
}

/* A live thread's delays, unless it is exiting: from PF_EXITING on, its delays are on their way
 * into signal->stats, and counting them in both would count them twice. Between PF_EXITING and
 * taskstats_exit() they are in neither: a sum may fall for a moment, never rise too far (user
 * space keeps the largest it saw). */
static __always_inline void delays_add_live(struct ts_delays *d, struct task_struct *t) {
        if (!(BPF_CORE_READ(t, flags) & TS_PF_EXITING))
                delays_add_thread(d, t);
}

#ifndef TS_NO_LOOP
struct fault_sum {
        struct list_head *head, *pos;
        __u64 min_flt, maj_flt;
        struct ts_delays delays;
};

static long add_thread(__u32 index, void *ctx) {
        struct fault_sum *s = ctx;
        struct list_head *pos = s->pos, *next = BPF_CORE_READ(pos, next);
        struct task_struct *t;

        if (!next || next == s->head)
                return 1;
        t = (void *) next - bpf_core_field_offset(struct task_struct, thread_node);
        s->min_flt += BPF_CORE_READ(t, min_flt);
        s->maj_flt += BPF_CORE_READ(t, maj_flt);
        delays_add_live(&s->delays, t);
        s->pos = next;
        return 0;
}

/* One sum over the thread list; whether no writer ran meanwhile. */
static __always_inline bool fault_sum_try(struct task_struct *task, struct signal_struct *sig, struct fault_sum *s) {
        /* Through bpf_probe_read_kernel(): a call, so not merged with the read after the sum. */
        unsigned int seq = BPF_CORE_READ(sig, stats_lock.seqcount.seqcount.sequence);

        s->min_flt = sig->min_flt;
        s->maj_flt = sig->maj_flt;
        s->delays = (struct ts_delays) {};
        delays_add_exited(&s->delays, sig);
        /* Most processes have one thread: then it is task itself (a leader that exited early
         * stays in the list until the process is reaped). */
        if (sig->nr_threads == 1) {
                s->min_flt += task->min_flt;
                s->maj_flt += task->maj_flt;
                delays_add_live(&s->delays, task);
        } else {
                s->head = (void *) BPF_CORE_READ(task, signal) + bpf_core_field_offset(struct signal_struct, thread_head);
                s->pos = s->head;
                bpf_loop(TS_MAX_THREADS, add_thread, s, 0);
        }
        return !(seq & 1) && seq == BPF_CORE_READ(sig, stats_lock.seqcount.seqcount.sequence);
}
#endif

/* The fault and delay accounting of task's process (task: a trusted pointer, from an iterator or
 * a tracepoint). *ret_delays is written where the caller passed it. */
static __noinline void group_faults(struct task_struct *task, __u64 *ret_min, __u64 *ret_maj,
                                    struct ts_delays *ret_delays) {
        /* task is a trusted pointer (iterator, tracepoint): fields are read directly, which
         * costs a load where bpf_probe_read_kernel() costs a call. */
        struct signal_struct *sig = task->signal;
        struct task_struct *leader;
#ifndef TS_NO_LOOP
        struct fault_sum s = {};
#endif

        *ret_delays = (struct ts_delays) {};
        if (!sig) {
                *ret_min = *ret_maj = 0;
                return;
        }
#ifndef TS_NO_LOOP
        /* signal's thread list is in every kernel with BTF (since 3.14); walking it needs
         * bpf_loop (5.17), which the objects built without TS_NO_LOOP may call. */
        if (bpf_core_field_exists(sig->thread_head) && bpf_core_field_exists(task->thread_node)) {
                /* Up to four tries, written out, not a loop: 6.1's verifier checks the control
                 * flow before it drops this branch as dead there, and takes the edge back to a
                 * loop's head after a call for an unbounded loop ("back-edge from insn"). */
                (void) (fault_sum_try(task, sig, &s) || fault_sum_try(task, sig, &s) || fault_sum_try(task, sig, &s) ||
                        fault_sum_try(task, sig, &s));
                *ret_min = s.min_flt;
                *ret_maj = s.maj_flt;
                *ret_delays = s.delays;
                return;
        }
#endif

        /* Without bpf_loop (the objects built with TS_NO_LOOP, for kernels before 5.17): this
         * thread, the leader and those reaped; other live threads' faults and delays are missed. */
        *ret_min = task->min_flt + sig->min_flt;
        *ret_maj = task->maj_flt + sig->maj_flt;
        delays_add_exited(ret_delays, sig);
        delays_add_live(ret_delays, task);
        leader = task->group_leader;
        if (leader != task) {
                *ret_min += leader->min_flt;
                *ret_maj += leader->maj_flt;
                delays_add_live(ret_delays, leader);
        }
}

/* The final delay accounting of a process whose last thread, task, is exiting: by the time its
 * sched_process_exit fires, taskstats_exit() has added it to signal->stats, which then holds the
 * whole process; a process that never had another thread has none, and its one thread's own. */
static __always_inline void exit_delays(struct task_struct *task, struct ts_delays *ret) {
        struct signal_struct *sig = BPF_CORE_READ(task, signal);

        *ret = (struct ts_delays) {};
        if (sig && bpf_core_field_exists(sig->stats) && BPF_CORE_READ(sig, stats))
                delays_add_exited(ret, sig);
        else
                delays_add_thread(ret, task);
}

/* The record of one process whose task_struct is task, its group leader. */
static __always_inline void task_record_fill(struct task_struct *task, struct ts_task_record *r) {
        r->tgid = task->tgid;
        r->start_time = task->start_boottime;
        r->uid = task->real_cred->uid.val;
        group_faults(task, &r->min_flt, &r->maj_flt, &r->delays);
        __builtin_memcpy(r->comm, task->comm, sizeof(r->comm));
}

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
#ifndef TS_NO_LOOP
struct fault_sum {
        struct list_head *head, *pos;
        __u64 min_flt, maj_flt;
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
        s->pos = next;
        return 0;
}

/* One sum over the thread list; whether no writer ran meanwhile. */
static __always_inline bool fault_sum_try(struct task_struct *task, struct signal_struct *sig, struct fault_sum *s) {
        /* Through bpf_probe_read_kernel(): a call, so not merged with the read after the sum. */
        unsigned int seq = BPF_CORE_READ(sig, stats_lock.seqcount.seqcount.sequence);

        s->min_flt = sig->min_flt;
        s->maj_flt = sig->maj_flt;
        /* Most processes have one thread: then it is task itself (a leader that exited early
         * stays in the list until the process is reaped). */
        if (sig->nr_threads == 1) {
                s->min_flt += task->min_flt;
                s->maj_flt += task->maj_flt;
        } else {
                s->head = (void *) BPF_CORE_READ(task, signal) + bpf_core_field_offset(struct signal_struct, thread_head);
                s->pos = s->head;
                bpf_loop(TS_MAX_THREADS, add_thread, s, 0);
        }
        return !(seq & 1) && seq == BPF_CORE_READ(sig, stats_lock.seqcount.seqcount.sequence);
}
#endif

static __noinline void group_faults(struct task_struct *task, __u64 *ret_min, __u64 *ret_maj) {
        /* task is a trusted pointer (iterator, tracepoint): fields are read directly, which
         * costs a load where bpf_probe_read_kernel() costs a call. */
        struct signal_struct *sig = task->signal;
        struct task_struct *leader;
#ifndef TS_NO_LOOP
        struct fault_sum s = {};
#endif

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
                return;
        }
#endif

        /* Without bpf_loop (the objects built with TS_NO_LOOP, for kernels before 5.17): this
         * thread, the leader and those reaped; other live threads' faults are missed. */
        *ret_min = task->min_flt + sig->min_flt;
        *ret_maj = task->maj_flt + sig->maj_flt;
        leader = task->group_leader;
        if (leader != task) {
                *ret_min += leader->min_flt;
                *ret_maj += leader->maj_flt;
        }
}

/* The record of one process whose task_struct is task, its group leader. */
static __always_inline void task_record_fill(struct task_struct *task, struct ts_task_record *r) {
        r->tgid = task->tgid;
        r->start_time = task->start_boottime;
        r->uid = task->real_cred->uid.val;
        group_faults(task, &r->min_flt, &r->maj_flt);
        __builtin_memcpy(r->comm, task->comm, sizeof(r->comm));
}

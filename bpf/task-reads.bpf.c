// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* The kernel's fault accounting of the processes user space names: those that counted in a tick,
 * whose minor/major faults the tick reads (otherwise from /proc/PID/stat, which the kernel
 * formats for every one of them: a third of the daemon's time with 1000 processes faulting every
 * second). User space writes their keys into task_reads (global data, mmap'd) and reads the
 * iterator: one record per process still alive under its key (struct ts_task_record, as the task
 * iterator's sweep writes them), none for one that is gone.
 *
 * The iterator is a task iterator user space attaches to one task of its own (the daemon's main
 * thread): the program runs once per read and looks the processes up by pid. (An iterator over
 * an array's elements would be the plainer shape; some kernels refuse to load those.)
 *
 * An object of its own, loaded only where the kernel has bpf_task_from_pid() (Linux 6.2): the
 * three counting objects run on kernels without it, and libbpf would refuse them for a kfunc it
 * cannot find. */

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "trapstat.h"
#include "task-faults.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

/* The processes to read, the first task_reads_n of them; written by user space before each read. */
struct ts_proc_key task_reads[TS_TASK_READS];
__u32 task_reads_n;

_Static_assert((TS_TASK_READS & (TS_TASK_READS - 1)) == 0, "a mask bounds the index");

static long read_one(__u32 i, void *ctx) {
        struct seq_file *seq = *(struct seq_file **) ctx;
        struct ts_proc_key *want = &task_reads[i & (TS_TASK_READS - 1)];
        struct ts_task_record r;
        struct task_struct *task;

        /* The task whose pid (in the initial namespace, as BPF keys processes) is the tgid: the
         * group leader, if it is still that process and not one that took its pid since. */
        task = bpf_task_from_pid((s32) want->tgid);
        if (!task)
                return 0;
        if (task->tgid == want->tgid && task->start_boottime == want->start_time) {
                task_record_fill(task, &r);
                bpf_seq_write(seq, &r, sizeof(r));
        }
        bpf_task_release(task);
        return 0;
}

SEC("iter/task")
int read_tasks(struct bpf_iter__task *ctx) {
        struct seq_file *seq = ctx->meta->seq;

        /* Once for the one task the iterator is attached to, not again at its end. */
        if (!ctx->task)
                return 0;
        bpf_loop(task_reads_n < TS_TASK_READS ? task_reads_n : TS_TASK_READS, read_one, &seq, 0);
        return 0;
}

/* The pid namespace a process is in (struct ts_pidns_record): the iterator user space attaches to
 * the process by its pidfd (a varlink peer's) visits its threads; the first one writes the record
 * of the process, its group leader's pid. */
SEC("iter/task")
int read_pidns(struct bpf_iter__task *ctx) {
        struct task_struct *task = ctx->task;
        struct ts_pidns_record r = {};
        struct pid *pid;
        struct upid u;

        if (!task || ctx->meta->seq_num > 0)
                return 0;
        pid = BPF_CORE_READ(task, group_leader, thread_pid);
        r.tgid = BPF_CORE_READ(task, tgid);
        r.start_time = BPF_CORE_READ(task, group_leader, start_boottime);
        r.level = BPF_CORE_READ(pid, level);
        if (bpf_probe_read_kernel(&u, sizeof(u), (char *) pid + bpf_core_field_offset(struct pid, numbers) +
                                                         (__u64) r.level * sizeof(struct upid)))
                return 0;
        r.ns = BPF_CORE_READ(u.ns, ns.inum);
        r.pid = (__u32) u.nr;
        bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
        return 0;
}

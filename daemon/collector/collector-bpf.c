/* SPDX-License-Identifier: MIT */
#include "collector-bpf.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel-probe.h"
#include "log.h"
#include "macro.h"
#include "trapstat-base.skel.h"
#include "trapstat-noloop.skel.h"
#include "task-reads.skel.h"
#include "trapstat.skel.h"

#define ALIGN8(x) (((x) + 7) & ~(size_t) 7)

/* The sources that are tracepoints, attached by name. */
static const int tracepoints[] = {
        SOURCE_PAGE_FAULT_USER, SOURCE_PAGE_FAULT_KERNEL, SOURCE_SIGNAL_GENERATE,
        SOURCE_PROCESS_EXIT,    SOURCE_PROCESS_EXEC,
};

/* Every kind of loss BPF counts (enum ts_drop), named and explained for GetStatus. */
static const CollectorDropKind drop_kinds[TS_DROP_MAX] = {
        [TS_DROP_MAP_FULL] = { "fault_map_full",
                               "one page fault not counted: its process found no free counting slot and the fallback "
                               "map was full (--slots, --max-processes)" },
        [TS_DROP_TRAPS_FULL] = { "trap_map_full",
                                 "one trap not counted: the map of trapping processes was full (--max-processes)" },
        [TS_DROP_EXIT_EVENT] = { "exit_event_lost",
                                 "one process exit: the event buffer was full (--event-buffer); the process is marked "
                                 "exited up to 30 s late, its last minor/major faults and a rename since its last tick "
                                 "are missing" },
        [TS_DROP_EXEC_EVENT] = { "exec_event_lost",
                                 "one exec: the event buffer was full (--event-buffer); the new name and command line "
                                 "are read from /proc, and are missing if the process is already gone" },
        [TS_DROP_SITES_FULL] = { "site_map_full",
                                 "the site of one trap, fault sample or major fault not recorded: the map of sites was "
                                 "full (--max-sites); the event itself is counted" },
        [TS_DROP_SITE_QUOTA] = { "site_process_limit",
                                 "the site of one trap, fault sample or major fault not recorded: its process had created its "
                                 "share of the map of sites in this tick already (--max-sites-per-process); the event "
                                 "itself is counted" },
        [TS_DROP_SITE_USER_QUOTA] = { "site_user_limit",
                                      "the site of one trap, fault sample or major fault not recorded: its user (not root, not "
                                      "group trapstat) had created its share of the map of sites in this tick already "
                                      "(--max-sites-per-user); the event itself is counted" },
        [TS_DROP_SITE_RESERVE] = { "site_reserve",
                                   "the site of one trap, fault sample or major fault of a user who is not root nor in group "
                                   "trapstat not recorded: only their reserve of the map of sites was left "
                                   "(--site-reserve); the event itself is counted" },
        [TS_DROP_VMA_LOOKUP] = { "site_lookup_failed",
                                 "the kernel's lookup of a site's memory mapping failed (busy: another BPF program "
                                 "held it); the instruction is named from /proc/PID/maps while the process lives, "
                                 "else shows as [unknown]; the memory a fault touched shows as [unknown]" },
        [TS_DROP_CAUSE_LOOKUP] = { "major_cause_untold",
                                   "the kernel's lookup of a major fault's memory mapping failed (its lock was "
                                   "contended, or the mapping was gone); the fault is counted, its cause "
                                   "(Faults.majorByCause) not told, and its site shows memory [unknown]" },
        [TS_DROP_FILE_NAME] = { "site_name_lost",
                                "the path of one mapped file not recorded: the map of file names was full; its "
                                "sites name the file by device and inode" },
};

/* libbpf's messages with a priority, so that the journal files them like ours: its warnings
 * matter, its debug output (hundreds of lines per load) only with --verbose. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        int priority = level == LIBBPF_WARN   ? LOG_LEVEL_WARNING
                       : level == LIBBPF_INFO ? LOG_LEVEL_INFO
                                              : LOG_LEVEL_DEBUG;
        _cleanup_free_ char *text = NULL;
        va_list copy;
        int r;

        if (priority > log_get_max_level())
                return 0;
        va_copy(copy, ap);
        r = vasprintf(&text, fmt, copy);
        va_end(copy);
        if (r < 0) {
                /* Out of memory: the message as it is, with an empty line after it. */
                (void) log_internalv(priority, 0, fmt, ap);
                return 0;
        }
        /* One line per log line (a verifier log has hundreds), each with the priority; libbpf
         * ends its lines with a newline, log.c adds its own. */
        for (char *line = text, *eol; *line; line = eol + (*eol == '\n')) {
                eol = strchrnul(line, '\n');
                (void) log_internal(priority, 0, "%.*s", (int) (eol - line), line);
        }
        return 0;
}

void collector_bpf_set_source(CollectorBpf *b, int i, int error, const char *why) {
        b->sources[i].name = collector_source_names[i];
        b->sources[i].active = error == 0;
        b->sources[i].reason = NULL;
        if (error != 0) {
                if (error == -ECANCELED)
                        snprintf(b->reasons[i], sizeof(b->reasons[i]), "%s", why);
                else
                        snprintf(b->reasons[i], sizeof(b->reasons[i]), "%s: %s", why, strerror(abs(error)));
                b->sources[i].reason = b->reasons[i];
        }
}

/* A completion program not used: not loaded. */
static void skip_done_prog(CollectorBpf *b, size_t i) {
        if (!b->done_progs[i])
                return;
        bpf_program__set_autoload(b->done_progs[i], false);
        b->done_progs[i] = NULL;
}

/* A source that is not loaded: inactive for the reason given. */
static void skip_source(CollectorBpf *b, int s, int error, const char *why) {
        collector_bpf_set_source(b, s, error, why);
        switch (s) {
        case SOURCE_FAULT_TIME:
                /* The entries then take no start times either. */
                b->skel->rodata->fault_timing = false;
                skip_done_prog(b, 0);
                if (!b->skel->rodata->major_cause)
                        skip_done_prog(b, 1);
                return;
        case SOURCE_MAJOR_CAUSE:
                b->skel->rodata->major_cause = false;
                if (!b->skel->rodata->fault_timing)
                        skip_done_prog(b, 1);
                return;
        case SOURCE_DELAY_ACCOUNTING:
                /* No program: the task records read it whatever the choice; the collector does not
                 * count it (collector_bpf_delay_accounting_usable()). */
                return;
        default:
                bpf_program__set_autoload(b->progs[s], false);
                b->progs[s] = NULL;
        }
}

/* Object o through trapstat_bpf's skeleton: libbpf finds its maps and programs by name and maps
 * its variables into the skeleton's structs, which bpf/check-skeletons.py makes sure the three
 * objects share. */
static struct trapstat_bpf *open_object(BpfObject o) {
        struct trapstat_bpf *skel = calloc(1, sizeof(*skel));
        int r;

        if (!skel) {
                errno = ENOMEM;
                return NULL;
        }
        r = trapstat_bpf__create_skeleton(skel);
        if (r >= 0) {
                if (o == BPF_OBJECT_NOLOOP)
                        skel->skeleton->data = trapstat_noloop_bpf__elf_bytes(&skel->skeleton->data_sz);
                else if (o == BPF_OBJECT_BASE)
                        skel->skeleton->data = trapstat_base_bpf__elf_bytes(&skel->skeleton->data_sz);
                r = bpf_object__open_skeleton(skel->skeleton, NULL);
        }
        if (r < 0) {
                trapstat_bpf__destroy(skel);
                errno = -r;
                return NULL;
        }
        return skel;
}

static int size_maps(CollectorBpf *b, const CollectorBpfConfig *config) {
        int r;

        if ((r = bpf_map__set_max_entries(b->skel->maps.events, config->event_buffer)) < 0 ||
            (r = bpf_map__set_max_entries(b->skel->maps.slot_owner, b->n_slots)) < 0 ||
            (r = bpf_map__set_max_entries(b->skel->maps.slot_ident, b->n_slots)) < 0 ||
            (r = bpf_map__set_max_entries(b->skel->maps.slot_counters, b->n_slots * (uint32_t) b->n_cpus)) < 0 ||
            (r = bpf_map__set_max_entries(b->skel->maps.slot_dirty, collector_bpf_dirty_words(b))) < 0 ||
            (r = bpf_map__set_max_entries(b->skel->maps.processes, config->max_processes)) < 0 ||
            (r = bpf_map__set_max_entries(b->skel->maps.hash_log, 2 * (uint32_t) b->n_cpus)) < 0 ||
            (r = bpf_map__set_max_entries(b->skel->maps.traps, config->max_processes)) < 0 ||
            /* Two epochs' worth: the one being drained takes no room from the next. */
            (r = bpf_map__set_max_entries(b->skel->maps.sites, 2 * config->max_sites)) < 0 ||
            /* Shares of two epochs at once. */
            (r = bpf_map__set_max_entries(b->skel->maps.site_quota, 2 * config->max_processes)) < 0)
                return r;
        return bpf_map__set_max_entries(b->skel->maps.site_user_quota, 2 * config->max_processes);
}

int collector_bpf_open(const CollectorBpfConfig *config, CollectorBpf **ret) {
        CollectorBpf *b;
        int r;

        libbpf_set_print(libbpf_print);

        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->n_slots = config->n_slots;
        b->n_cpus = libbpf_num_possible_cpus();
        if (b->n_cpus <= 0) {
                r = b->n_cpus < 0 ? b->n_cpus : -EINVAL;
                goto fail;
        }
        b->perf_links = calloc(2 * (size_t) b->n_cpus, sizeof(struct bpf_link *));
        b->done_links = calloc(2 * (size_t) b->n_cpus, sizeof(struct bpf_link *));
        if (!b->perf_links || !b->done_links) {
                r = -ENOMEM;
                goto fail;
        }

        kernel_probe(&b->caps);
        if (kernel_caps_object(&b->caps, b->n_cpus, config->object, &b->object, NULL) < 0) {
                r = -ENOEXEC;
                goto fail;
        }
        b->skel = open_object(b->object);
        if (!b->skel) {
                r = -errno;
                goto fail;
        }
        /* Every CPU's copy of every slot in one array, whose size the kernel keeps in 32 bits. */
        if ((uint64_t) b->n_slots * (uint64_t) b->n_cpus > UINT32_MAX / 2) {
                r = log_error_errno(-E2BIG, "--slots %" PRIu32 " is too many for %d CPUs: at most %" PRIu64,
                                    b->n_slots, b->n_cpus, (uint64_t) UINT32_MAX / 2 / (uint64_t) b->n_cpus);
                goto fail;
        }
        b->skel->rodata->slot_mask = b->n_slots - 1;
        b->skel->rodata->slot_bits = (uint32_t) __builtin_ctz(b->n_slots);
        b->skel->rodata->n_cpus = (uint32_t) b->n_cpus;
        b->skel->rodata->wakeup_bytes = config->event_buffer / 16;
        b->fault_sample = config->fault_sample;
        kernel_caps_features(&b->caps, b->object, b->n_cpus, config->fault_sample > 0, b->features, b->feature_reasons);
        b->skel->rodata->fault_sites = b->features[FEATURE_FAULT_SITES].active;
        b->skel->rodata->fault_sample_mask = config->fault_sample > 0 ? config->fault_sample - 1 : 0;
        b->skel->rodata->max_sites_per_process = config->max_sites_per_process;
        b->skel->rodata->max_sites_per_user = config->max_sites_per_user;
        b->skel->rodata->max_sites_shared = config->max_sites - config->site_reserve;
        b->skel->rodata->max_sites = config->max_sites;
        b->skel->rodata->page_shift = (uint32_t) __builtin_ctzl((unsigned long) sysconf(_SC_PAGESIZE));
        if ((r = size_maps(b, config)) < 0)
                goto fail;

        b->progs[SOURCE_PAGE_FAULT_USER] = b->skel->progs.page_fault_user;
        b->progs[SOURCE_PAGE_FAULT_KERNEL] = b->skel->progs.page_fault_kernel;
        b->progs[SOURCE_PERF_USER] = b->skel->progs.perf_page_fault_user;
        b->progs[SOURCE_PERF_KERNEL] = b->skel->progs.perf_page_fault_kernel;
        b->progs[SOURCE_SIGNAL_GENERATE] = b->skel->progs.signal_generate;
        b->progs[SOURCE_PROCESS_EXIT] = b->skel->progs.sched_process_exit;
        b->progs[SOURCE_PROCESS_EXEC] = b->skel->progs.sched_process_exec;
        b->progs[SOURCE_TASK_ITERATOR] = b->skel->progs.tracked_tasks;
        b->done_progs[0] = b->skel->progs.fault_done_minor;
        b->done_progs[1] = b->skel->progs.fault_done_major;
        *ret = b;
        return 0;
fail:
        collector_bpf_free(b);
        return r;
}

/* Each tracepoint is checked in the kernel's BTF before loading, so one the kernel lacks
 * (e.g. the x86 exception events elsewhere) turns into an inactive source, not a load failure. */
static bool kernel_has_tracepoint(const struct btf *vmlinux, const char *tp) {
        char name[128];

        snprintf(name, sizeof(name), "btf_trace_%s", tp);
        return vmlinux && btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) >= 0;
}

/* Whether the kernel's struct has the member (a configuration option of the kernel may remove it). */
static bool kernel_has_member(const struct btf *vmlinux, const char *type, const char *member) {
        const struct btf_type *t;
        const struct btf_member *m;
        int id;

        id = vmlinux ? btf__find_by_name_kind(vmlinux, type, BTF_KIND_STRUCT) : -1;
        if (id < 0)
                return false;
        t = btf__type_by_id(vmlinux, (uint32_t) id);
        m = btf_members(t);
        for (uint16_t i = 0; i < btf_vlen(t); i++)
                if (strcmp(btf__name_by_offset(vmlinux, m[i].name_off) ?: "", member) == 0)
                        return true;
        return false;
}

static const char *const choice_reasons[] = {
        [SOURCE_DISABLED] = "disabled by --disable-source",
        [SOURCE_NOT_ENABLED] = "off by default; --enable-source fault_time turns it on",
};

void collector_bpf_choose_sources(CollectorBpf *b, const SourceChoice sources[static _SOURCE_MAX]) {
        struct btf *vmlinux;

        /* Decide before loading what is loaded: a source not chosen or a tracepoint the kernel
         * lacks is not; the perf fallback only where its tracepoint is used. */
        for (int s = 0; s < _SOURCE_MAX; s++)
                /* /proc/PID/stat is no program: read for the processes active in each tick. */
                if (sources[s] != SOURCE_USED && s != SOURCE_PROC_STAT)
                        skip_source(b, s, -ECANCELED, choice_reasons[sources[s]]);
        /* What the object cannot run on this kernel (fault time without task storage), or the
         * kernel cannot (the task iterator). */
        for (int s = 0; s < _SOURCE_MAX; s++) {
                char need[KERNEL_CAPS_REASON_MAX];
                const char *why = kernel_caps_source_missing(&b->caps, b->object, b->n_cpus, s, need, sizeof(need));

                if (sources[s] == SOURCE_USED && why)
                        skip_source(b, s, -ECANCELED, why);
        }
        vmlinux = btf__load_vmlinux_btf();
        for (size_t i = 0; i < ELEMENTSOF(tracepoints); i++) {
                int s = tracepoints[i];

                if (sources[s] == SOURCE_USED && !kernel_has_tracepoint(vmlinux, collector_source_names[s]))
                        skip_source(b, s, -ENOENT, "tracepoint not in kernel BTF");
        }
        if (sources[SOURCE_DELAY_ACCOUNTING] == SOURCE_USED)
                collector_bpf_set_source(b, SOURCE_DELAY_ACCOUNTING, 0, NULL);
        if (sources[SOURCE_DELAY_ACCOUNTING] == SOURCE_USED && !kernel_has_member(vmlinux, "task_struct", "delays"))
                skip_source(b, SOURCE_DELAY_ACCOUNTING, -ECANCELED,
                            "the kernel keeps no delay accounting (built without CONFIG_TASK_DELAY_ACCT)");
        btf__free(vmlinux);
        for (int s = SOURCE_PERF_USER; s <= SOURCE_PERF_KERNEL; s++) {
                int tracepoint = s == SOURCE_PERF_USER ? SOURCE_PAGE_FAULT_USER : SOURCE_PAGE_FAULT_KERNEL;

                if (sources[s] == SOURCE_USED && b->progs[tracepoint])
                        skip_source(b, s, -ECANCELED, "not needed: the tracepoint is used");
        }
        /* The task reads are a task iterator too: without the task iterator every figure of the
         * kernel's accounting comes from /proc/PID/stat. */
        if (sources[SOURCE_TASK_ITERATOR] == SOURCE_DISABLED && b->features[FEATURE_TASK_READS].active) {
                snprintf(b->feature_reasons[FEATURE_TASK_READS], KERNEL_CAPS_REASON_MAX,
                         "off: --disable-source task_iterator: " FEATURE_TASK_READS_WITHOUT);
                b->features[FEATURE_TASK_READS].active = false;
                b->features[FEATURE_TASK_READS].reason = b->feature_reasons[FEATURE_TASK_READS];
        }
}

/* An mmap'able BPF array of n elements of size bytes (arrays round elements up to 8 bytes). */
static void *map_array(struct bpf_map *map, uint32_t n, size_t size, size_t *ret_size) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), bytes = ((size_t) n * ALIGN8(size) + page - 1) / page * page;
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);

        if (p == MAP_FAILED)
                return NULL;
        *ret_size = bytes;
        return p;
}

int collector_bpf_load(CollectorBpf *b) {
        int r;

        /* The slots' fault time only with fault time (the sources are chosen by now): one entry
         * otherwise, never written. */
        r = bpf_map__set_max_entries(b->skel->maps.slot_times,
                                     b->skel->rodata->fault_timing ? b->n_slots * (uint32_t) b->n_cpus : 1);
        if (r < 0)
                return r;
        r = trapstat_bpf__load(b->skel);
        if (r < 0)
                return r;
        /* Owners and identities of the slots are read in place every tick, without a system call. */
        b->owner_map = map_array(b->skel->maps.slot_owner, b->n_slots, sizeof(struct ts_owner), &b->owner_map_size);
        if (!b->owner_map)
                return -errno;
        b->ident_map = map_array(b->skel->maps.slot_ident, b->n_slots, sizeof(struct ts_ident), &b->ident_map_size);
        if (!b->ident_map)
                return -errno;
        /* And their counters, every CPU's (collector_bpf_slot_counters()). */
        b->counters_map = map_array(b->skel->maps.slot_counters, b->n_slots * (uint32_t) b->n_cpus,
                                    sizeof(struct ts_counters), &b->counters_map_size);
        if (!b->counters_map)
                return -errno;
        if (b->skel->rodata->fault_timing) {
                b->times_map = map_array(b->skel->maps.slot_times, b->n_slots * (uint32_t) b->n_cpus,
                                         sizeof(struct ts_fault_times), &b->times_map_size);
                if (!b->times_map)
                        return -errno;
        }
        /* And which of them changed (collector_bpf_take_dirty()). */
        b->dirty_map = map_array(b->skel->maps.slot_dirty, collector_bpf_dirty_words(b), sizeof(uint64_t),
                                 &b->dirty_map_size);
        if (!b->dirty_map)
                return -errno;
        /* Which hash entries were counted into (reader_drain_hash()). */
        b->hash_log = map_array(b->skel->maps.hash_log, 2 * (uint32_t) b->n_cpus, sizeof(struct ts_hash_log),
                                &b->hash_log_size);
        if (!b->hash_log)
                return -errno;
        return 0;
}

/* Opens a page fault software event (config: PERF_COUNT_SW_PAGE_FAULTS*) on every CPU, for
 * user mode, kernel mode or both, and attaches prog to each. CPUs that are offline are skipped. */
static int attach_perf(CollectorBpf *b, struct bpf_program *prog, unsigned long long config, bool user,
                       bool kernel, struct bpf_link **links) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(attr),
                .config = config,
                .sample_period = 1,
                .exclude_kernel = !kernel,
                .exclude_user = !user,
        };
        int attached = 0;

        for (int cpu = 0; cpu < b->n_cpus; cpu++) {
                int fd = (int) syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

                if (fd < 0) {
                        if (errno == ENODEV)
                                continue;
                        return -errno;
                }
                links[cpu] = bpf_program__attach_perf_event(prog, fd);
                if (!links[cpu]) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
                attached++;
        }
        return attached > 0 ? 0 : -ENODEV;
}

static void task_reads_free(CollectorBpf *b) {
        bpf_link__destroy(b->reads_link);
        b->reads_link = NULL;
        task_reads_bpf__destroy(b->reads);
        b->reads = NULL;
}

static int task_reads_load(CollectorBpf *b) {
        /* The iterator over one task, this process's main thread: its program runs once a read. */
        union bpf_iter_link_info info = { .task.tid = (uint32_t) getpid() };
        /* Through the macro: libbpf refuses options whose padding is not zero. */
        LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));

        b->reads = task_reads_bpf__open_and_load();
        if (!b->reads)
                return -errno;
        b->reads_link = bpf_program__attach_iter(b->reads->progs.read_tasks, &opts);
        return b->reads_link ? 0 : -errno;
}

/* The active processes' minor/major faults from the kernel where it can; /proc/PID/stat where
 * loading fails, which is said once and in GetStatus. */
static void task_reads_setup(CollectorBpf *b) {
        int r = task_reads_load(b);

        if (r >= 0)
                return;
        task_reads_free(b);
        log_warning_errno(r, "Failed to load the task reads, reading the active processes' /proc/PID/stat instead: %m");
        snprintf(b->feature_reasons[FEATURE_TASK_READS], KERNEL_CAPS_REASON_MAX,
                 "load failed: %s: " FEATURE_TASK_READS_WITHOUT, strerror(-r));
        b->features[FEATURE_TASK_READS].active = false;
        b->features[FEATURE_TASK_READS].reason = b->feature_reasons[FEATURE_TASK_READS];
}

int collector_bpf_read_records(int fd, struct ts_task_record *buf, size_t max, size_t *ret_got) {
        size_t got = 0;
        int r = 0;

        /* A read ends at a whole record: the iterator writes them whole into its buffer. */
        while (got < max) {
                ssize_t n = read(fd, (char *) (buf + got), (max - got) * sizeof(*buf));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : 1;
                        break;
                }
                got += (size_t) n / sizeof(*buf);
        }
        *ret_got = got;
        return r;
}

int collector_bpf_read_tasks(CollectorBpf *b, const struct ts_proc_key *keys, size_t n,
                             struct ts_task_record ret[static TS_TASK_READS]) {
        size_t got;
        int fd, r;

        assert(b->reads_link && n <= TS_TASK_READS);
        memcpy(b->reads->bss->task_reads, keys, n * sizeof(*keys));
        b->reads->bss->task_reads_n = (uint32_t) n;
        fd = bpf_iter_create(bpf_link__fd(b->reads_link));
        if (fd < 0)
                return -errno;
        r = collector_bpf_read_records(fd, ret, n, &got);
        close(fd);
        return r < 0 ? r : (int) got;
}

int collector_bpf_read_pidns(CollectorBpf *b, int pidfd, struct ts_pidns_record *ret) {
        /* The iterator over the process of the pidfd: its threads, the first of which writes. */
        union bpf_iter_link_info info = { .task.pid_fd = (uint32_t) pidfd };
        LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
        struct bpf_link *link;
        ssize_t n;
        int fd, r;

        if (!b->reads)
                return -EOPNOTSUPP;
        link = bpf_program__attach_iter(b->reads->progs.read_pidns, &opts);
        if (!link)
                return -errno;
        fd = bpf_iter_create(bpf_link__fd(link));
        r = fd < 0 ? -errno : 0;
        if (fd >= 0) {
                do
                        n = read(fd, ret, sizeof(*ret));
                while (n < 0 && errno == EINTR);
                r = n < 0 ? -errno : n == (ssize_t) sizeof(*ret) ? 0 : -ESRCH;
                close(fd);
        }
        bpf_link__destroy(link);
        return r;
}

/* The completions of faults, in either mode (a fault's entry says which mode): the minor one for
 * fault time, the major one for fault time and major causes, each attached once. */
static void attach_completions(CollectorBpf *b) {
        int r = 0;

        if (b->done_progs[0])
                r = attach_perf(b, b->done_progs[0], PERF_COUNT_SW_PAGE_FAULTS_MIN, true, true, b->done_links);
        if (r >= 0 && b->done_progs[1])
                r = attach_perf(b, b->done_progs[1], PERF_COUNT_SW_PAGE_FAULTS_MAJ, true, true,
                                b->done_links + b->n_cpus);
        if (b->skel->rodata->fault_timing)
                collector_bpf_set_source(b, SOURCE_FAULT_TIME, r, "perf_event_open failed");
        if (b->skel->rodata->major_cause)
                collector_bpf_set_source(b, SOURCE_MAJOR_CAUSE, r, "perf_event_open failed");
        if (r >= 0)
                return;
        log_warning_errno(r, "Failed to attach to the PAGE_FAULTS_MIN/MAJ software events, fault time and major "
                             "fault causes are not measured: %m");
        for (size_t i = 0; i < 2 * (size_t) b->n_cpus; i++) {
                bpf_link__destroy(b->done_links[i]);
                b->done_links[i] = NULL;
        }
}

int collector_bpf_attach(CollectorBpf *b) {
        int r;

        for (size_t i = 0; i < ELEMENTSOF(tracepoints); i++) {
                int s = tracepoints[i];

                if (!b->progs[s])
                        continue;
                b->links[s] = bpf_program__attach(b->progs[s]);
                r = b->links[s] ? 0 : -errno;
                collector_bpf_set_source(b, s, r, "attach failed");
                if (r < 0)
                        log_warning_errno(r, "Failed to attach to tracepoint %s, its counts are missing: %m",
                                          collector_source_names[s]);
        }
        for (int s = SOURCE_PERF_USER; s <= SOURCE_PERF_KERNEL; s++) {
                int tracepoint = s == SOURCE_PERF_USER ? SOURCE_PAGE_FAULT_USER : SOURCE_PAGE_FAULT_KERNEL;

                if (!b->progs[s])
                        continue;
                r = attach_perf(b, b->progs[s], PERF_COUNT_SW_PAGE_FAULTS, s == SOURCE_PERF_USER,
                                s == SOURCE_PERF_KERNEL,
                                b->perf_links + (s == SOURCE_PERF_USER ? 0 : (size_t) b->n_cpus));
                collector_bpf_set_source(b, s, r, "perf_event_open failed");
                if (r < 0)
                        log_warning_errno(r, "Failed to attach to the PAGE_FAULTS software event: %m");
                else
                        log_info("Counting page faults with the perf software event instead of %s",
                                 collector_source_names[tracepoint]);
        }
        attach_completions(b);
        /* Minor/major faults: /proc/PID/stat of the active processes, and the task iterator's sweep
         * of all of them where it attaches. */
        if (b->progs[SOURCE_TASK_ITERATOR]) {
                b->iter_link = bpf_program__attach_iter(b->progs[SOURCE_TASK_ITERATOR], NULL);
                r = b->iter_link ? 0 : -errno;
                collector_bpf_set_source(b, SOURCE_TASK_ITERATOR, r, "attach failed");
                if (r < 0)
                        log_warning_errno(r, "Failed to attach the task iterator, checking idle processes in /proc "
                                             "instead: %m");
        }
        collector_bpf_set_source(b, SOURCE_PROC_STAT, 0, NULL);
        if (b->features[FEATURE_TASK_READS].active)
                task_reads_setup(b);
        /* Without the task reads (/proc/PID/stat has no delays) a live process's delays come with
         * the task iterator's sweep, and the final ones with its exit event. */
        b->delayacct_usable = b->sources[SOURCE_DELAY_ACCOUNTING].active;

        /* Without user-mode faults there is nothing to count. A source that failed to attach was
         * logged above; one not loaded was disabled, or is a tracepoint the kernel lacks whose
         * perf fallback was disabled. */
        if (!b->sources[SOURCE_PAGE_FAULT_USER].active && !b->sources[SOURCE_PERF_USER].active)
                return -ENOTSUP;
        return 0;
}

void collector_bpf_dump(const CollectorBpf *b, FILE *f) {
        fprintf(f, "\nobject: %s\n\n%-24s %-5s %s\n", bpf_object_name(b->object), "source", "loads", "reason");
        for (int s = 0; s < _SOURCE_MAX; s++) {
                /* Chosen and not yet attached: no state of its own yet. */
                bool loads = s == SOURCE_FAULT_TIME    ? b->skel->rodata->fault_timing
                             : s == SOURCE_MAJOR_CAUSE ? b->skel->rodata->major_cause
                             : s == SOURCE_PROC_STAT   ? true
                             : s == SOURCE_DELAY_ACCOUNTING ? b->sources[s].active
                                                       : b->progs[s] != NULL;

                fprintf(f, "%-24s %-5s %s\n", collector_source_names[s], loads ? "yes" : "no",
                        loads ? "" : b->sources[s].reason ?: "");
        }
        fprintf(f, "\n%-24s %-5s %s\n", "feature", "on", "reason");
        for (int i = 0; i < _FEATURE_MAX; i++)
                fprintf(f, "%-24s %-5s %s\n", b->features[i].name, b->features[i].active ? "yes" : "no",
                        b->features[i].reason ?: "");
}

int collector_bpf_watch_events(CollectorBpf *b, ring_buffer_sample_fn fn, void *userdata) {
        b->ringbuf = ring_buffer__new(bpf_map__fd(b->skel->maps.events), fn, userdata, NULL);
        return b->ringbuf ? 0 : -errno;
}

CollectorBpf *collector_bpf_free(CollectorBpf *b) {
        if (!b)
                return NULL;
        ring_buffer__free(b->ringbuf);
        bpf_link__destroy(b->iter_link);
        task_reads_free(b);
        for (size_t i = 0; i < _SOURCE_MAX; i++)
                bpf_link__destroy(b->links[i]);
        for (size_t i = 0; b->perf_links && i < 2 * (size_t) b->n_cpus; i++)
                bpf_link__destroy(b->perf_links[i]);
        free(b->perf_links);
        for (size_t i = 0; b->done_links && i < 2 * (size_t) b->n_cpus; i++)
                bpf_link__destroy(b->done_links[i]);
        free(b->done_links);
        if (b->owner_map)
                (void) munmap(b->owner_map, b->owner_map_size);
        if (b->ident_map)
                (void) munmap(b->ident_map, b->ident_map_size);
        if (b->counters_map)
                (void) munmap(b->counters_map, b->counters_map_size);
        if (b->times_map)
                (void) munmap(b->times_map, b->times_map_size);
        if (b->dirty_map)
                (void) munmap(b->dirty_map, b->dirty_map_size);
        if (b->hash_log)
                (void) munmap(b->hash_log, b->hash_log_size);
        trapstat_bpf__destroy(b->skel);
        free(b);
        return NULL;
}

/* Counters and identity are zeroed before the owner is released, so the next owner starts from
 * zero. No BPF program writes the slot meanwhile: its owner is marked exited (or the process is
 * gone), which matches no tgid. */
void collector_bpf_release_slot(CollectorBpf *b, uint32_t slot) {
        for (int cpu = 0; cpu < b->n_cpus; cpu++) {
                struct ts_fault_times *t = collector_bpf_slot_times(b, cpu, slot);

                memset(collector_bpf_slot_counters(b, cpu, slot), 0, sizeof(struct ts_counters));
                if (t)
                        memset(t, 0, sizeof(*t));
        }
        memset(&b->ident_map[slot], 0, sizeof(b->ident_map[slot]));
        /* Release: the zeroed counters and identity are visible before the slot is free. */
        __atomic_store_n(&b->owner_map[slot].tgid, TS_OWNER_FREE, __ATOMIC_RELEASE);
}

int collector_bpf_take_slot(CollectorBpf *b, uint32_t slot, uint32_t tgid, uint64_t start_time) {
        struct ts_proc_key key = { .tgid = tgid, .start_time = start_time };
        _cleanup_free_ struct ts_proc *values = calloc((size_t) b->n_cpus, sizeof(*values));
        uint32_t owner = tgid;

        if (!values)
                return -ENOMEM;
        /* Its entry first, with the identity BPF wrote when it claimed the slot: from the moment
         * the slot is marked, its faults and its exit look for the entry. One it has already is
         * kept (it counted in the hash before it owned the slot). */
        values[0].id = b->ident_map[slot];
        if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.processes), &key, values, BPF_NOEXIST) < 0 &&
            errno != EEXIST)
                return errno == E2BIG || errno == ENOMEM ? 0 : -errno;
        /* Marked exited unless it exited meanwhile (then its exit marked it). Fully ordered, as
         * each CPU's adoption of the slot is (adopt_slot()): a CPU that adopts it after the mark
         * fails and counts in the hash; one that adopted it before wrote its copy of the owner,
         * which is cleared below. */
        if (!__atomic_compare_exchange_n(&b->owner_map[slot].tgid, &owner, tgid | TS_OWNER_EXITED, false,
                                         __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return 0;
        for (int cpu = 0; cpu < b->n_cpus; cpu++) {
                uint32_t copy = tgid;

                (void) __atomic_compare_exchange_n(&collector_bpf_slot_counters(b, cpu, slot)->owner, &copy, 0, false,
                                                   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        }
        return 1;
}

void collector_bpf_forget(CollectorBpf *b, uint32_t tgid, uint64_t start_time, bool fallback, bool traps) {
        struct ts_proc_key key = { .tgid = tgid, .start_time = start_time };

        if (fallback)
                (void) bpf_map_delete_elem(bpf_map__fd(b->skel->maps.processes), &key);
        if (traps)
                (void) bpf_map_delete_elem(bpf_map__fd(b->skel->maps.traps), &key);
}

CollectorDropKind collector_bpf_drop_kind(unsigned kind) {
        assert(kind < TS_DROP_MAX);
        return drop_kinds[kind];
}

static int user_drops_compare(const void *a, const void *b) {
        const CollectorUserDrops *x = a, *y = b;

        return (x->uid > y->uid) - (x->uid < y->uid);
}

int collector_bpf_user_drops(CollectorBpf *b, int64_t uid, CollectorUserDrops **ret, size_t *ret_n) {
        int fd = bpf_map__fd(b->skel->maps.user_drops);
        uint32_t out_batch, n = uid >= 0 ? 1 : TS_MAX_DROP_USERS; /* one user's, or the whole map */
        _cleanup_free_ CollectorUserDrops *list = calloc(n, sizeof(*list));
        _cleanup_free_ struct ts_user_drops *values = calloc(n, sizeof(*values));
        _cleanup_free_ uint32_t *keys = calloc(n, sizeof(*keys));

        _Static_assert(sizeof(values->count) == sizeof(list->count), "every drop kind of bpf/trapstat.h is told by user");
        if (!list || !values || !keys)
                return -ENOMEM;
        if (uid >= 0) {
                keys[0] = (uint32_t) uid;
                n = bpf_map_lookup_elem(fd, &keys[0], &values[0]) == 0;
        } else if (bpf_map_lookup_batch(fd, NULL, &out_batch, keys, values, &n, NULL) < 0 && errno != ENOENT)
                /* ENOENT: the whole map (it holds at most TS_MAX_DROP_USERS) in this one batch. */
                return -errno;
        for (uint32_t i = 0; i < n; i++) {
                list[i].uid = keys[i];
                memcpy(list[i].count, values[i].count, sizeof(values[i].count));
        }
        qsort(list, n, sizeof(*list), user_drops_compare);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

size_t collector_bpf_drops(CollectorBpf *b, CollectorDrop ret[static COLLECTOR_DROP_KINDS]) {
        int fd = bpf_map__fd(b->skel->maps.drops);

        _Static_assert(COLLECTOR_BPF_DROP_KINDS == TS_DROP_MAX, "every drop kind of bpf/trapstat.h is reported");
        for (uint32_t k = 0; k < TS_DROP_MAX; k++) {
                uint64_t values[b->n_cpus];

                ret[k] = (CollectorDrop) { .kind = drop_kinds[k] };
                if (bpf_map_lookup_elem(fd, &k, values) < 0)
                        continue;
                for (int i = 0; i < b->n_cpus; i++)
                        ret[k].count += values[i];
        }
        return TS_DROP_MAX;
}

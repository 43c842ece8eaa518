/* SPDX-License-Identifier: MIT */
/* The site reader (collector-sites.h), one of the collector's parts: every tick the site hash
 * (bpf/trapstat.bpf.c: where processes trapped and, sampled, faulted) is read in batches, each
 * entry's growth since the last tick becomes a SiteCount of its process, named for people.
 *
 * The file's path: while the process lives, as its /proc/PID/maps names the mapping (the kernel's
 * d_path, which follows renames), read once per process and kept with it (ProcFileName), so that
 * all of a process's sites of a file have one name; else the name BPF wrote into its name map
 * when the site was recorded (written again whenever the inode or the file's own name changed:
 * a rename, also within one tick of the coarse clock, an inode number reused).
 *
 * The symbol, from the file's ELF symbol tables, comes from the symbol worker
 * (daemon/symbol-worker.c), never from this thread: a site whose symbol is not known yet is
 * counted with its file and offset at once, the worker is asked at the end of the drain (with the
 * process and the mapping, through which it opens the file the process mapped while it lives),
 * and its answer, taken at the start of a later drain, names the site's counts from that drain on
 * and becomes fills for the rows already written, which collector_tick_end() returns with that
 * drain's counts (CollectorTick.fills): the writer stores both in one batch. A file the worker
 * could not open is no answer: the site is asked for again at its next count. Symbols are
 * remembered by the inode's version as BPF saw it (change time, generation), which a change of
 * the file's contents changes and a rename need not: a renamed file keeps its symbols, a reused
 * inode number does not.
 *
 * Why a symbol not known when its site is counted is stored a tick later at the earliest, never
 * with the tick that counted the site: the drain asks only at its end, once exec events gave each
 * process its uid (whose budget pays), and the worker reads ELF files on its own thread so that
 * the event loop never waits for a file (a hostile one can take long); its answer cannot be in
 * the drain that asked. Waiting for it there would stall every tick, Watch included, on the
 * slowest file. An answer in by the start of the next drain is stored with that tick's batch.
 *
 * The hash is drained by epochs (struct ts_site_epochs): each tick the epoch flips, and every
 * entry of the one before is read, becomes a SiteCount of its process and leaves the hash, with
 * the shares it took; so live processes do not keep entries. */
#include "collector-sites.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <sched.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "array-util.h"
#include "collector-util.h"
#include "defaults.h"
#include "macro.h"
#include "proc-util.h"
#include "time-util.h"
#include "trapstat.skel.h"

/* Site entries read per bpf_map_lookup_batch() call. */
#define SITE_BATCH 256
/* Paths and symbols remembered: past this many, all are forgotten and learned again. */
#define NAMES_MAX 65536
/* A symbol refused for its uid's budget is asked for again at a count this long after. */
#define SYMBOL_REFUSED_RETRY_USEC (60 * UINT64_C(1000000))

/* How long a tick waits for the programs still counting into the epoch it is over with (they
 * take microseconds); past it the drain waits for the next tick. */
#define SITE_QUIESCE_USEC 20000

/* A site of the epoch that is over, kept until its process's /proc/PID/maps is read: BPF could
 * not look up its instruction, or the process's maps have not named its file yet. */
typedef struct SitePending {
        struct ts_site_key key;
        struct ts_site value;
} SitePending;

/* A symbol to ask the worker for, once the drain knows who the process is: its uid (whose budget
 * pays) may change with an exec event applied after the sites were read. */
typedef struct SymbolAsk {
        SymbolRequest request; /* path owned; uid filled in from proc */
        const CollectorProc *proc; /* valid until the end of the drain (dead ones too); NULL once
                                    * the uid is filled in and the ask waits for room in the
                                    * worker's queue */
} SymbolAsk;

/* A version of a file: the kernel's (device, inode), and the inode's change time and generation
 * when BPF named it, which a rename or a reuse of the inode number changes. */
typedef struct FileVersion {
        uint32_t dev, generation;
        uint64_t ino;
        uint64_t ctime_sec;
        uint32_t ctime_nsec;
} FileVersion;

static int file_version_compare(const FileVersion *x, const FileVersion *y) {
        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        if (x->ino != y->ino)
                return x->ino < y->ino ? -1 : 1;
        if (x->ctime_sec != y->ctime_sec)
                return x->ctime_sec < y->ctime_sec ? -1 : 1;
        if (x->ctime_nsec != y->ctime_nsec)
                return x->ctime_nsec < y->ctime_nsec ? -1 : 1;
        return x->generation < y->generation ? -1 : x->generation > y->generation;
}

/* The path of a file, by the kernel's (device, inode): the version and the name's hash (BPF's
 * struct ts_file_name) it is the name of. */
typedef struct FilePath {
        FileVersion version;
        uint64_t name_hash;
        char *path;
        uint64_t checked; /* the drain (SiteReader.drains) that last found it in the name map */
} FilePath;

static int file_path_compare(const void *a, const void *b) {
        const FilePath *x = a, *y = b;

        if (x->version.dev != y->version.dev)
                return x->version.dev < y->version.dev ? -1 : 1;
        return x->version.ino < y->version.ino ? -1 : x->version.ino > y->version.ino;
}

/* What the store keeps of a version (the device and inode are the site's own). */
static ObjectVersion object_version(uint64_t ctime_sec, uint32_t ctime_nsec, uint32_t generation) {
        return (ObjectVersion) { .ctime_nsec = ctime_sec * UINT64_C(1000000000) + ctime_nsec, .generation = generation };
}

static void file_path_free(void *p) {
        FilePath *f = p;

        free(f->path);
        free(f);
}

typedef enum SymbolState {
        SYMBOL_PENDING,    /* asked for, the worker has not answered */
        SYMBOL_KNOWN,      /* answered: symbol, or NULL for none */
        SYMBOL_REFUSED,    /* the uid's budget was spent: asked again after retry_usec */
        SYMBOL_RETRY,      /* not known: the file could not be opened (or not by this count: a name
                            * BPF cut short and no mapping), or there was no memory to ask; asked
                            * again at the next count */
} SymbolState;

/* Names a site was stored under while its symbol was not known, whose rows a symbol fills: a
 * file renamed between two counts (or named by a live process's maps and by BPF) has more than
 * one. */
#define SYMBOL_FILL_NAMES_MAX 4

/* The symbol of an instruction of a version of a file, or that it has none. */
typedef struct SymbolAt {
        FileVersion version;
        uint64_t offset;
        SymbolState state;
        uint64_t retry_usec;
        char *symbol; /* NULL: none */
        uint64_t symbol_offset;
        char *names[SYMBOL_FILL_NAMES_MAX];
        size_t n_names;
} SymbolAt;

static int symbol_at_compare(const void *a, const void *b) {
        const SymbolAt *x = a, *y = b;
        int c = file_version_compare(&x->version, &y->version);

        if (c != 0)
                return c;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void symbol_at_free(void *p) {
        SymbolAt *s = p;

        free(s->symbol);
        for (size_t i = 0; i < s->n_names; i++)
                free(s->names[i]);
        free(s);
}

static void asks_drop(SiteReader *r, bool all);

int site_reader_init(SiteReader *r, CollectorBpf *bpf, ProcTable *procs, unsigned maps_lines_per_tick,
                     const SymbolWorkerConfig *symbols) {
        /* The daemon's budget is 32 MiB of RSS: a quarter of it for symbol tables. */
        SymbolWorkerConfig config = *symbols;
        int k;

        *r = (SiteReader) { .bpf = bpf, .procs = procs, .maps_lines_per_tick = maps_lines_per_tick };
        config.max_bytes = config.max_bytes ?: 8 * 1024 * 1024;
        config.proc_fd = procs->proc_fd;
        k = symbol_worker_new(&config, &r->symbol_worker);
        if (k < 0)
                return k;
        r->keys = calloc(SITE_BATCH, sizeof(struct ts_site_key));
        r->values = calloc(SITE_BATCH, sizeof(struct ts_site));
        r->drained = calloc(SITE_BATCH, sizeof(struct ts_site_key));
        r->share_keys = calloc(SITE_BATCH, sizeof(struct ts_site_quota_key));
        r->share_values = calloc(SITE_BATCH, sizeof(struct ts_site_quota));
        if (!r->keys || !r->values || !r->drained || !r->share_keys || !r->share_values)
                return -ENOMEM;
        return 0;
}

void site_reader_done(SiteReader *r) {
        tdestroy(r->file_paths, file_path_free);
        tdestroy(r->symbols, symbol_at_free);
        r->file_paths = r->symbols = NULL;
        r->symbol_worker = symbol_worker_free(r->symbol_worker);
        asks_drop(r, true);
        free(r->asks);
        r->asks = NULL;
        r->n_asks = r->asks_capacity = 0;
        site_counts_free(r->fills, r->n_fills);
        r->fills = NULL;
        r->n_fills = r->fills_capacity = 0;
        free(r->keys);
        free(r->values);
        free(r->drained);
        free(r->pending);
        free(r->share_keys);
        free(r->share_values);
}

/* The file's path, remembered by its version, and the version BPF named; when BPF could not
 * record it, a name from its identity (not remembered: the name map may have it by the next
 * tick) and *ret_version zeroed but for dev and ino. NULL when out of memory. */
static const char *file_path(SiteReader *r, uint32_t dev, uint64_t ino, char fallback[static 64],
                             FileVersion *ret_version) {
        FilePath key = { .version = { .dev = dev, .ino = ino } }, *f, **found;
        struct ts_file_key bpf_key = { .ino = ino, .dev = dev };
        struct ts_file_name name;

        /* Asked once a drain: BPF writes a new name when the file was renamed or the inode
         * number went to another file, and that one must not keep the old name. Within one drain
         * every site of the file gets the name its first one got. */
        found = tfind(&key, &r->file_paths, file_path_compare);
        if (found && (*found)->checked == r->drains) {
                *ret_version = (*found)->version;
                return (*found)->path;
        }
        if (bpf_map_lookup_elem(bpf_map__fd(r->bpf->skel->maps.file_names), &bpf_key, &name) < 0) {
                snprintf(fallback, 64, "[dev %u:%u inode %" PRIu64 "]", dev >> 20, dev & 0xfffff, ino);
                *ret_version = key.version;
                return fallback;
        }
        key.version = (FileVersion) { .dev = dev, .ino = ino, .ctime_sec = name.ctime_sec,
                                      .ctime_nsec = name.ctime_nsec, .generation = name.generation };
        *ret_version = key.version;
        if (found && file_version_compare(&(*found)->version, &key.version) == 0 && (*found)->name_hash == name.name_hash) {
                (*found)->checked = r->drains;
                return (*found)->path;
        }
        if (found) {
                f = *found;
                tdelete(&key, &r->file_paths, file_path_compare);
                file_path_free(f);
                r->n_file_paths--;
        }
        if (r->n_file_paths >= NAMES_MAX) {
                tdestroy(r->file_paths, file_path_free);
                r->file_paths = NULL;
                r->n_file_paths = 0;
        }
        f = calloc(1, sizeof(*f));
        if (!f)
                return NULL;
        *f = (FilePath) { .version = key.version, .name_hash = name.name_hash, .path = file_name_join(&name),
                          .checked = r->drains };
        if (f->path) {
                /* As this daemon sees it: a chrooted trapstatd sees the file at a shorter path. */
                const char *visible = file_path_visible(f->path, dev_from_kernel(dev), ino);

                if (visible != f->path)
                        memmove(f->path, visible, strlen(visible) + 1);
        }
        if (!f->path || !tsearch(f, &r->file_paths, file_path_compare)) {
                file_path_free(f);
                return NULL;
        }
        r->n_file_paths++;
        return f->path;
}

/* Asks the worker for the symbol of s at the end of the drain (site_reader_ask_symbols()), with the
 * process p and its mapping of the file (named; NULL or without a path when its maps did not name
 * it), through which the worker opens the file the process mapped while it lives; else the path.
 * s is pending until the answer, or asked again at its next count when it cannot be asked. */
static void symbol_request(SiteReader *r, SymbolAt *s, const char *path, const CollectorProc *p,
                           const ProcFileName *named) {
        bool mapped = named && named->path;
        SymbolAsk ask = {
                .request = {
                        .dev = dev_from_kernel(s->version.dev),
                        .ino = s->version.ino,
                        .ctime = { .tv_sec = (time_t) s->version.ctime_sec, .tv_nsec = s->version.ctime_nsec },
                        .offset = s->offset,
                        .pid = p->info.pid,
                        .start_time = p->info.start_time,
                        .map_start = mapped ? named->start : 0,
                        .map_end = mapped ? named->end : 0,
                        .key_dev = s->version.dev,
                        .key_generation = s->version.generation,
                },
                .proc = p,
        };

        s->retry_usec = 0;
        s->state = SYMBOL_RETRY;
        ask.request.path = strdup(path);
        if (!ask.request.path)
                return;
        if (array_append((void **) &r->asks, &r->n_asks, &r->asks_capacity, sizeof(ask), &ask) < 0) {
                free(ask.request.path);
                return;
        }
        s->state = SYMBOL_PENDING;
}

/* The entry an answer or an ask is about, NULL when it was forgotten since. */
static SymbolAt *symbol_at_of(SiteReader *r, const SymbolRequest *q) {
        SymbolAt key = { .version = { .dev = q->key_dev, .ino = q->ino, .ctime_sec = (uint64_t) q->ctime.tv_sec,
                                      .ctime_nsec = (uint32_t) q->ctime.tv_nsec, .generation = q->key_generation },
                         .offset = q->offset },
                 **found = tfind(&key, &r->symbols, symbol_at_compare);

        return found ? *found : NULL;
}

/* Drops the asks not yet sent: those a drain that failed left (their processes may be freed), and
 * with all also those waiting for room in the worker's queue. Their sites are asked for again at
 * their next count. */
static void asks_drop(SiteReader *r, bool all) {
        size_t kept = 0;

        for (size_t i = 0; i < r->n_asks; i++) {
                SymbolAsk *a = &r->asks[i];
                SymbolAt *s;

                if (!a->proc && !all) {
                        r->asks[kept++] = *a;
                        continue;
                }
                s = symbol_at_of(r, &a->request);
                if (s)
                        s->state = SYMBOL_RETRY;
                free(a->request.path);
        }
        r->n_asks = kept;
}

void site_reader_ask_symbols(SiteReader *r) {
        size_t kept = 0;

        /* Those kept from earlier drains first, in the order they were asked. */
        for (size_t i = 0; i < r->n_asks; i++) {
                SymbolAsk *a = &r->asks[i];

                if (a->proc) {
                        a->request.uid = a->proc->info.uid;
                        a->proc = NULL;
                }
                /* A full queue (or no memory for the copy): the ask waits for the end of the next
                 * drain, its site pending. Never more than one ask per remembered symbol, and the
                 * symbols are at most NAMES_MAX: nothing is lost, and nothing grows past that. */
                if (kept > 0 || symbol_worker_submit(r->symbol_worker, &a->request) < 0) {
                        r->asks[kept++] = *a;
                        continue;
                }
                free(a->request.path);
        }
        r->n_asks = kept;
}

/* Remembers that a site of s was stored under the name path while its symbol was not known: the
 * symbol, once found, is written to the rows of each such name. Past SYMBOL_FILL_NAMES_MAX, or
 * without memory, a name's rows keep no symbol. */
static void symbol_at_add_name(SymbolAt *s, const char *path) {
        for (size_t i = 0; i < s->n_names; i++)
                if (strcmp(s->names[i], path) == 0)
                        return;
        if (s->n_names < SYMBOL_FILL_NAMES_MAX && (s->names[s->n_names] = strdup(path)))
                s->n_names++;
}

/* What is known of the symbol at offset of the file version, remembered; asks the worker the
 * first time, again after a refusal once its time is up, and again at every count while the file
 * could not be opened, with this count's process and mapping (named). NULL when out of memory. */
static const SymbolAt *symbol_at(SiteReader *r, const char *path, const FileVersion *version, uint64_t offset,
                                 const CollectorProc *p, const ProcFileName *named, uint64_t now) {
        SymbolAt key = { .version = *version, .offset = offset }, *s, **found;
        /* A path that is not absolute is a name BPF cut short: no file to open by it. */
        bool can_ask = path[0] == '/' || (named && named->path);

        found = tfind(&key, &r->symbols, symbol_at_compare);
        if (found)
                s = *found;
        else {
                if (r->n_symbols >= NAMES_MAX) {
                        tdestroy(r->symbols, symbol_at_free);
                        r->symbols = NULL;
                        r->n_symbols = 0;
                        asks_drop(r, true); /* about symbols forgotten now */
                }
                s = calloc(1, sizeof(*s));
                if (!s)
                        return NULL;
                *s = key;
                s->state = SYMBOL_RETRY;
                if (!tsearch(s, &r->symbols, symbol_at_compare)) {
                        symbol_at_free(s);
                        return NULL;
                }
                r->n_symbols++;
        }
        if (can_ask && (s->state == SYMBOL_RETRY || (s->state == SYMBOL_REFUSED && now >= s->retry_usec)))
                symbol_request(r, s, path, p, named);
        if (s->state != SYMBOL_KNOWN)
                symbol_at_add_name(s, path);
        return s;
}

static int strdup_to(const char *s, char **ret) {
        *ret = s ? strdup(s) : NULL;
        return s && !*ret ? -ENOMEM : 0;
}

/* The named form of one location: the object, its identity (with the version the store keeps it
 * by), and for an instruction its offset and symbol. */
static int name_location(SiteReader *r, const struct ts_location *loc, bool code, const CollectorProc *p,
                         uint64_t now, char **ret_object, uint64_t *ret_dev, uint64_t *ret_ino,
                         ObjectVersion *ret_version, char **ret_symbol, uint64_t *ret_symbol_offset) {
        const ProcFileName *named;
        FileVersion version;
        char fallback[64];
        const char *object;

        *ret_dev = *ret_ino = 0;
        *ret_version = (ObjectVersion) {};
        if (loc->kind != TS_MEM_FILE)
                return strdup_to(memory_kind_object((MemoryKind) loc->kind) ?: "[unknown]", ret_object);

        object = file_path(r, loc->dev, loc->ino, fallback, &version);
        if (!object)
                return -ENOMEM;
        /* The process's maps named the mapping while it lived: the file's name as the kernel has
         * it, the same for every site of this process in the file. */
        named = proc_table_file_name(p, loc->dev, loc->ino);
        if (named && named->path)
                object = named->path;
        *ret_dev = dev_from_kernel(loc->dev);
        *ret_ino = loc->ino;
        /* 0 for a name made from the identity (fallback): not known, as the name says. */
        *ret_version = object_version(version.ctime_sec, version.ctime_nsec, version.generation);
        if (code && object != fallback) {
                const SymbolAt *s = symbol_at(r, object, &version, loc->offset, p, named, now);

                if (!s)
                        return -ENOMEM;
                if (strdup_to(s->symbol, ret_symbol) < 0)
                        return -ENOMEM;
                *ret_symbol_offset = s->symbol_offset;
        }
        return strdup_to(object, ret_object);
}

static int site_from_bpf(SiteReader *r, const struct ts_site_key *key, const struct ts_site *v, const CollectorProc *p,
                         uint64_t now, SiteCount *ret) {
        SiteCount s = {
                .vector = key->vector < TS_N_VECTORS ? key->vector : TRAP_VECTOR_UNKNOWN,
                .offset = key->ip.offset,
                .memory = key->memory.kind < _MEMORY_KIND_MAX ? (MemoryKind) key->memory.kind : MEMORY_UNKNOWN,
                .count = v->count,
        };
        uint64_t unused;
        ObjectVersion no_version; /* not kept for the memory's file: SiteCount.memory_dev */
        char *no_symbol = NULL;
        bool timed;
        int k;

        k = site_kind_from_bpf(key->kind, collector_bpf_fault_sample(r->bpf), &s.kind, &s.period, &timed);
        if (k < 0)
                return k;
        s.time_ns = timed ? v->time_ns : 0;
        k = name_location(r, &key->ip, true, p, now, &s.object, &s.dev, &s.ino, &s.version, &s.symbol,
                          &s.symbol_offset);
        if (k >= 0 && s.memory == MEMORY_FILE)
                k = name_location(r, &key->memory, false, p, now, &s.memory_object, &s.memory_dev, &s.memory_ino,
                                  &no_version, &no_symbol, &unused);
        if (k < 0) {
                site_count_done(&s);
                return k;
        }
        *ret = s;
        return 0;
}

/* One site of an epoch that is over: what it counted goes to its process. */
static int drain_site(SiteReader *r, const struct ts_site_key *key, const struct ts_site *v, uint64_t now) {
        CollectorProc *p;
        SiteCount delta;
        int k;

        /* A sampled fault whose completion came after the epoch flipped has its time alone in the
         * next epoch's entry. */
        if (v->count == 0 && v->time_ns == 0)
                return 0;
        k = proc_table_get(r->procs, key->tgid, key->start_time, NULL, now, &p);
        if (k < 0)
                return k;
        k = site_from_bpf(r, key, v, p, now, &delta);
        /* A kind this daemon does not know (not from its own object): nothing to count it as. */
        if (k == -EBADMSG)
                return 0;
        if (k < 0)
                return k;
        return proc_table_count_site(r->procs, p, &delta, now);
}

/* By process; within one, the instructions BPF could not look up first, by address (the order
 * of /proc/PID/maps), then the others. */
static int site_pending_compare(const void *a, const void *b) {
        const SitePending *x = a, *y = b;
        bool x_known = x->key.ip.kind != TS_MEM_UNKNOWN, y_known = y->key.ip.kind != TS_MEM_UNKNOWN;

        if (x->key.tgid != y->key.tgid)
                return x->key.tgid < y->key.tgid ? -1 : 1;
        if (x->key.start_time != y->key.start_time)
                return x->key.start_time < y->key.start_time ? -1 : 1;
        if (x_known != y_known)
                return x_known ? 1 : -1;
        return x->key.ip.offset < y->key.ip.offset ? -1 : x->key.ip.offset > y->key.ip.offset;
}

/* What BPF would have recorded for an instruction at ip in mapping m (see locate_in_vma()). */
static void location_from_mapping(const ProcMapping *m, uint64_t ip, struct ts_location *loc) {
        *loc = (struct ts_location) { .offset = ip };
        if (m->path[0] == '/') {
                loc->kind = TS_MEM_FILE;
                loc->dev = m->major << 20 | (m->minor & 0xfffff);
                loc->ino = m->ino;
                loc->offset = ip - m->start + m->offset;
        } else if (strcmp(m->path, "[heap]") == 0)
                loc->kind = TS_MEM_HEAP;
        else if (strcmp(m->path, "[stack]") == 0)
                loc->kind = TS_MEM_STACK;
        else if (strcmp(m->path, "[vdso]") == 0)
                loc->kind = TS_MEM_VDSO;
        else
                loc->kind = TS_MEM_ANON;
}

/* The file's path into the name map, as BPF would have put it there, unless it has one. The
 * inode's change time is taken from the file at that path only when it is the mapped one (same
 * device and inode): else it stays 0, which no file has, and the symbol worker will not read it.
 * The generation is not to be had from a path: 0, as for a file system without one. */
static void remember_file_name(SiteReader *r, const struct ts_location *loc, const char *path) {
        struct ts_file_key key = { .ino = loc->ino, .dev = loc->dev };
        struct ts_file_name name;
        struct stat st;

        if (file_name_split(path, &name) < 0)
                return;
        if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            (uint64_t) st.st_ino == loc->ino && major(st.st_dev) == loc->dev >> 20 &&
            minor(st.st_dev) == (loc->dev & 0xfffff)) {
                name.ctime_sec = (uint64_t) st.st_ctim.tv_sec;
                name.ctime_nsec = (uint32_t) st.st_ctim.tv_nsec;
        }
        (void) bpf_map_update_elem(bpf_map__fd(r->bpf->skel->maps.file_names), &key, &name, BPF_NOEXIST);
}

static void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

/* A file as BPF names it: (device, inode). */
typedef struct FileId {
        uint32_t dev;
        uint64_t ino;
} FileId;

static int file_id_compare(const void *a, const void *b) {
        const FileId *x = a, *y = b;

        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The files of the n sites u of p (their instructions', and the memory faults touched) that p
 * has no name for, sorted, each once. */
static int files_to_name(const CollectorProc *p, const SitePending *u, size_t n, FileId **ret, size_t *ret_n) {
        _cleanup_free_ FileId *ids = NULL;
        size_t n_ids = 0, allocated = 0, kept = 0;

        for (size_t i = 0; i < n; i++) {
                const struct ts_location *locs[] = { &u[i].key.ip, &u[i].key.memory };

                for (size_t j = 0; j < ELEMENTSOF(locs); j++) {
                        FileId id = { .dev = locs[j]->dev, .ino = locs[j]->ino };

                        if (locs[j]->kind != TS_MEM_FILE || proc_table_file_name(p, id.dev, id.ino))
                                continue;
                        if (array_append((void **) &ids, &n_ids, &allocated, sizeof(id), &id) < 0)
                                return -ENOMEM;
                }
        }
        if (n_ids > 0)
                qsort(ids, n_ids, sizeof(FileId), file_id_compare);
        for (size_t i = 0; i < n_ids; i++)
                if (kept == 0 || file_id_compare(&ids[kept - 1], &ids[i]) != 0)
                        ids[kept++] = ids[i];
        *ret = TAKE_PTR(ids);
        *ret_n = kept;
        return 0;
}

/* One line m of p's maps: names the instructions BPF could not look up that are in it (u from *i
 * on, to n_unknown, sorted by address), and the file it maps if p's sites need its name (one of
 * files, or one of those instructions'). True when it named one of files. */
static bool name_from_mapping(SiteReader *r, CollectorProc *p, const ProcMapping *m, SitePending *u,
                              size_t n_unknown, size_t *i, const FileId *files, size_t n_files) {
        FileId id = { .dev = m->major << 20 | (m->minor & 0xfffff), .ino = m->ino };
        bool wanted, instruction = false;
        int k;

        for (; *i < n_unknown && u[*i].key.ip.offset < m->end; (*i)++) {
                if (u[*i].key.ip.offset < m->start)
                        continue;
                location_from_mapping(m, u[*i].key.ip.offset, &u[*i].key.ip);
                if (u[*i].key.ip.kind == TS_MEM_FILE) {
                        remember_file_name(r, &u[*i].key.ip, m->path);
                        instruction = true;
                }
        }
        if (m->path[0] != '/')
                return false;
        wanted = n_files > 0 && bsearch(&id, files, n_files, sizeof(FileId), file_id_compare);
        if (!wanted && !instruction)
                return false;
        k = proc_table_add_file_name(r->procs, p, &(ProcFileName) { .dev = id.dev, .ino = id.ino, .start = m->start,
                                                                     .end = m->end, .path = (char *) m->path });
        /* Past the bounds its further files are named as BPF named them, and its maps not read
         * for them every tick. */
        if (k == -E2BIG)
                p->maps_error = k;
        return wanted && k >= 0;
}

/* Reads p's /proc/PID/maps once for its n sites u (the instructions BPF could not look up first,
 * by address): names those instructions, and the files of all of them that p has no name for
 * yet, taking the lines read from *budget. What it cannot name (p is gone or does not let this
 * daemon read its maps, the mapping is gone, the budget is spent) stays as BPF named it. */
static int resolve_from_maps(SiteReader *r, CollectorProc *p, SitePending *u, size_t n, unsigned *budget) {
        _cleanup_(fclosep) FILE *maps = NULL;
        _cleanup_free_ char *line = NULL;
        _cleanup_free_ FileId *files = NULL;
        size_t size = 0, i = 0, n_unknown = 0, n_files, found = 0;
        ProcMapping m;
        int k;

        /* A process whose exit is in hand has no maps left to read. */
        if (*budget == 0 || p->maps_error != 0 || p->exiting || p->info.exited)
                return 0;
        while (n_unknown < n && u[n_unknown].key.ip.kind == TS_MEM_UNKNOWN)
                n_unknown++;
        /* (An instruction BPF could not look up is no file yet: only the memory of those.) */
        k = files_to_name(p, u, n, &files, &n_files);
        if (k < 0 || (n_unknown == 0 && n_files == 0))
                return k;
        k = proc_open_maps(r->procs->proc_fd, p->info.pid, p->info.start_time, &maps);
        if (k < 0) {
                /* Gone, or not this daemon's to read (without CAP_SYS_PTRACE, another user's
                 * process): not tried again for this process. */
                if (k == -ESRCH || k == -EACCES || k == -EPERM)
                        p->maps_error = k;
                return 0;
        }
        while ((i < n_unknown || found < n_files) && *budget > 0 && getline(&line, &size, maps) > 0) {
                (*budget)--;
                if (proc_maps_parse_line(line, &m) >= 0 && name_from_mapping(r, p, &m, u, n_unknown, &i, files, n_files))
                        found++;
        }
        /* Read to the end: the files it did not name are not mapped now (unmapped since the count,
         * or another program exec'd). Named as BPF named them, and not looked for again. */
        if (feof(maps))
                for (size_t j = 0; j < n_files; j++)
                        (void) proc_table_add_file_name(r->procs, p,
                                                        &(ProcFileName) { .dev = files[j].dev, .ino = files[j].ino });
        return 0;
}

/* Whether a site waits for its process's /proc/PID/maps: BPF could not look up its instruction,
 * or it is in (or touched) a file the process's maps have not named yet. */
static bool site_needs_maps(SiteReader *r, const struct ts_site_key *key) {
        const CollectorProc *p;

        if (key->ip.kind == TS_MEM_UNKNOWN)
                return true;
        if (r->maps_lines_per_tick == 0 || (key->ip.kind != TS_MEM_FILE && key->memory.kind != TS_MEM_FILE))
                return false;
        p = proc_table_find(r->procs, key->tgid, key->start_time);
        if (!p)
                return true;
        if (p->maps_error != 0 || p->exiting || p->info.exited)
                return false;
        return (key->ip.kind == TS_MEM_FILE && !proc_table_file_name(p, key->ip.dev, key->ip.ino)) ||
               (key->memory.kind == TS_MEM_FILE && !proc_table_file_name(p, key->memory.dev, key->memory.ino));
}

/* The sites of the epoch that wait for their process's /proc/PID/maps (site_needs_maps()): named
 * from it while the process lives, one read of it per process, within r->maps_lines_per_tick
 * lines; then counted. */
static int drain_pending_sites(SiteReader *r, uint64_t now) {
        /* A process may have 65530 mappings, and a user's processes can make their own lookups
         * fail (a thread holding the mmap lock): past the budget, the tick's remaining such sites
         * stay as BPF named them, [unknown] where its lookup failed (each was counted as
         * site_lookup_failed). */
        unsigned budget = r->maps_lines_per_tick;
        SitePending *u = r->pending;

        if (r->n_pending == 0)
                return 0;
        qsort(u, r->n_pending, sizeof(SitePending), site_pending_compare);
        for (size_t i = 0, j; i < r->n_pending; i = j) {
                CollectorProc *p;
                int k;

                for (j = i + 1; j < r->n_pending && u[j].key.tgid == u[i].key.tgid &&
                                u[j].key.start_time == u[i].key.start_time;
                     j++)
                        ;
                k = proc_table_get(r->procs, u[i].key.tgid, u[i].key.start_time, NULL, now, &p);
                if (k >= 0)
                        k = resolve_from_maps(r, p, u + i, j - i, &budget);
                if (k < 0)
                        return k;
        }
        for (size_t i = 0; i < r->n_pending; i++) {
                int k = drain_site(r, &u[i].key, &u[i].value, now);

                if (k < 0)
                        return k;
        }
        return 0;
}

/* A fill of the rows stored under name for the site of q: its symbol, now known. */
static int symbol_fill(SiteReader *r, const SymbolRequest *q, char *name, const SymbolAt *s) {
        SiteCount fill = {
                .kind = SITE_TRAP,
                .period = 1,
                .object = name,
                .dev = q->dev,
                .ino = q->ino,
                /* The version the site's counts were stored with, so the fill finds their row. */
                .version = object_version((uint64_t) q->ctime.tv_sec, (uint32_t) q->ctime.tv_nsec, q->key_generation),
                .offset = q->offset,
                .symbol = strdup(s->symbol),
                .symbol_offset = s->symbol_offset,
        };

        if (!fill.symbol ||
            array_append((void **) &r->fills, &r->n_fills, &r->fills_capacity, sizeof(fill), &fill) < 0) {
                site_count_done(&fill);
                return -ENOMEM;
        }
        return 0;
}

/* One answer of the worker: what the site's next counts are named with, and, for a symbol, fills
 * of the rows already stored, under each name they were stored with. */
static int take_symbol(SiteReader *r, SymbolResult *res, uint64_t now) {
        const SymbolRequest *q = &res->request;
        SymbolAt *s = symbol_at_of(r, q);
        int k = 0;

        if (!r->mapping_refused && (res->mapping_error == -EPERM || res->mapping_error == -EACCES))
                r->mapping_refused = res->mapping_error;
        /* The answer to a question asked before the table was emptied: asked again if needed. */
        if (!s)
                return 0;
        if (res->error == -EDQUOT) {
                s->state = SYMBOL_REFUSED;
                s->retry_usec = now + SYMBOL_REFUSED_RETRY_USEC;
                return 0;
        }
        /* No answer about the file (counted by the worker): the next count asks again, with its
         * process and mapping, which may still be there. */
        if (res->unreadable) {
                s->state = SYMBOL_RETRY;
                return 0;
        }
        s->state = SYMBOL_KNOWN;
        if (res->error >= 0) {
                free(s->symbol);
                s->symbol = TAKE_PTR(res->symbol);
                s->symbol_offset = res->symbol_offset;
        }
        /* Known now, with a symbol or none: the names are spent, taken by the fills. */
        for (size_t i = 0; i < s->n_names; i++) {
                char *name = TAKE_PTR(s->names[i]);

                if (s->symbol && k >= 0)
                        k = symbol_fill(r, q, name, s);
                else
                        free(name);
        }
        s->n_names = 0;
        return k;
}

/* How often group trapstat is looked up anew: a lookup goes through every NSS source (270 µs
 * where systemd's userdb is asked and the group does not exist), which every tick at 200 ms
 * would be 0.14 % of a core. */
#define GROUP_CHECK_USEC (10 * USEC_PER_SEC)

/* Root and group trapstat keep the reserve of the site hash: BPF learns the group's gid here, at
 * the first tick and every GROUP_CHECK_USEC, so that creating the group needs no restart (as for
 * the socket, which looks it up at each connection). */
static void site_privileged_group_update(SiteReader *r, uint64_t now) {
        struct ts_site_epochs *ep = &r->bpf->skel->bss->site_epochs;
        struct group grp, *found = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t size = 4096;
        int k;

        if (r->group_checked_usec != 0 && now - r->group_checked_usec < GROUP_CHECK_USEC)
                return;
        r->group_checked_usec = now;
        for (;;) {
                free(buf);
                buf = malloc(size);
                if (!buf)
                        return; /* as it was: next tick */
                k = getgrnam_r(TRAPSTAT_GROUP, &grp, buf, size, &found);
                if (k != ERANGE || size >= 1024 * 1024)
                        break;
                size *= 4;
        }
        if (k != 0)
                return;
        if (found)
                __atomic_store_n(&ep->privileged_gid, (uint32_t) found->gr_gid, __ATOMIC_RELAXED);
        __atomic_store_n(&ep->privileged_group, found ? 1 : 0, __ATOMIC_RELEASE);
}

/* Flips the epoch, unless the one before is still to be drained (it was busy last tick); true when
 * no program counts into the old epoch (r->old_epoch) any more. */
static bool site_epoch_over(SiteReader *r) {
        struct ts_site_epochs *ep = &r->bpf->skel->bss->site_epochs;
        uint64_t start;

        if (!r->flipped) {
                r->old_epoch = __atomic_load_n(&ep->epoch, __ATOMIC_RELAXED) & 1;
                /* Sequentially consistent with the loads of active[] below (BPF's side is in
                 * site_epoch_enter()): a program that announced itself too late to be seen here
                 * sees the new epoch when it reads it again. */
                __atomic_store_n(&ep->epoch, r->old_epoch ^ 1, __ATOMIC_SEQ_CST);
                r->flipped = true;
        }
        start = now_usec(CLOCK_MONOTONIC);
        while (__atomic_load_n(&ep->active[r->old_epoch], __ATOMIC_SEQ_CST) != 0) {
                if (now_usec(CLOCK_MONOTONIC) - start > SITE_QUIESCE_USEC)
                        return false;
                sched_yield();
        }
        return true;
}

/* Whether a step of the drain has used its time: checked between batches of a hash. */
static bool past(uint64_t deadline) {
        return deadline != UINT64_MAX && now_usec(CLOCK_MONOTONIC) >= deadline;
}

/* Removes the share counts of an epoch that is over, a batch of the hash at a time (one entry a
 * process and epoch: a storm of short processes leaves thousands a tick), from where the last
 * step left off (r->walk); 1 when the hash is done, 0 when the deadline came first. */
static int shares_clear(SiteReader *r, int fd, uint32_t epoch, uint64_t deadline) {
        for (;;) {
                __u32 count = SITE_BATCH, n_old = 0;
                bool done = false;

                if (bpf_map_lookup_batch(fd, r->walk.started ? &r->walk.share_cursor : NULL, &r->walk.share_next,
                                         r->share_keys, r->share_values, &count, NULL) < 0) {
                        /* ENOENT: this was the last batch (count may still be > 0). */
                        if (errno != ENOENT)
                                return -errno;
                        done = true;
                }
                for (__u32 i = 0; i < count; i++)
                        if (r->share_keys[i].epoch == epoch)
                                r->share_keys[n_old++] = r->share_keys[i];
                /* As in drain_epoch(): the batch's buckets are behind the walk. */
                if (n_old > 0 && bpf_map_delete_batch(fd, r->share_keys, &n_old, NULL) < 0)
                        return -errno;
                r->walk.share_cursor = r->walk.share_next;
                r->walk.started = true;
                if (done)
                        return 1;
                if (past(deadline))
                        return 0;
        }
}

/* Reads the entries of the epoch that is over, a batch at a time from where the last step left
 * off (r->walk), hands each one's count to its process and deletes it; 1 when the hash is done
 * and the sites that waited for their process's maps are counted too, 0 when the deadline came
 * first. Entries of the current epoch are left to the next tick; those BPF adds between two steps
 * are all of the current epoch, so the walk may go on where it was. */
static int drain_epoch(SiteReader *r, uint32_t old, uint64_t now, uint64_t deadline) {
        int fd = bpf_map__fd(r->bpf->skel->maps.sites), k;

        for (;;) {
                __u32 count = SITE_BATCH, n_drained = 0;
                bool done = false;

                k = bpf_map_lookup_batch(fd, r->walk.started ? &r->walk.site_cursor : NULL, &r->walk.site_next, r->keys,
                                         r->values, &count, NULL);
                if (k < 0) {
                        /* ENOENT: this was the last batch (count may still be > 0). */
                        if (errno != ENOENT)
                                return -errno;
                        done = true;
                }
                for (__u32 i = 0; i < count; i++) {
                        const struct ts_site_key *key = &r->keys[i];
                        SitePending u = { .key = *key, .value = r->values[i] };

                        if (key->epoch != old)
                                continue;
                        r->drained[n_drained++] = *key;
                        /* (An entry of no count is nothing to name: drain_site() passes it by.) */
                        if ((u.value.count > 0 || u.value.time_ns > 0) && site_needs_maps(r, key))
                                k = array_append((void **) &r->pending, &r->n_pending,
                                                 &r->pending_capacity, sizeof(u), &u);
                        else
                                k = drain_site(r, key, &u.value, now);
                        if (k < 0)
                                return k;
                }
                /* The batch's buckets are behind the walk: deleting there does not disturb it. */
                if (n_drained > 0 && bpf_map_delete_batch(fd, r->drained, &n_drained, NULL) < 0)
                        return -errno;
                r->walk.site_cursor = r->walk.site_next;
                r->walk.started = true;
                if (done)
                        break;
                if (past(deadline))
                        return 0;
        }
        k = drain_pending_sites(r, now);
        return k < 0 ? k : 1;
}

/* The worker's answers since the last drain: the symbols of this drain's sites, and fills for the
 * rows stored without them, which this drain returns (CollectorTick.fills). At the drain's start,
 * so that its sites carry what is known by then rather than wait for a fill. */
static int take_symbols(SiteReader *r, uint64_t now) {
        SymbolResult *results;
        size_t n_results;
        int error = 0;

        asks_drop(r, false);
        site_counts_free(r->fills, r->n_fills);
        r->fills = NULL;
        r->n_fills = r->fills_capacity = 0;
        symbol_worker_take(r->symbol_worker, &results, &n_results);
        for (size_t i = 0; i < n_results && error >= 0; i++)
                error = take_symbol(r, &results[i], now);
        symbol_results_free(results, n_results);
        return error;
}

int site_reader_drain_step(SiteReader *r, uint64_t now, uint64_t deadline) {
        struct ts_site_epochs *ep = &r->bpf->skel->bss->site_epochs;
        int k = 0;

        switch (r->walk.stage) {
        case SITE_WALK_BEGIN:
                if ((k = take_symbols(r, now)) < 0)
                        return k;
                site_privileged_group_update(r, now);
                if (!site_epoch_over(r))
                        return 0; /* still busy: drained next tick */
                r->n_pending = 0;
                r->drains++;
                r->walk = (SiteWalk) { .stage = SITE_WALK_SITES };
                _fallthrough_;
        case SITE_WALK_SITES:
                if ((k = drain_epoch(r, r->old_epoch, now, deadline)) <= 0)
                        break;
                r->walk = (SiteWalk) { .stage = SITE_WALK_SHARES };
                _fallthrough_;
        case SITE_WALK_SHARES:
                if ((k = shares_clear(r, bpf_map__fd(r->bpf->skel->maps.site_quota), r->old_epoch, deadline)) <= 0)
                        break;
                r->walk = (SiteWalk) { .stage = SITE_WALK_USER_SHARES };
                _fallthrough_;
        case SITE_WALK_USER_SHARES:
                k = shares_clear(r, bpf_map__fd(r->bpf->skel->maps.site_user_quota), r->old_epoch, deadline);
                if (k <= 0)
                        break;
                __atomic_store_n(&ep->entries[r->old_epoch], 0, __ATOMIC_RELEASE);
                r->flipped = false;
                r->walk = (SiteWalk) { .stage = SITE_WALK_BEGIN };
                return 0;
        }
        /* A failure: the next tick walks the same epoch again from its start (what was drained
         * left the hash). */
        if (k < 0)
                r->walk = (SiteWalk) { .stage = SITE_WALK_BEGIN };
        return k < 0 ? k : 1;
}

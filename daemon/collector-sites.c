/* SPDX-License-Identifier: MIT */
/* The site reader, part of the collector's readers (collector-read.h): every tick the site hash
 * (bpf/trapstat.bpf.c: where processes trapped and, sampled, faulted) is read in batches, each
 * entry's growth since the last tick becomes a SiteCount of its process, named for people: the
 * file's path from the name map BPF wrote while the process lived (again whenever the inode
 * changed: a rename, an inode number reused), and the symbol from the file's ELF symbol tables.
 * Symbols come from the symbol worker (daemon/symbol-worker.c), never from this thread: a site
 * whose symbol is not known yet is counted with its file and offset at once, the worker is asked,
 * and its answer, taken at a later drain, names the site's next counts and is handed to the store
 * for the rows already written (reader_symbol_fills()). Names and symbols are remembered by the
 * inode's version as BPF saw it (change time, generation), so a renamed file or a reused inode
 * number is named afresh. A process's entries are removed from the hash once it exited and was
 * drained a last time, as its other map entries are. */
#include "collector-read.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"
#include "trapstat.skel.h"

/* Site entries read per bpf_map_lookup_batch() call. */
#define SITE_BATCH 256
/* Paths and symbols remembered: past this many, all are forgotten and learned again. */
#define NAMES_MAX 65536
/* A symbol refused for its uid's budget is asked for again at a count this long after. */
#define SYMBOL_RETRY_USEC (60 * UINT64_C(1000000))

/* A fault site of a live process that sampled nothing for this long leaves the hash, so that a
 * long-running process (a JIT, whose code addresses are all different sites) does not fill it
 * for everyone. Deleting an entry races with a BPF program that looked it up just before and
 * adds after: that one sample is lost (or, the element being reused, counted to another site).
 * Fault counts are samples, so that is within what they promise; trap sites are never aged. */
#define FAULT_SITE_IDLE_USEC (60 * UINT64_C(1000000))

/* What a site of one process counted already, by its BPF key. */
typedef struct SiteSeen {
        struct ts_site_key key;
        uint64_t count;
        uint64_t changed_usec; /* the last tick it grew */
} SiteSeen;

static int site_seen_compare(const void *a, const void *b) {
        return memcmp(&((const SiteSeen *) a)->key, &((const SiteSeen *) b)->key, sizeof(struct ts_site_key));
}

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

/* The path of a file, by the kernel's (device, inode): the version it is the name of. */
typedef struct FilePath {
        FileVersion version;
        char *path;
} FilePath;

static int file_path_compare(const void *a, const void *b) {
        const FilePath *x = a, *y = b;

        if (x->version.dev != y->version.dev)
                return x->version.dev < y->version.dev ? -1 : 1;
        return x->version.ino < y->version.ino ? -1 : x->version.ino > y->version.ino;
}

static void file_path_free(void *p) {
        FilePath *f = p;

        free(f->path);
        free(f);
}

typedef enum SymbolState {
        SYMBOL_PENDING, /* asked for, the worker has not answered */
        SYMBOL_KNOWN,   /* answered: symbol, or NULL for none */
        SYMBOL_REFUSED, /* the uid's budget was spent: asked again after retry_usec */
} SymbolState;

/* The symbol of an instruction of a version of a file, or that it has none. */
typedef struct SymbolAt {
        FileVersion version;
        uint64_t offset;
        SymbolState state;
        uint64_t retry_usec;
        char *symbol; /* NULL: none */
        uint64_t symbol_offset;
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
        free(s);
}

static void asks_drop(CollectorReader *r);

int reader_sites_init(CollectorReader *r, const SymbolWorkerConfig *symbols) {
        /* The daemon's budget is 32 MiB of RSS: a quarter of it for symbol tables. */
        SymbolWorkerConfig config = *symbols;
        int k;

        config.max_bytes = config.max_bytes ?: 8 * 1024 * 1024;
        k = symbol_worker_new(&config, &r->symbol_worker);
        if (k < 0)
                return k;
        r->site_keys = calloc(SITE_BATCH, sizeof(struct ts_site_key));
        r->site_values = calloc(SITE_BATCH, sizeof(struct ts_site));
        if (!r->site_keys || !r->site_values)
                return -ENOMEM;
        return 0;
}

void reader_sites_done(CollectorReader *r) {
        tdestroy(r->file_paths, file_path_free);
        tdestroy(r->symbols, symbol_at_free);
        r->file_paths = r->symbols = NULL;
        r->symbol_worker = symbol_worker_free(r->symbol_worker);
        asks_drop(r);
        free(r->asks);
        r->asks = NULL;
        r->n_asks = r->asks_capacity = 0;
        site_counts_free(r->fills, r->n_fills);
        r->fills = NULL;
        r->n_fills = r->fills_capacity = 0;
        free(r->site_keys);
        free(r->site_values);
}

/* The file's path, remembered by its version, and the version BPF named; when BPF could not
 * record it, a name from its identity (not remembered: the name map may have it by the next
 * tick) and *ret_version zeroed but for dev and ino. NULL when out of memory. */
static const char *file_path(CollectorReader *r, uint32_t dev, uint64_t ino, char fallback[static 64],
                             FileVersion *ret_version) {
        FilePath key = { .version = { .dev = dev, .ino = ino } }, *f, **found;
        struct ts_file_key bpf_key = { .ino = ino, .dev = dev };
        struct ts_file_name name;

        /* Asked every time: BPF writes a new name when the file was renamed or the inode
         * number went to another file, and that one must not keep the old name. */
        if (bpf_map_lookup_elem(bpf_map__fd(r->bpf->skel->maps.file_names), &bpf_key, &name) < 0) {
                snprintf(fallback, 64, "[dev %u:%u inode %" PRIu64 "]", dev >> 20, dev & 0xfffff, ino);
                *ret_version = key.version;
                return fallback;
        }
        key.version = (FileVersion) { .dev = dev, .ino = ino, .ctime_sec = name.ctime_sec,
                                      .ctime_nsec = name.ctime_nsec, .generation = name.generation };
        *ret_version = key.version;
        found = tfind(&key, &r->file_paths, file_path_compare);
        if (found && file_version_compare(&(*found)->version, &key.version) == 0)
                return (*found)->path;
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
        *f = (FilePath) { .version = key.version, .path = file_name_join(&name) };
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

/* Asks the worker for the symbol of s at the end of the drain (reader_ask_symbols()); s is pending
 * until the answer, or asked again at its next count when it cannot be asked. */
static void symbol_request(CollectorReader *r, SymbolAt *s, const char *path, const CollectorProc *p) {
        SymbolRequest q = {
                .dev = dev_from_kernel(s->version.dev),
                .ino = s->version.ino,
                .ctime = { .tv_sec = (time_t) s->version.ctime_sec, .tv_nsec = s->version.ctime_nsec },
                .offset = s->offset,
                .path = (char *) path,
                .key_dev = s->version.dev,
                .key_generation = s->version.generation,
        };
        SymbolAsk ask = { .request = q, .proc = p };

        s->retry_usec = 0;
        s->state = SYMBOL_REFUSED;
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
static SymbolAt *symbol_at_of(CollectorReader *r, const SymbolRequest *q) {
        SymbolAt key = { .version = { .dev = q->key_dev, .ino = q->ino, .ctime_sec = (uint64_t) q->ctime.tv_sec,
                                      .ctime_nsec = (uint32_t) q->ctime.tv_nsec, .generation = q->key_generation },
                         .offset = q->offset },
                 **found = tfind(&key, &r->symbols, symbol_at_compare);

        return found ? *found : NULL;
}

/* Asks a drain that failed left: their processes may be freed, the sites are asked for again at
 * their next count. */
static void asks_drop(CollectorReader *r) {
        for (size_t i = 0; i < r->n_asks; i++) {
                SymbolAt *s = symbol_at_of(r, &r->asks[i].request);

                if (s)
                        s->state = SYMBOL_REFUSED;
                free(r->asks[i].request.path);
        }
        r->n_asks = 0;
}

void reader_ask_symbols(CollectorReader *r) {
        for (size_t i = 0; i < r->n_asks; i++) {
                SymbolAsk *a = &r->asks[i];
                SymbolAt *s;

                a->request.uid = a->proc->info.uid;
                /* A full queue: the site is asked for again at its next count. */
                if (symbol_worker_submit(r->symbol_worker, &a->request) < 0 && (s = symbol_at_of(r, &a->request)))
                        s->state = SYMBOL_REFUSED;
                free(a->request.path);
        }
        r->n_asks = 0;
}

/* What is known of the symbol at offset of the file version, remembered; asks the worker the
 * first time (and again after a refusal). NULL when out of memory. */
static const SymbolAt *symbol_at(CollectorReader *r, const char *path, const FileVersion *version, uint64_t offset,
                                 const CollectorProc *p, uint64_t now) {
        SymbolAt key = { .version = *version, .offset = offset }, *s, **found;

        found = tfind(&key, &r->symbols, symbol_at_compare);
        if (found) {
                s = *found;
                if (s->state == SYMBOL_REFUSED && now >= s->retry_usec && path[0] == '/')
                        symbol_request(r, s, path, p);
                return s;
        }
        if (r->n_symbols >= NAMES_MAX) {
                tdestroy(r->symbols, symbol_at_free);
                r->symbols = NULL;
                r->n_symbols = 0;
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        *s = key;
        s->state = SYMBOL_KNOWN;
        /* A path that is not absolute is a name BPF cut short, no file to open. */
        if (path[0] == '/')
                symbol_request(r, s, path, p);
        if (!tsearch(s, &r->symbols, symbol_at_compare)) {
                symbol_at_free(s);
                return NULL;
        }
        r->n_symbols++;
        return s;
}

static int strdup_to(const char *s, char **ret) {
        *ret = s ? strdup(s) : NULL;
        return s && !*ret ? -ENOMEM : 0;
}

/* The named form of one location: the object, its identity, and for an instruction its offset
 * and symbol. */
static int name_location(CollectorReader *r, const struct ts_location *loc, bool code, const CollectorProc *p,
                         uint64_t now,
                         char **ret_object, uint64_t *ret_dev, uint64_t *ret_ino, char **ret_symbol,
                         uint64_t *ret_symbol_offset) {
        FileVersion version;
        char fallback[64];
        const char *object;

        *ret_dev = *ret_ino = 0;
        if (loc->kind != TS_MEM_FILE)
                return strdup_to(memory_kind_object((MemoryKind) loc->kind) ?: "[unknown]", ret_object);

        object = file_path(r, loc->dev, loc->ino, fallback, &version);
        if (!object)
                return -ENOMEM;
        *ret_dev = dev_from_kernel(loc->dev);
        *ret_ino = loc->ino;
        if (code && object != fallback) {
                const SymbolAt *s = symbol_at(r, object, &version, loc->offset, p, now);

                if (!s)
                        return -ENOMEM;
                if (strdup_to(s->symbol, ret_symbol) < 0)
                        return -ENOMEM;
                *ret_symbol_offset = s->symbol_offset;
        }
        return strdup_to(object, ret_object);
}

static int site_from_bpf(CollectorReader *r, const struct ts_site_key *key, uint64_t count, const CollectorProc *p,
                         uint64_t now, SiteCount *ret) {
        SiteCount s = {
                .kind = key->kind == TS_SITE_FAULT ? SITE_FAULT : SITE_TRAP,
                .vector = key->vector < TS_N_VECTORS ? key->vector : TRAP_VECTOR_UNKNOWN,
                .period = key->kind == TS_SITE_FAULT ? collector_bpf_fault_sample(r->bpf) : 1,
                .offset = key->ip.offset,
                .memory = key->memory.kind < _MEMORY_KIND_MAX ? (MemoryKind) key->memory.kind : MEMORY_UNKNOWN,
                .count = count,
        };
        uint64_t unused;
        char *no_symbol = NULL;
        int k;

        k = name_location(r, &key->ip, true, p, now, &s.object, &s.dev, &s.ino, &s.symbol, &s.symbol_offset);
        if (k >= 0 && s.memory == MEMORY_FILE)
                k = name_location(r, &key->memory, false, p, now, &s.memory_object, &s.memory_dev, &s.memory_ino,
                                  &no_symbol, &unused);
        if (k < 0) {
                site_count_done(&s);
                return k;
        }
        *ret = s;
        return 0;
}

/* An entry left the site hash: its process may have one more. Not atomic with BPF's adds: one
 * that comes in between is lost, and the process may then have one entry more than its share. */
static void quota_give_back(CollectorReader *r, const struct ts_site_key *key) {
        struct ts_proc_key pkey = { .tgid = key->tgid, .start_time = key->start_time };
        int fd = bpf_map__fd(r->bpf->skel->maps.site_quota);
        struct ts_site_quota q;

        if (bpf_map_lookup_elem(fd, &pkey, &q) == 0 && q.n > 0) {
                q.n--;
                (void) bpf_map_update_elem(fd, &pkey, &q, BPF_EXIST);
        }
}

/* One entry: what it counted since the last tick goes to its process. */
static int drain_site(CollectorReader *r, const struct ts_site_key *key, uint64_t count, uint64_t now) {
        SiteSeen probe = { .key = *key }, *seen, **found;
        CollectorProc *p;
        SiteCount delta;
        int k;

        k = proc_table_get(r->procs, key->tgid, key->start_time, NULL, now, &p);
        if (k < 0)
                return k;
        found = tfind(&probe, &p->sites_seen, site_seen_compare);
        if (found)
                seen = *found;
        else {
                seen = calloc(1, sizeof(*seen));
                if (!seen)
                        return -ENOMEM;
                seen->key = *key;
                seen->changed_usec = now;
                if (!tsearch(seen, &p->sites_seen, site_seen_compare)) {
                        free(seen);
                        return -ENOMEM;
                }
        }
        if (count <= seen->count) {
                if (key->kind == TS_SITE_FAULT && now - seen->changed_usec > FAULT_SITE_IDLE_USEC &&
                    bpf_map_delete_elem(bpf_map__fd(r->bpf->skel->maps.sites), key) == 0) {
                        tdelete(seen, &p->sites_seen, site_seen_compare);
                        free(seen);
                        quota_give_back(r, key);
                }
                return 0;
        }
        k = site_from_bpf(r, key, count - seen->count, p, now, &delta);
        if (k < 0)
                return k;
        seen->count = count;
        seen->changed_usec = now;
        return proc_table_count_site(r->procs, p, &delta, now);
}

/* One answer of the worker: what the site's next counts are named with, and, for a symbol, a fill
 * of the rows already stored. */
static int take_symbol(CollectorReader *r, SymbolResult *res, uint64_t now) {
        const SymbolRequest *q = &res->request;
        SymbolAt *s = symbol_at_of(r, q);
        SiteCount fill;

        /* The answer to a question asked before the table was emptied: asked again if needed. */
        if (!s)
                return 0;
        if (res->error == -EDQUOT) {
                s->state = SYMBOL_REFUSED;
                s->retry_usec = now + SYMBOL_RETRY_USEC;
                return 0;
        }
        s->state = SYMBOL_KNOWN;
        if (res->error < 0)
                return 0;
        free(s->symbol);
        s->symbol = strdup(res->symbol);
        s->symbol_offset = res->symbol_offset;
        if (!s->symbol)
                return -ENOMEM;
        fill = (SiteCount) {
                .kind = SITE_TRAP,
                .period = 1,
                .object = TAKE_PTR(res->request.path),
                .dev = res->request.dev,
                .ino = res->request.ino,
                .offset = res->request.offset,
                .symbol = TAKE_PTR(res->symbol),
                .symbol_offset = res->symbol_offset,
        };
        if (array_append((void **) &r->fills, &r->n_fills, &r->fills_capacity, sizeof(fill), &fill) < 0) {
                site_count_done(&fill);
                return -ENOMEM;
        }
        return 0;
}

int reader_drain_sites(CollectorReader *r, uint64_t now) {
        int fd = bpf_map__fd(r->bpf->skel->maps.sites);
        struct ts_site_key in_batch, out_batch;
        bool first = true, done = false;
        SymbolResult *results;
        size_t n_results;
        int error = 0;

        asks_drop(r);
        site_counts_free(r->fills, r->n_fills);
        r->fills = NULL;
        r->n_fills = r->fills_capacity = 0;
        symbol_worker_take(r->symbol_worker, &results, &n_results);
        for (size_t i = 0; i < n_results && error >= 0; i++)
                error = take_symbol(r, &results[i], now);
        symbol_results_free(results, n_results);
        if (error < 0)
                return error;

        while (!done) {
                __u32 count = SITE_BATCH;
                int k;

                k = bpf_map_lookup_batch(fd, first ? NULL : &in_batch, &out_batch, r->site_keys, r->site_values, &count,
                                         NULL);
                if (k < 0) {
                        /* ENOENT: this was the last batch (count may still be > 0). */
                        if (errno != ENOENT)
                                return -errno;
                        done = true;
                }
                for (__u32 i = 0; i < count; i++) {
                        k = drain_site(r, &r->site_keys[i], r->site_values[i].count, now);
                        if (k < 0)
                                return k;
                }
                in_batch = out_batch;
                first = false;
        }
        return 0;
}

typedef struct ForgetSites {
        int fd;
} ForgetSites;

static void forget_site_visit(const void *node, VISIT which, void *userdata) {
        const SiteSeen *seen = *(const SiteSeen *const *) node;
        ForgetSites *f = userdata;

        if (which == postorder || which == leaf)
                (void) bpf_map_delete_elem(f->fd, &seen->key);
}

void reader_forget_sites(CollectorReader *r, CollectorProc *p) {
        ForgetSites f = { .fd = bpf_map__fd(r->bpf->skel->maps.sites) };

        twalk_r(p->sites_seen, forget_site_visit, &f);
        tdestroy(p->sites_seen, free);
        p->sites_seen = NULL;
}

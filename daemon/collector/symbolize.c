/* SPDX-License-Identifier: MIT */
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array-util.h"

#define BUILD_ID_MAX 64
/* Real files have a handful of program headers and notes; more is a hostile file making every
 * lookup slow. */
#define PHDRS_MAX 4096
#define NOTES_SEGMENT_MAX (64U * 1024)
/* How far a lookup walks back over symbols that start before the address, looking for one
 * whose range (nested or overlapping symbols) still holds it. */
#define LOOKUP_WALK_MAX 64

static inline void elf_endp(Elf **e) {
        if (*e)
                elf_end(*e);
}

typedef struct FileKey {
        dev_t dev;
        ino_t ino;
        size_t build_id_size; /* 0: none, then size and mtime tell versions of the file apart */
        uint8_t build_id[BUILD_ID_MAX];
        off_t size;
        struct timespec mtime, ctime;
} FileKey;

/* A file remembered as not to be symbolized: its identity from fstat() alone, so that it is
 * answered before any of it is read. */
typedef struct Outcome {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime, ctime;
        int error;
} Outcome;

typedef struct SymbolEntry {
        uint64_t addr;
        uint64_t end;     /* exclusive: addr + st_size, or for size-0 symbols the next one's start */
        uint64_t max_end; /* the largest end of this and all entries before it: stops the walk back */
        size_t name;      /* offset into SymbolFile.names */
} SymbolEntry;

typedef struct SymbolFile {
        FileKey key;
        SymbolEntry *entries;
        size_t n_entries;
        char *names;
        uint64_t bytes; /* what it counts against max_bytes */
        struct SymbolFile *prev, *next; /* most recently used first */
} SymbolFile;

struct Symbolizer {
        SymbolizerConfig config;
        SymbolFile *head, *tail;
        SymbolizerStats stats;
        Outcome outcomes[SYMBOLIZER_OUTCOMES_MAX]; /* a ring: the oldest is overwritten */
        size_t n_outcomes, next_outcome;
};

/* A symbol while a table is being built, pointing into libelf's copy of the string table. */
typedef struct Candidate {
        uint64_t addr;
        uint64_t size;
        uint64_t section_end;
        const char *name;
        size_t name_len;
        unsigned rank; /* higher is preferred among symbols at one address */
} Candidate;

static SymbolFile *symbol_file_free(SymbolFile *f) {
        if (!f)
                return NULL;
        free(f->entries);
        free(f->names);
        free(f);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(SymbolFile *, symbol_file_free);

int symbolizer_new(const SymbolizerConfig *config, Symbolizer **ret) {
        Symbolizer *s;

        /* Once per process; it only records the version, so calling it again is harmless. */
        if (elf_version(EV_CURRENT) == EV_NONE)
                return -ENOTSUP;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        if (config)
                s->config = *config;
        if (s->config.max_files == 0)
                s->config.max_files = SYMBOLIZER_MAX_FILES_DEFAULT;
        if (s->config.max_bytes == 0)
                s->config.max_bytes = SYMBOLIZER_MAX_BYTES_DEFAULT;
        if (s->config.max_read_bytes == 0)
                s->config.max_read_bytes = s->config.max_bytes > UINT64_MAX / 2 ? UINT64_MAX : 2 * s->config.max_bytes;
        if (s->config.max_file_size == 0)
                s->config.max_file_size = SYMBOLIZER_MAX_FILE_SIZE_DEFAULT;
        *ret = s;
        return 0;
}

Symbolizer *symbolizer_free(Symbolizer *s) {
        if (!s)
                return NULL;
        while (s->head) {
                SymbolFile *next = s->head->next;

                symbol_file_free(s->head);
                s->head = next;
        }
        free(s);
        return NULL;
}

void symbolizer_get_stats(const Symbolizer *s, SymbolizerStats *ret) {
        *ret = s->stats;
}

static void lru_unlink(Symbolizer *s, SymbolFile *f) {
        if (f->prev)
                f->prev->next = f->next;
        else
                s->head = f->next;
        if (f->next)
                f->next->prev = f->prev;
        else
                s->tail = f->prev;
        f->prev = f->next = NULL;
}

static void lru_push_front(Symbolizer *s, SymbolFile *f) {
        f->prev = NULL;
        f->next = s->head;
        if (s->head)
                s->head->prev = f;
        else
                s->tail = f;
        s->head = f;
}

static void evict_tail(Symbolizer *s) {
        SymbolFile *f = s->tail;

        lru_unlink(s, f);
        s->stats.files--;
        s->stats.bytes -= f->bytes;
        s->stats.evictions++;
        symbol_file_free(f);
}

static bool timespec_equal(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static bool key_equal(const FileKey *a, const FileKey *b) {
        /* The change time also with a build id: an inode number reused by another file that claims
         * the same build id (copied, or hostile) must not get the old file's symbols. */
        if (a->dev != b->dev || a->ino != b->ino || a->build_id_size != b->build_id_size ||
            !timespec_equal(&a->ctime, &b->ctime))
                return false;
        if (a->build_id_size > 0)
                return memcmp(a->build_id, b->build_id, a->build_id_size) == 0;
        return a->size == b->size && timespec_equal(&a->mtime, &b->mtime);
}

static bool outcome_is(const Outcome *o, const struct stat *st) {
        return o->dev == st->st_dev && o->ino == st->st_ino && o->size == st->st_size &&
               timespec_equal(&o->mtime, &st->st_mtim) && timespec_equal(&o->ctime, &st->st_ctim);
}

/* The remembered outcome of the file, 0 when there is none. */
static int outcome_find(const Symbolizer *s, const struct stat *st) {
        for (size_t i = 0; i < s->n_outcomes; i++)
                if (outcome_is(&s->outcomes[i], st))
                        return s->outcomes[i].error;
        return 0;
}

/* Returns error, remembered when it is about the whole file and lasts as long as the file does
 * (not -ENOMEM, not a budget). */
static int outcome_remember(Symbolizer *s, const struct stat *st, int error) {
        if (error != -ENOEXEC && error != -EFBIG && error != -E2BIG)
                return error;
        s->outcomes[s->next_outcome] = (Outcome) { .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
                                                   .mtime = st->st_mtim, .ctime = st->st_ctim, .error = error };
        s->next_outcome = (s->next_outcome + 1) % SYMBOLIZER_OUTCOMES_MAX;
        s->n_outcomes = MIN(s->n_outcomes + 1, (size_t) SYMBOLIZER_OUTCOMES_MAX);
        return error;
}

/* Linear: max_files is in the hundreds, and the walk is nothing next to the open() before it. */
static SymbolFile *cache_find(Symbolizer *s, const FileKey *key) {
        for (SymbolFile *f = s->head; f; f = f->next)
                if (key_equal(&f->key, key))
                        return f;
        return NULL;
}

/* Whether st is a regular file of at most max_size bytes: 0, or why not. */
static int regular_within(const struct stat *st, uint64_t max_size) {
        if (S_ISDIR(st->st_mode))
                return -EISDIR;
        if (!S_ISREG(st->st_mode))
                return -EBADFD;
        if (st->st_size < 0 || (uint64_t) st->st_size > max_size)
                return -EFBIG;
        return 0;
}

/* path opened for reading (with extra_flags), if it is a regular file of at most max_size bytes.
 * O_NONBLOCK: opening a FIFO for reading must not wait for a writer; it changes nothing for the
 * regular files that are read. */
static int open_regular(const char *path, int extra_flags, uint64_t max_size, struct stat *ret_st) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | extra_flags);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        r = regular_within(&st, max_size);
        if (r < 0)
                return r;
        *ret_st = st;
        return TAKE_FD(fd);
}

int symbolizer_check_fd(int fd, uint64_t dev, uint64_t ino, const struct timespec *ctime, uint64_t max_size) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        /* Whatever the descriptor names now (a path renamed over, swapped, a mapping replaced):
         * only the file the caller was told of is read. */
        if ((uint64_t) st.st_dev != dev || (uint64_t) st.st_ino != ino || (ctime && !timespec_equal(&st.st_ctim, ctime)))
                return -ESTALE;
        /* After the identity: a file swapped in is refused as such, not for its size. */
        return regular_within(&st, max_size);
}

int symbolizer_open(const char *path, uint64_t dev, uint64_t ino, const struct timespec *ctime, uint64_t max_size,
                    int *ret_fd) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        /* O_NOFOLLOW: a symlink swapped in for the file is refused, not followed to whatever it
         * points at. */
        fd = open_regular(path, O_NOFOLLOW, UINT64_MAX, &st);
        if (fd < 0)
                return fd;
        r = symbolizer_check_fd(fd, dev, ino, ctime, max_size);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

uint64_t symbolizer_max_file_size(const Symbolizer *s) {
        return s->config.max_file_size;
}

/* The GNU build id from the PT_NOTE segment p; leaves key untouched when there is none. */
static void read_build_id(Elf *elf, const GElf_Phdr *p, FileKey *key) {
        Elf_Data *data;
        GElf_Nhdr nhdr;
        size_t off = 0, next, name_off, desc_off;

        if (p->p_filesz == 0 || p->p_filesz > NOTES_SEGMENT_MAX)
                return;
        /* Checks that the chunk lies inside the file. */
        data = elf_getdata_rawchunk(elf, (int64_t) p->p_offset, p->p_filesz,
                                    p->p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
        if (!data || !data->d_buf)
                return;
        while ((next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
                if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == sizeof(ELF_NOTE_GNU) &&
                    memcmp((const char *) data->d_buf + name_off, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) == 0 &&
                    nhdr.n_descsz > 0 && nhdr.n_descsz <= BUILD_ID_MAX) {
                        memcpy(key->build_id, (const char *) data->d_buf + desc_off, nhdr.n_descsz);
                        key->build_id_size = nhdr.n_descsz;
                        return;
                }
                off = next;
        }
}

/* From the program headers: the link-time address of file_offset (-ENOENT when no loadable
 * segment holds it), and the build id. A file without program headers cannot be mapped. */
static int read_program_headers(Elf *elf, const GElf_Ehdr *ehdr, uint64_t file_size, uint64_t file_offset, FileKey *key,
                                uint64_t *ret_vaddr) {
        bool found = false, found_exec = false;
        uint64_t vaddr = 0;
        size_t n;

        if (elf_getphdrnum(elf, &n) < 0 || n > PHDRS_MAX)
                return -ENOEXEC;
        /* libelf may count program headers it cannot read as none. */
        if (n == 0 || ehdr->e_phentsize != gelf_fsize(elf, ELF_T_PHDR, 1, EV_CURRENT) || ehdr->e_phoff > file_size ||
            n > (file_size - ehdr->e_phoff) / ehdr->e_phentsize)
                return -ENOEXEC;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr p;

                if (!gelf_getphdr(elf, (int) i, &p))
                        return -ENOEXEC;
                if (p.p_type == PT_NOTE && key->build_id_size == 0)
                        read_build_id(elf, &p, key);
                if (p.p_type != PT_LOAD || file_offset < p.p_offset || file_offset - p.p_offset >= p.p_filesz)
                        continue;
                /* Segments should not share file bytes; if a hostile file makes them, the
                 * executable one is where code is. */
                if (found && (found_exec || !(p.p_flags & PF_X)))
                        continue;
                vaddr = file_offset - p.p_offset + p.p_vaddr;
                found = true;
                found_exec = p.p_flags & PF_X;
        }
        if (!found)
                return -ENOENT;
        *ret_vaddr = vaddr;
        return 0;
}

/* libelf reads a section header table that lies past the end of the file (a file cut short) as
 * no sections at all; that is a damaged file, not one without symbols. */
static int check_section_headers(Elf *elf, const GElf_Ehdr *ehdr, uint64_t file_size) {
        size_t n;

        if (elf_getshdrnum(elf, &n) < 0)
                return -ENOEXEC;
        /* e_shnum is 0 when the count is in section 0, which libelf could not read either. */
        n = MAX(n, (size_t) ehdr->e_shnum);
        if (n == 0 && ehdr->e_shoff == 0)
                return 0;
        n = MAX(n, (size_t) 1);
        if (ehdr->e_shentsize != gelf_fsize(elf, ELF_T_SHDR, 1, EV_CURRENT) || ehdr->e_shoff > file_size ||
            n > (file_size - ehdr->e_shoff) / ehdr->e_shentsize)
                return -ENOEXEC;
        return 0;
}

static unsigned symbol_rank(const GElf_Sym *sym) {
        unsigned rank = 0;

        /* Functions over labels, sized over size 0, global over weak over local. */
        if (GELF_ST_TYPE(sym->st_info) != STT_NOTYPE)
                rank += 8;
        if (sym->st_size > 0)
                rank += 4;
        if (GELF_ST_BIND(sym->st_info) == STB_GLOBAL)
                rank += 2;
        else if (GELF_ST_BIND(sym->st_info) == STB_WEAK)
                rank += 1;
        return rank;
}

static bool candidate_is_func(const Candidate *c) {
        return c->rank >= 8;
}

static int candidate_compare(const void *a, const void *b) {
        const Candidate *x = a, *y = b;

        if (x->addr != y->addr)
                return x->addr < y->addr ? -1 : 1;
        /* The preferred first. */
        if (x->rank != y->rank)
                return x->rank > y->rank ? -1 : 1;
        if (x->size != y->size)
                return x->size > y->size ? -1 : 1;
        /* Ties broken by name, so the choice does not depend on qsort. */
        return strncmp(x->name, y->name, SYMBOLIZER_NAME_MAX - 1);
}

typedef struct CandidateList {
        Candidate *items;
        size_t n, allocated;
        uint64_t bytes;       /* what the finished table would take without merging duplicates */
        uint64_t names_bytes; /* of that, the names with their NULs */
        uint64_t max_bytes;
} CandidateList;

static void candidate_list_done(CandidateList *l) {
        free(l->items);
}

static int candidate_add(CandidateList *l, const Candidate *c) {
        uint64_t bytes = sizeof(SymbolEntry) + c->name_len + 1;

        /* Most symbols of a file are in both .symtab and .dynsym and become one entry, so the
         * candidates may take twice the budget before the table is known to exceed it. */
        if (l->bytes + bytes > 2 * l->max_bytes)
                return -E2BIG;
        if (array_append((void **) &l->items, &l->n, &l->allocated, sizeof(*c), c) < 0)
                return -ENOMEM;
        l->bytes += bytes;
        l->names_bytes += c->name_len + 1;
        return 0;
}

/* The code symbols of one SHT_SYMTAB or SHT_DYNSYM section. A damaged table is skipped: the
 * file's other table may still be fine. */
static int collect_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, size_t shnum, CandidateList *l) {
        Elf_Data *data;
        size_t n;

        data = elf_getdata(scn, NULL);
        if (!data || shdr->sh_entsize == 0)
                return 0;
        n = data->d_size / gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
        for (size_t i = 1; i < n; i++) { /* entry 0 is the undefined symbol */
                GElf_Shdr target;
                GElf_Sym sym;
                Elf_Scn *ts;
                Candidate c;
                int type, r;

                if (!gelf_getsym(data, (int) i, &sym))
                        break;
                type = GELF_ST_TYPE(sym.st_info);
                if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
                        continue;
                /* Undefined (imports), absolute and common symbols have no code here, nor do
                 * extended section indexes, which only files with 65280+ sections use. */
                if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || sym.st_shndx >= shnum)
                        continue;
                /* Only symbols in code: this drops data labels and keeps assembly labels. */
                ts = elf_getscn(elf, sym.st_shndx);
                if (!ts || !gelf_getshdr(ts, &target) || !(target.sh_flags & SHF_EXECINSTR) ||
                    target.sh_type == SHT_NOBITS)
                        continue;
                c = (Candidate) {
                        .addr = sym.st_value,
                        .size = sym.st_size,
                        .section_end = target.sh_addr > UINT64_MAX - target.sh_size ? UINT64_MAX
                                                                                      : target.sh_addr + target.sh_size,
                        .name = elf_strptr(elf, shdr->sh_link, sym.st_name), /* checks bounds and the NUL */
                        .rank = symbol_rank(&sym),
                };
                if (!c.name || c.name[0] == '\0')
                        continue;
                /* ARM's mapping symbols ($a, $x, $d) mark instruction sets, not functions. */
                if (c.name[0] == '$')
                        continue;
                c.name_len = strnlen(c.name, SYMBOLIZER_NAME_MAX - 1);
                r = candidate_add(l, &c);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* What a section costs to read: its size, when it is in the file; libelf refuses to read one
 * that is not (and the table is then skipped). */
static uint64_t section_read_size(const GElf_Shdr *shdr, uint64_t file_size) {
        if (shdr->sh_type == SHT_NOBITS || shdr->sh_offset > file_size || shdr->sh_size > file_size - shdr->sh_offset)
                return 0;
        return shdr->sh_size;
}

/* What loading the file's symbols reads: the sizes of its symbol tables and of their string
 * tables, from the section headers, before any of them is read. At most the file's size per
 * section, so the sum cannot overflow. */
static int symbol_tables_size(Elf *elf, uint64_t file_size, uint64_t *ret) {
        Elf_Scn *scn = NULL;
        uint64_t total = 0;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr, strtab;
                Elf_Scn *link;

                if (!gelf_getshdr(scn, &shdr))
                        return -ENOEXEC;
                if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM)
                        continue;
                total += section_read_size(&shdr, file_size);
                link = elf_getscn(elf, shdr.sh_link);
                if (link && gelf_getshdr(link, &strtab))
                        total += section_read_size(&strtab, file_size);
        }
        *ret = total;
        return 0;
}

/* The sorted table of the file's code symbols, with names copied out of libelf's buffers. */
static int load_symbols(Elf *elf, uint64_t max_bytes, SymbolFile *f) {
        _cleanup_(candidate_list_done) CandidateList l = { .max_bytes = max_bytes };
        _cleanup_free_ SymbolEntry *entries = NULL;
        _cleanup_free_ char *names = NULL;
        const Candidate *items;
        Elf_Scn *scn = NULL;
        size_t shnum, n = 0, names_size = 0;
        uint64_t cover_end = 0, max_end = 0;
        int r = 0;

        if (elf_getshdrnum(elf, &shnum) < 0)
                return -ENOEXEC;
        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr;

                if (!gelf_getshdr(scn, &shdr))
                        return -ENOEXEC;
                if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM)
                        continue;
                r = collect_symbols(elf, scn, &shdr, shnum, &l);
                if (r < 0)
                        return r;
        }
        items = l.items;

        if (l.n > 0) {
                qsort(l.items, l.n, sizeof(*l.items), candidate_compare);
                entries = calloc(l.n, sizeof(*entries));
                names = malloc(l.names_bytes);
                if (!entries || !names)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < l.n; i++) {
                const Candidate *c = &items[i];
                uint64_t end;

                /* One symbol per address, the preferred one (sorted first); .symtab and .dynsym
                 * name most symbols twice. */
                if (i > 0 && items[i - 1].addr == c->addr)
                        continue;
                if (c->size > 0 && candidate_is_func(c)) {
                        end = c->addr > UINT64_MAX - c->size ? UINT64_MAX : c->addr + c->size;
                        cover_end = MAX(cover_end, end);
                } else if (c->addr < cover_end)
                        /* A label or a size-0 symbol inside a sized function: the function is the
                         * better name for its code. */
                        continue;
                else if (c->size > 0)
                        end = c->addr > UINT64_MAX - c->size ? UINT64_MAX : c->addr + c->size;
                else {
                        /* Size 0: up to the next symbol's start, within its section. */
                        end = c->section_end;
                        for (size_t j = i + 1; j < l.n; j++)
                                if (items[j].addr > c->addr) {
                                        end = MIN(end, items[j].addr);
                                        break;
                                }
                }
                if (end <= c->addr)
                        continue;
                max_end = MAX(max_end, end);
                entries[n++] = (SymbolEntry) { .addr = c->addr, .end = end, .max_end = max_end, .name = names_size };
                memcpy(names + names_size, c->name, c->name_len);
                names[names_size + c->name_len] = '\0';
                names_size += c->name_len + 1;
        }

        f->entries = TAKE_PTR(entries);
        f->n_entries = n;
        f->names = TAKE_PTR(names);
        f->bytes = sizeof(*f) + n * sizeof(SymbolEntry) + names_size;
        return 0;
}

static int table_lookup(const SymbolFile *f, uint64_t vaddr, SymbolizedFrame *ret) {
        size_t lo = 0, hi = f->n_entries;

        /* The first entry starting after vaddr. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (f->entries[mid].addr <= vaddr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        /* Back from the last one starting at or before it: the nearest start whose range holds
         * vaddr wins (the innermost of nested symbols). */
        for (size_t i = lo, steps = 0; i > 0 && steps < LOOKUP_WALK_MAX; i--, steps++) {
                const SymbolEntry *e = &f->entries[i - 1];
                char *name;

                if (e->max_end <= vaddr)
                        break;
                if (e->end <= vaddr)
                        continue;
                name = strdup(f->names + e->name);
                if (!name)
                        return -ENOMEM;
                *ret = (SymbolizedFrame) { .symbol = name, .offset = vaddr - e->addr };
                return 0;
        }
        return -ENOENT;
}

/* Loads the table of the file into the cache, within the budget; returns it. */
static int cache_load(Symbolizer *s, Elf *elf, const FileKey *key, SymbolizerBudget *budget, SymbolFile **ret) {
        _cleanup_(symbol_file_freep) SymbolFile *loaded = NULL;
        uint64_t tables;
        int r;

        r = symbol_tables_size(elf, (uint64_t) key->size, &tables);
        if (r < 0)
                return r;
        if (tables > s->config.max_read_bytes)
                return -E2BIG;
        if (budget && (budget->files == 0 || tables > budget->bytes))
                return -EDQUOT;
        if (budget) {
                budget->files--;
                budget->bytes -= tables;
        }
        loaded = calloc(1, sizeof(*loaded));
        if (!loaded)
                return -ENOMEM;
        loaded->key = *key;
        r = load_symbols(elf, s->config.max_bytes, loaded);
        if (r < 0)
                return r;
        s->stats.loads++;
        if (loaded->bytes > s->config.max_bytes)
                return -E2BIG;

        while (s->tail &&
               (s->stats.files >= s->config.max_files || s->stats.bytes + loaded->bytes > s->config.max_bytes))
                evict_tail(s);
        lru_push_front(s, loaded);
        s->stats.files++;
        s->stats.bytes += loaded->bytes;
        *ret = TAKE_PTR(loaded);
        return 0;
}

/* The ELF checks and the address of file_offset; the file's identity completed with its build
 * id. */
static int read_headers(Elf *elf, const struct stat *st, uint64_t file_offset, FileKey *key, uint64_t *ret_vaddr) {
        GElf_Ehdr ehdr;
        int r;

        if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
                return -ENOEXEC;
        if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)
                return -ENOEXEC;
        r = check_section_headers(elf, &ehdr, (uint64_t) st->st_size);
        if (r < 0)
                return r;
        return read_program_headers(elf, &ehdr, (uint64_t) st->st_size, file_offset, key, ret_vaddr);
}

int symbolizer_lookup_fd(Symbolizer *s, int fd, uint64_t file_offset, SymbolizerBudget *budget,
                         SymbolizedFrame *ret) {
        _cleanup_(elf_endp) Elf *elf = NULL;
        FileKey key;
        struct stat st;
        SymbolFile *f;
        uint64_t vaddr;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        r = outcome_find(s, &st);
        if (r < 0) {
                s->stats.remembered++;
                return r;
        }
        if (st.st_size < 0 || (uint64_t) st.st_size > s->config.max_file_size)
                return outcome_remember(s, &st, -EFBIG);
        key = (FileKey) { .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size, .mtime = st.st_mtim,
                          .ctime = st.st_ctim };

        /* ELF_C_READ reads with pread as needed; a mapping would turn a file truncated under us
         * into SIGBUS. */
        elf = elf_begin(fd, ELF_C_READ, NULL);
        r = read_headers(elf, &st, file_offset, &key, &vaddr);
        if (r < 0)
                return outcome_remember(s, &st, r);

        f = cache_find(s, &key);
        if (f) {
                s->stats.hits++;
                lru_unlink(s, f);
                lru_push_front(s, f);
        } else {
                r = cache_load(s, elf, &key, budget, &f);
                if (r < 0)
                        return outcome_remember(s, &st, r);
        }
        return table_lookup(f, vaddr, ret);
}

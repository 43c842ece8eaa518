/* SPDX-License-Identifier: MIT */
#pragma once

/* Symbolizer: turns (mapped file, file offset) of a trapping or faulting instruction into (symbol,
 * offset within the symbol), from the ELF symbol tables .symtab and .dynsym. Pure: no BPF, no
 * logging; functions return negative errno.
 *
 * The API the daemon uses (daemon/symbol-worker.c): the file is opened by whoever named it and
 * proved to be that file (device, inode, and change time where given) before anything is read,
 * with symbolizer_open() for a path, or symbolizer_check_fd() for a descriptor opened otherwise
 * (a process's mapping); then read with symbolizer_lookup_fd(), within a budget. There is no
 * lookup by path alone: a path names whatever is there now. Resolving the path as the target
 * process sees it (a /proc/PID/root prefix, its mount namespace) is the caller's business.
 *
 * The file offset is the one of the mapping (vm_pgoff * page size + address - vm_start); it is
 * turned into a link-time virtual address through the PT_LOAD program headers, so ET_EXEC, PIE
 * and shared libraries all work without knowing where they were loaded.
 *
 * Cache: each file's table of code symbols (sorted, names copied) is loaded once and kept, keyed
 * by the file's identity: (st_dev, st_ino, st_ctim) plus its GNU build id, or, for files
 * without one, plus (st_size, st_mtim), so a file rewritten in place, renamed, or another file on
 * a reused inode number is loaded again. Every lookup
 * still opens the file and reads its ELF and program headers and notes (a few small reads) to
 * learn that identity. Bounded by a number of files and a number of bytes (symbol entries plus
 * names); past either, the least recently used files are dropped. A file whose symbol and string
 * tables, by the sizes its section headers give, exceed max_read_bytes is not symbolized
 * (-E2BIG), and nothing of them is read; nor one whose finished table exceeds max_bytes. Loading
 * a file briefly takes more: libelf's copies of its symbol and string tables (at most
 * max_read_bytes), and about twice max_bytes of candidate symbols.
 *
 * Outcomes: a file that cannot be symbolized as a whole (-ENOEXEC, -EFBIG, -E2BIG) is
 * remembered by (st_dev, st_ino, st_size, st_mtim, st_ctim), the last SYMBOLIZER_OUTCOMES_MAX
 * of them, and answered without reading it again; a file without symbols is cached as an empty
 * table.
 *
 * Which symbol: only those in executable sections (STT_FUNC, STT_GNU_IFUNC, and STT_NOTYPE
 * labels of assembly). A sized symbol covers [st_value, st_value + st_size); a size-0 one covers
 * up to the next symbol's start, within its section. Labels and size-0 symbols inside a sized
 * function are dropped, so the function names its code. Of several symbols at one address, a
 * function beats a label, sized beats size 0, global beats weak beats local.
 *
 * Not handled (the lookup gives -ENOENT, the caller shows file + offset): files without section
 * headers (sstrip), symbols only in separate debug files or in .gnu_debugdata (MiniDebugInfo).
 * Names are not demangled.
 *
 * Not thread-safe: one Symbolizer per thread, or a lock around it. */

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "macro.h"

#define SYMBOLIZER_MAX_FILES_DEFAULT 128
#define SYMBOLIZER_MAX_BYTES_DEFAULT (64ULL * 1024 * 1024)
#define SYMBOLIZER_MAX_FILE_SIZE_DEFAULT (1ULL << 30)
/* Longer symbol names (a few C++ ones) are cut to this many bytes, so that a hostile string
 * table cannot make each of a million symbols cost megabytes. */
#define SYMBOLIZER_NAME_MAX 1024
/* Files remembered as not to be symbolized (see Outcomes above). */
#define SYMBOLIZER_OUTCOMES_MAX 1024

typedef struct SymbolizerConfig {
        size_t max_files;       /* files kept in the cache; 0: SYMBOLIZER_MAX_FILES_DEFAULT */
        uint64_t max_bytes;     /* memory of all cached tables; 0: SYMBOLIZER_MAX_BYTES_DEFAULT */
        uint64_t max_file_size; /* larger files give -EFBIG; 0: SYMBOLIZER_MAX_FILE_SIZE_DEFAULT */
        /* A file whose symbol and string tables take more (section header sizes) gives -E2BIG
         * before they are read; 0: twice max_bytes. */
        uint64_t max_read_bytes;
} SymbolizerConfig;

typedef struct SymbolizedFrame {
        char *symbol;    /* owned */
        uint64_t offset; /* of the address from the symbol's start */
} SymbolizedFrame;

/* What one caller may still have parsed: a load of a table takes one file and the bytes of its
 * symbol and string tables; a lookup that needs more gives -EDQUOT and reads nothing. */
typedef struct SymbolizerBudget {
        uint64_t files;
        uint64_t bytes;
} SymbolizerBudget;

typedef struct SymbolizerStats {
        uint64_t loads;     /* symbol tables read from files (cache misses that parsed a file) */
        uint64_t hits;      /* lookups answered from the cache */
        uint64_t remembered; /* lookups answered by a remembered outcome (-ENOEXEC, -EFBIG, -E2BIG) */
        uint64_t evictions; /* files dropped to stay within the limits */
        size_t files;       /* files cached now */
        uint64_t bytes;     /* bytes of the cached tables now */
} SymbolizerStats;

typedef struct Symbolizer Symbolizer;

/* config may be NULL: all defaults. */
int symbolizer_new(const SymbolizerConfig *config, Symbolizer **ret);
Symbolizer *symbolizer_free(Symbolizer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Symbolizer *, symbolizer_free);

/* Opens path (O_NOFOLLOW: a symlink in its last component is refused with -ELOOP; O_NONBLOCK: a
 * FIFO never blocks) and returns the descriptor only when it is a regular file with device dev
 * (st_dev), inode ino and, when ctime is not NULL, that change time; -ESTALE when it is another
 * file, -EISDIR, -EBADFD for one that is not regular, -EFBIG above max_size. */
int symbolizer_open(const char *path, uint64_t dev, uint64_t ino, const struct timespec *ctime, uint64_t max_size,
                    int *ret_fd);
/* The proof symbolizer_open() makes, for a descriptor the caller opened otherwise (a process's
 * mapping): 0 when fd is a regular file with device dev, inode ino and, when ctime is not NULL,
 * that change time, of at most max_size bytes; -ESTALE for another file, -EISDIR, -EBADFD,
 * -EFBIG. */
int symbolizer_check_fd(int fd, uint64_t dev, uint64_t ino, const struct timespec *ctime, uint64_t max_size);

/* The symbol whose code holds file_offset of the file fd (opened by the caller, who keeps it).
 *   0        ret holds the symbol (the caller's to free) and the offset within it
 *   -ENOENT  the file has no symbol at that offset (or the offset is in no loadable segment)
 *   -EISDIR  a directory; -EBADFD any other file that is not a regular file (a FIFO, a device)
 *   -ENOEXEC not an ELF file, or not an executable or shared object, or a damaged one
 *   -EFBIG   larger than max_file_size
 *   -E2BIG   its symbol tables exceed max_read_bytes, or its table of code symbols max_bytes
 *   -EDQUOT  a load that budget has not enough left for (not remembered)
 *   -ENOMEM
 * budget: NULL for none; else a load takes from it. A damaged or hostile file never crashes the
 * caller; at worst its symbols are not found. Files are read with pread, not mapped, so a file
 * truncated while being read gives an error, not SIGBUS. */
int symbolizer_lookup_fd(Symbolizer *s, int fd, uint64_t file_offset, SymbolizerBudget *budget,
                         SymbolizedFrame *ret);
/* The largest file symbolizer_lookup_fd() reads: the max_size to open it with. */
uint64_t symbolizer_max_file_size(const Symbolizer *s);

void symbolizer_get_stats(const Symbolizer *s, SymbolizerStats *ret);

/* SPDX-License-Identifier: MIT */
/* Known code for test-symbolize, built (tests/meson.build) into a PIE executable and a shared
 * library, each also stripped to its .dynsym.
 *
 * Run, it prints where its functions are as file offsets, the way the kernel maps them (from
 * /proc/self/maps), one "NAME OFFSET" line each: its own, or with an argument those of that
 * shared library, which it loads. The test compares the symbolizer with these, so the expected
 * values come from the loader and the kernel, not from reading the ELF file again. */

#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Enough work that each function is well over 16 bytes, and noinline so that each exists. */
__attribute__((noinline)) int ts_target_alpha(int x) {
        volatile int v = x;

        for (int i = 0; i < 8; i++)
                v = v * 31 + i;
        return v;
}

__attribute__((noinline)) int ts_target_beta(int x) {
        volatile int v = x;

        for (int i = 0; i < 4; i++)
                v = v ^ (v << 3);
        return v + 7;
}

/* Local: in .symtab only, so the stripped copies do not know it. */
static __attribute__((noinline)) int ts_target_hidden(int x) {
        volatile int v = x;

        for (int i = 0; i < 5; i++)
                v = v * 7 - i;
        return v;
}

/* A local code label without a size (as hand-written assembly has them), followed by 64 bytes
 * no symbol starts in; then a sized assembly function with a label (STT_NOTYPE) inside, which
 * must not take the function's name from the middle on. Never executed. */
__asm__(".text\n"
        ".type ts_target_nosize, %function\n"
        "ts_target_nosize:\n"
        ".skip 64\n"
        ".type ts_target_asm, %function\n"
        "ts_target_asm:\n"
        ".skip 16\n"
        "ts_target_asm_label:\n"
        ".skip 16\n"
        ".size ts_target_asm, 32\n");
extern const char ts_target_nosize[] __attribute__((visibility("hidden")));
extern const char ts_target_asm[] __attribute__((visibility("hidden")));

/* What the shared library reports about its local symbols, which dlsym() cannot find. */
void ts_target_locals(const void **ret_hidden, const void **ret_nosize, const void **ret_asm) {
        *ret_hidden = (const void *) ts_target_hidden;
        *ret_nosize = ts_target_nosize;
        *ret_asm = ts_target_asm;
}

static int print_offset(const char *name, const void *p) {
        uintptr_t a = (uintptr_t) p;
        char line[4096];
        FILE *maps;

        maps = fopen("/proc/self/maps", "re");
        if (!maps)
                return -1;
        while (fgets(line, sizeof(line), maps)) {
                uintptr_t start, end;
                unsigned long long pgoff;

                if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %llx", &start, &end, &pgoff) != 3)
                        continue;
                if (a >= start && a < end) {
                        printf("%s %llu\n", name, (unsigned long long) (a - start) + pgoff);
                        fclose(maps);
                        return 0;
                }
        }
        fclose(maps);
        return -1;
}

int main(int argc, char *argv[]) {
        const void *alpha = (const void *) ts_target_alpha, *beta = (const void *) ts_target_beta;
        const void *hidden, *nosize, *asm_func;

        ts_target_locals(&hidden, &nosize, &asm_func);
        if (argc > 1) {
                void (*locals)(const void **, const void **, const void **);
                void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);

                if (!lib) {
                        fprintf(stderr, "%s\n", dlerror());
                        return 1;
                }
                alpha = dlsym(lib, "ts_target_alpha");
                beta = dlsym(lib, "ts_target_beta");
                *(void **) &locals = dlsym(lib, "ts_target_locals");
                if (!alpha || !beta || !locals)
                        return 1;
                locals(&hidden, &nosize, &asm_func);
        }
        if (print_offset("ts_target_alpha", alpha) < 0 || print_offset("ts_target_beta", beta) < 0 ||
            print_offset("ts_target_hidden", hidden) < 0 || print_offset("ts_target_nosize", nosize) < 0 ||
            print_offset("ts_target_asm", asm_func) < 0)
                return 1;
        /* Keep the functions' results used. */
        return ts_target_alpha(argc) + ts_target_beta(argc) == 1234567 ? 2 : 0;
}

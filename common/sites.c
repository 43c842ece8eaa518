/* SPDX-License-Identifier: MIT */
#include "sites.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static const char *const site_kind_names[_SITE_KIND_MAX] = {
        [SITE_TRAP] = "trap",
        [SITE_FAULT] = "fault",
};

const char *site_kind_name(SiteKind k) {
        return (unsigned) k < _SITE_KIND_MAX ? site_kind_names[k] : NULL;
}

int site_kind_from_name(const char *name, SiteKind *ret) {
        for (unsigned k = 0; k < _SITE_KIND_MAX; k++)
                if (strcmp(site_kind_names[k], name) == 0) {
                        *ret = (SiteKind) k;
                        return 0;
                }
        return -EINVAL;
}

static const struct {
        const char *name, *object;
} memory_kinds[_MEMORY_KIND_MAX] = {
        [MEMORY_NONE] = { "none", NULL },
        [MEMORY_FILE] = { "file", NULL },
        [MEMORY_ANON] = { "anon", "[anon]" },
        [MEMORY_HEAP] = { "heap", "[heap]" },
        [MEMORY_STACK] = { "stack", "[stack]" },
        [MEMORY_VDSO] = { "vdso", "[vdso]" },
        [MEMORY_UNMAPPED] = { "unmapped", "[unmapped]" },
        [MEMORY_UNKNOWN] = { "unknown", "[unknown]" },
};

const char *memory_kind_name(MemoryKind k) {
        return (unsigned) k < _MEMORY_KIND_MAX ? memory_kinds[k].name : NULL;
}

int memory_kind_from_name(const char *name, MemoryKind *ret) {
        for (unsigned k = 0; k < _MEMORY_KIND_MAX; k++)
                if (strcmp(memory_kinds[k].name, name) == 0) {
                        *ret = (MemoryKind) k;
                        return 0;
                }
        return -EINVAL;
}

const char *memory_kind_object(MemoryKind k) {
        return (unsigned) k < _MEMORY_KIND_MAX ? memory_kinds[k].object : NULL;
}

void site_count_done(SiteCount *s) {
        if (!s)
                return;
        free(s->object);
        free(s->symbol);
        free(s->memory_object);
        s->object = s->symbol = s->memory_object = NULL;
}

void site_counts_free(SiteCount *a, size_t n) {
        for (size_t i = 0; i < n; i++)
                site_count_done(&a[i]);
        free(a);
}

static int strdup_or_null(const char *s, char **ret) {
        *ret = NULL;
        if (s && !(*ret = strdup(s)))
                return -ENOMEM;
        return 0;
}

int site_count_copy(const SiteCount *s, SiteCount *ret) {
        SiteCount c = *s;

        c.object = c.symbol = c.memory_object = NULL;
        if (strdup_or_null(s->object, &c.object) < 0 || strdup_or_null(s->symbol, &c.symbol) < 0 ||
            strdup_or_null(s->memory_object, &c.memory_object) < 0) {
                site_count_done(&c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

uint64_t site_count_estimated(const SiteCount *s) {
        uint64_t period = s->period ?: 1;

        return s->count > UINT64_MAX / period ? UINT64_MAX : s->count * period;
}

/* SPDX-License-Identifier: MIT */
#include "sites.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "json-util.h"
#include "macro.h"
#include "traps.h"

static const char *const site_kind_names[_SITE_KIND_MAX] = {
        [SITE_TRAP] = "trap",
        [SITE_FAULT] = "fault",
        [SITE_MAJOR] = "major",
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

uint64_t site_time_estimated(const SiteCount *s) {
        uint64_t period = s->period ?: 1;

        return s->time_ns > UINT64_MAX / period ? UINT64_MAX : s->time_ns * period;
}

bool site_kind_is_fault(SiteKind k) {
        return k == SITE_FAULT || k == SITE_MAJOR;
}

const char *site_vector_name(const SiteCount *s, char buf[static 16]) {
        return site_kind_is_fault(s->kind) ? SITE_FAULT_VECTOR_NAME : trap_vector_name(s->vector, buf);
}

json_t *site_count_to_json(const SiteCount *s) {
        const char *kind = site_kind_name(s->kind), *memory = memory_kind_name(s->memory);
        char buf[16];

        if (!kind || !memory)
                return NULL;
        /* Fault and major sites have vector SITE_FAULT_VECTOR, named "PF" on every architecture
         * (x86's name for that vector). An object is always named; a site without one (which the store
         * should never give) is as good as one whose mappings could not be read. */
        return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:b, s:I, s:o, s:s, s:o, s:o, s:o}",
                         "kind", kind,
                         "vector", site_vector_name(s, buf),
                         "object", text_to_json(s->object ?: memory_kind_object(MEMORY_UNKNOWN)),
                         "offset", json_integer_u64(s->offset),
                         "symbol", text_to_json(s->symbol),
                         "symbolOffset", s->symbol ? json_integer_u64(s->symbol_offset) : json_null(),
                         "count", json_integer_u64(s->count),
                         "sampled", s->kind == SITE_FAULT,
                         "period", (json_int_t) (s->period ?: 1),
                         "estimated", json_integer_u64(site_count_estimated(s)),
                         "memory", memory,
                         "memoryObject", text_to_json(s->memory == MEMORY_FILE ? s->memory_object : NULL),
                         "timeNs", json_integer_u64(s->time_ns),
                         "estimatedTimeNs", json_integer_u64(site_time_estimated(s)));
}

/* A member that may be null or absent: NULL for both. */
static json_t *nullable(json_t *v) {
        return json_is_null(v) ? NULL : v;
}

int site_count_from_json(json_t *j, SiteCount *ret) {
        json_t *symbol = NULL, *symbol_offset = NULL, *memory_object = NULL;
        json_int_t offset, count, period, estimated, time_ns = 0, estimated_time_ns = -1;
        const char *kind, *vector, *object, *memory;
        int sampled;
        SiteCount s = {};

        /* timeNs and estimatedTimeNs: older daemons time no fault. */
        if (json_unpack(j, "{s:s, s:s, s:s, s:I, s?o, s?o, s:I, s:b, s:I, s:I, s:s, s?o, s?I, s?I !}", "kind", &kind,
                        "vector", &vector, "object", &object, "offset", &offset, "symbol", &symbol, "symbolOffset",
                        &symbol_offset, "count", &count, "sampled", &sampled, "period", &period, "estimated",
                        &estimated, "memory", &memory, "memoryObject", &memory_object, "timeNs", &time_ns,
                        "estimatedTimeNs", &estimated_time_ns) < 0)
                return -EBADMSG;
        symbol = nullable(symbol);
        symbol_offset = nullable(symbol_offset);
        memory_object = nullable(memory_object);

        if (site_kind_from_name(kind, &s.kind) < 0 || memory_kind_from_name(memory, &s.memory) < 0)
                return -EBADMSG;
        if (site_kind_is_fault(s.kind) && strcmp(vector, SITE_FAULT_VECTOR_NAME) == 0)
                s.vector = SITE_FAULT_VECTOR;
        else if (site_kind_is_fault(s.kind) || trap_vector_from_name(vector, &s.vector) < 0)
                return -EBADMSG;
        if (offset < 0 || count < 0 || period < 1 || period > UINT32_MAX || estimated < 0 || time_ns < 0 ||
            (s.kind == SITE_TRAP && time_ns != 0))
                return -EBADMSG;
        /* What the IDL says of the members together: only faults are sampled, the others have
         * period 1. */
        if (sampled != (s.kind == SITE_FAULT) || (s.kind != SITE_FAULT && period != 1))
                return -EBADMSG;
        if ((symbol && !json_is_string(symbol)) || (symbol_offset && !json_is_integer(symbol_offset)) ||
            !symbol != !symbol_offset || (symbol_offset && json_integer_value(symbol_offset) < 0))
                return -EBADMSG;
        if (memory_object && (!json_is_string(memory_object) || s.memory != MEMORY_FILE))
                return -EBADMSG;

        s.offset = (uint64_t) offset;
        s.count = (uint64_t) count;
        s.period = (uint32_t) period;
        s.symbol_offset = symbol_offset ? (uint64_t) json_integer_value(symbol_offset) : 0;
        s.time_ns = (uint64_t) time_ns;
        if ((uint64_t) estimated != MIN(site_count_estimated(&s), (uint64_t) INT64_MAX) ||
            (estimated_time_ns >= 0 && (uint64_t) estimated_time_ns != MIN(site_time_estimated(&s), (uint64_t) INT64_MAX)))
                return -EBADMSG;

        if (strdup_or_null(object, &s.object) < 0 || strdup_or_null(json_string_value(symbol), &s.symbol) < 0 ||
            strdup_or_null(json_string_value(memory_object), &s.memory_object) < 0) {
                site_count_done(&s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

/* SPDX-License-Identifier: MIT */
#include "stall.h"

#include <errno.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

const char *const stall_cause_names[_STALL_MAX] = {
        [STALL_SWAPIN] = "swapin",   [STALL_THRASHING] = "thrashing", [STALL_RECLAIM] = "reclaim",
        [STALL_COMPACT] = "compact", [STALL_BLKIO] = "blkio",
};

static uint64_t add_sat(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void stall_add(Stall *a, const Stall *b) {
        for (size_t i = 0; i < _STALL_MAX; i++) {
                a->ns[i] = add_sat(a->ns[i], b->ns[i]);
                a->count[i] = add_sat(a->count[i], b->count[i]);
        }
}

bool stall_is_zero(const Stall *s) {
        static const Stall zero;

        return memcmp(s, &zero, sizeof(zero)) == 0;
}

uint64_t stall_memory_ns(const Stall *s) {
        return add_sat(add_sat(s->ns[STALL_SWAPIN], s->ns[STALL_THRASHING]),
                       add_sat(s->ns[STALL_RECLAIM], s->ns[STALL_COMPACT]));
}

const char *const stall_ns_members[_STALL_MAX] = {
        [STALL_SWAPIN] = "swapinNs",   [STALL_THRASHING] = "thrashingNs", [STALL_RECLAIM] = "reclaimNs",
        [STALL_COMPACT] = "compactNs", [STALL_BLKIO] = "blkioNs",
};

const char *const stall_count_members[_STALL_MAX] = {
        [STALL_SWAPIN] = "swapinCount",   [STALL_THRASHING] = "thrashingCount", [STALL_RECLAIM] = "reclaimCount",
        [STALL_COMPACT] = "compactCount", [STALL_BLKIO] = "blkioCount",
};

json_t *stall_to_json(const Stall *s) {
        json_t *o = json_object();

        for (size_t i = 0; o && i < _STALL_MAX; i++)
                if (json_object_set_new(o, stall_ns_members[i], json_integer_u64(s->ns[i])) < 0 ||
                    json_object_set_new(o, stall_count_members[i], json_integer_u64(s->count[i])) < 0) {
                        json_decref(o);
                        return NULL;
                }
        return o;
}

static int member_u64(json_t *j, const char *name, uint64_t *ret) {
        json_t *v = json_object_get(j, name);

        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return -EBADMSG;
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

int stall_from_json(json_t *j, Stall *ret) {
        Stall s = {};

        if (!json_is_object(j) || json_object_size(j) != 2 * _STALL_MAX)
                return -EBADMSG;
        for (size_t i = 0; i < _STALL_MAX; i++)
                if (member_u64(j, stall_ns_members[i], &s.ns[i]) < 0 ||
                    member_u64(j, stall_count_members[i], &s.count[i]) < 0)
                        return -EBADMSG;
        *ret = s;
        return 0;
}

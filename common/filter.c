/* SPDX-License-Identifier: MIT */
#include "filter.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

void process_filter_done(ProcessFilter *f) {
        free(f->unit);
        free(f->comm);
        *f = PROCESS_FILTER_NONE;
}

bool process_filter_is_empty(const ProcessFilter *f) {
        return f->n_pids == 0 && f->uid < 0 && !f->unit && !f->comm;
}

bool glob_match(const char *glob, const char *text) {
        /* GLOB has no escape character; [^...] and [!...] both negate in fnmatch, as in GLOB. */
        return fnmatch(glob, text, FNM_NOESCAPE) == 0;
}

bool process_filter_match(const ProcessFilter *f, uint32_t pid, int64_t uid, const char *unit, const char *comm) {
        if (f->n_pids > 0) {
                bool found = false;

                for (size_t i = 0; i < f->n_pids && !found; i++)
                        found = f->pids[i] == pid;
                if (!found)
                        return false;
        }
        if (f->uid >= 0 && uid != f->uid)
                return false;
        if (f->unit && (!unit || !glob_match(f->unit, unit)))
                return false;
        if (f->comm && !glob_match(f->comm, comm ?: ""))
                return false;
        return true;
}

int process_filter_parse_pids(ProcessFilter *f, const char *text) {
        uint32_t pids[MAX_FILTER_PIDS];
        size_t n = 0;
        const char *p = text;

        for (;;) {
                char *end;
                long v;

                if (*p < '0' || *p > '9' || n == MAX_FILTER_PIDS)
                        return -EINVAL;
                errno = 0;
                v = strtol(p, &end, 10);
                if (errno != 0 || v < 1 || v > INT32_MAX)
                        return -EINVAL;
                pids[n++] = (uint32_t) v;
                if (*end == '\0')
                        break;
                if (*end != ',')
                        return -EINVAL;
                p = end + 1;
        }
        memcpy(f->pids, pids, n * sizeof(pids[0]));
        f->n_pids = n;
        return 0;
}

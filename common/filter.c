/* SPDX-License-Identifier: MIT */
#include "filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void process_filter_done(ProcessFilter *f) {
        free(f->unit);
        free(f->comm);
        free(f->container);
        *f = PROCESS_FILTER_NONE;
}

bool process_filter_is_empty(const ProcessFilter *f) {
        return f->n_pids == 0 && f->uid < 0 && !f->unit && !f->comm && !f->container && f->pidns == 0;
}

/* The next character of a UTF-8 string as SQLite reads it (sqlite3Utf8Read): a lead byte takes
 * every continuation byte after it; what is not a character becomes U+FFFD; a stray
 * continuation byte is a character of its own. */
static uint32_t utf8_read(const unsigned char **p) {
        uint32_t c = *(*p)++;

        if (c < 0xc0)
                return c;
        c = c < 0xe0 ? c & 0x1f : c < 0xf0 ? c & 0x0f : c < 0xf8 ? c & 0x07 : c < 0xfc ? c & 0x03 : c < 0xfe ? c & 0x01 : 0;
        while ((**p & 0xc0) == 0x80)
                c = (c << 6) + (*(*p)++ & 0x3f);
        if (c < 0x80 || (c & 0xfffff800) == 0xd800 || (c & 0xfffffffe) == 0xfffe)
                c = 0xfffd;
        return c;
}

enum { GLOB_MATCH, GLOB_NOMATCH, GLOB_NO_WILDCARD_MATCH };

/* SQLite's patternCompare() for GLOB, rule for rule, so that Watch and the live view let through
 * exactly what Top's SQL does: * and ? take characters, not bytes; [...] negates with ^ only (! is
 * an ordinary character, unlike in fnmatch), a ] first in it is literal, a - between two
 * characters is a range; an unterminated [ matches nothing; no escape character, no [:class:].
 * When the rest after a * matches at no position, no earlier * can help either: that answer
 * (GLOB_NO_WILDCARD_MATCH) ends the search, which keeps it polynomial. */
static int glob_compare(const unsigned char *pattern, const unsigned char *text) {
        uint32_t c, c2;

        while ((c = utf8_read(&pattern)) != 0) {
                if (c == '*') {
                        /* Runs of * and ?: each ? takes one character. */
                        while ((c = utf8_read(&pattern)) == '*' || c == '?')
                                if (c == '?' && utf8_read(&text) == 0)
                                        return GLOB_NO_WILDCARD_MATCH;
                        if (c == 0)
                                return GLOB_MATCH;
                        if (c == '[') {
                                for (; *text; (void) utf8_read(&text)) {
                                        int r = glob_compare(pattern - 1, text);

                                        if (r != GLOB_NOMATCH)
                                                return r;
                                }
                                return GLOB_NO_WILDCARD_MATCH;
                        }
                        /* Continue after every occurrence of the character that follows the *. */
                        while ((c2 = utf8_read(&text)) != 0) {
                                int r;

                                if (c2 != c)
                                        continue;
                                r = glob_compare(pattern, text);
                                if (r != GLOB_NOMATCH)
                                        return r;
                        }
                        return GLOB_NO_WILDCARD_MATCH;
                }
                if (c == '[') {
                        uint32_t prior = 0;
                        bool seen = false, invert = false;

                        c = utf8_read(&text);
                        if (c == 0)
                                return GLOB_NOMATCH;
                        c2 = utf8_read(&pattern);
                        if (c2 == '^') {
                                invert = true;
                                c2 = utf8_read(&pattern);
                        }
                        if (c2 == ']') {
                                seen = c == ']';
                                c2 = utf8_read(&pattern);
                        }
                        while (c2 != 0 && c2 != ']') {
                                if (c2 == '-' && *pattern != ']' && *pattern != 0 && prior > 0) {
                                        c2 = utf8_read(&pattern);
                                        if (c >= prior && c <= c2)
                                                seen = true;
                                        prior = 0;
                                } else {
                                        if (c == c2)
                                                seen = true;
                                        prior = c2;
                                }
                                c2 = utf8_read(&pattern);
                        }
                        if (c2 == 0 || seen == invert)
                                return GLOB_NOMATCH;
                        continue;
                }
                c2 = utf8_read(&text);
                if (c == c2 || (c == '?' && c2 != 0))
                        continue;
                return GLOB_NOMATCH;
        }
        return *text == 0 ? GLOB_MATCH : GLOB_NOMATCH;
}

bool glob_match(const char *glob, const char *text) {
        return glob_compare((const unsigned char *) glob, (const unsigned char *) text) == GLOB_MATCH;
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

bool process_filter_match_container(const ProcessFilter *f, const Container *c) {
        return !f->container || container_matches(c, f->container);
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

/* SPDX-License-Identifier: MIT */
#include "mutate.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

typedef struct Token {
        char *text;
        size_t size;
} Token;

struct Mutator {
        uint64_t state;
        Token *dict;
        size_t n_dict;
};

/* Numbers at and around the bounds a handler checks: 0, negative, the limits (10000, 100000,
 * 64 pids), a year of seconds, 32 and 64 bits, past 64 bits, not integers. */
static const char *const numbers[] = {
        "0", "1", "-1", "2", "10", "11", "20", "60", "61", "3600", "86400", "31622400", "31622401", "64", "65",
        "1000", "10000", "10001", "100000", "100001", "2001", "4194304", "10000000000", "2147483647", "2147483648",
        "4294967295", "4294967296", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
        "18446744073709551615", "18446744073709551616", "1e308", "-1e308", "1.5", "-0", "0.0", "1E3",
        "1844674407370955",
};

/* Strings: empty, globs (also the costly kind), the length bounds (256 and one more), NUL and
 * lone surrogates escaped, names of the enums and of real units. */
static const char *const strings[] = {
        "\"\"", "\"*\"", "\"?\"", "\"[\"", "\"[!a-z]*\"", "\"\\\\\"", "\"ssh.service\"", "\"*.service\"",
        "\"we*ird[1].service\"", "\"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\"", "\"\\u0000\"", "\"a\\u0000b\"",
        "\"\\ud800\"", "\"user\"", "\"traps\"", "\"faultTime\"", "\"trap\"", "\"fault\"", "\"nonsense\"",
        "\"crasher\"", "\"\xff\xfe\"",
};

/* Values of every JSON type, for a value of another. */
static const char *const values[] = {
        "null", "true", "false", "{}", "[]", "[1]", "[2001,1,100]", "[0]", "[-1]", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
        "{\"a\":1}", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "\"x\"", "1", "-1", "0.5",
};

static uint64_t next(Mutator *m) {
        /* xorshift64* */
        m->state ^= m->state >> 12;
        m->state ^= m->state << 25;
        m->state ^= m->state >> 27;
        return m->state * UINT64_C(2685821657736338717);
}

static size_t below(Mutator *m, size_t n) {
        return n ? (size_t) (next(m) % n) : 0;
}

/* A libFuzzer dictionary line's token: "..." with \\, \" and \xAB. */
static int token_parse(const char *line, Token *ret) {
        const char *p = strchr(line, '"'), *end = strrchr(line, '"');
        char *text, *o;

        if (!p || end <= p)
                return -EINVAL;
        text = o = malloc((size_t) (end - p));
        if (!text)
                return -ENOMEM;
        for (p++; p < end; p++) {
                unsigned byte;

                if (*p != '\\')
                        *o++ = *p;
                else if (p[1] == 'x' && sscanf(p + 2, "%2x", &byte) == 1) {
                        *o++ = (char) byte;
                        p += 3;
                } else
                        *o++ = *++p;
        }
        *ret = (Token) { .text = text, .size = (size_t) (o - text) };
        return 0;
}

static int dict_add(Mutator *m, const char *line) {
        Token t, *grown;
        int r;

        if (line[strspn(line, " \t")] == '#' || !strchr(line, '"'))
                return 0;
        r = token_parse(line, &t);
        if (r == -EINVAL)
                return 0;
        if (r < 0)
                return r;
        grown = realloc(m->dict, (m->n_dict + 1) * sizeof(*grown));
        if (!grown) {
                free(t.text);
                return -ENOMEM;
        }
        m->dict = grown;
        m->dict[m->n_dict++] = t;
        return 0;
}

static int dict_load(Mutator *m, const char *path) {
        FILE *f = fopen(path, "re");
        char line[4096];
        int r = 0;

        if (!f)
                return -errno;
        while (r >= 0 && fgets(line, sizeof(line), f))
                r = dict_add(m, line);
        fclose(f);
        return r;
}

Mutator *mutator_free(Mutator *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_dict; i++)
                free(m->dict[i].text);
        free(m->dict);
        free(m);
        return NULL;
}

int mutator_new(uint64_t seed, const char *dict_path, Mutator **ret) {
        Mutator *m = calloc(1, sizeof(*m));
        int r;

        if (!m)
                return -ENOMEM;
        m->state = seed ? seed : 1;
        if (dict_path && (r = dict_load(m, dict_path)) < 0) {
                mutator_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

/* The input being mutated: bytes with room for max_size. */
typedef struct Buffer {
        uint8_t *data;
        size_t size, max_size;
} Buffer;

/* Replaces [at, at + len) with text. Does nothing when the result would not fit. */
static void splice_text(Buffer *b, size_t at, size_t len, const char *text, size_t text_size) {
        if (b->size - len + text_size > b->max_size)
                return;
        memmove(b->data + at + text_size, b->data + at + len, b->size - at - len);
        memcpy(b->data + at, text, text_size);
        b->size = b->size - len + text_size;
}

/* The n-th (wrapping) token of the input that starts at a byte for which starts() holds and
 * runs while inside() holds; returns false when there is none. */
static bool find_token(Mutator *m, const Buffer *b, bool (*starts)(const Buffer *, size_t),
                       size_t (*length)(const Buffer *, size_t), size_t *ret_at, size_t *ret_len) {
        size_t n = 0, pick;

        for (size_t i = 0; i < b->size; i++)
                if (starts(b, i)) {
                        n++;
                        i += length(b, i) - 1;
                }
        if (n == 0)
                return false;
        pick = below(m, n);
        for (size_t i = 0; i < b->size; i++)
                if (starts(b, i)) {
                        size_t len = length(b, i);

                        if (pick-- == 0) {
                                *ret_at = i;
                                *ret_len = len;
                                return true;
                        }
                        i += len - 1;
                }
        return false;
}

/* strchr() would find the terminating NUL too. */
static bool in_set(uint8_t c, const char *set) {
        return c != '\0' && strchr(set, c);
}

static bool number_starts(const Buffer *b, size_t i) {
        bool digit = isdigit(b->data[i]) || (b->data[i] == '-' && i + 1 < b->size && isdigit(b->data[i + 1]));

        return digit && (i == 0 || in_set(b->data[i - 1], ":[, "));
}

static size_t number_length(const Buffer *b, size_t i) {
        size_t j = i + 1;

        while (j < b->size && (isdigit(b->data[j]) || in_set(b->data[j], ".eE+-")))
                j++;
        return j - i;
}

static bool string_starts(const Buffer *b, size_t i) {
        return b->data[i] == '"';
}

static size_t string_length(const Buffer *b, size_t i) {
        size_t j = i + 1;

        while (j < b->size && b->data[j] != '"')
                j += b->data[j] == '\\' ? 2 : 1;
        return MIN(j + 1, b->size) - i;
}

/* A value after a member's colon: a number, string, literal, or an object or array (to its
 * matching bracket, strings skipped). */
static bool value_starts(const Buffer *b, size_t i) {
        size_t j = i;

        if (i == 0)
                return false;
        while (j > 0 && b->data[j - 1] == ' ')
                j--;
        return j > 0 && b->data[j - 1] == ':' && b->data[i] != ' ';
}

static size_t value_length(const Buffer *b, size_t i) {
        unsigned depth = 0;
        size_t j = i;

        if (b->data[i] == '"')
                return string_length(b, i);
        while (j < b->size) {
                uint8_t c = b->data[j];

                if (c == '"') {
                        j += string_length(b, j);
                        continue;
                }
                if (c == '{' || c == '[')
                        depth++;
                else if (c == '}' || c == ']') {
                        if (depth == 0)
                                break;
                        if (--depth == 0) {
                                j++;
                                break;
                        }
                } else if (depth == 0 && (c == ',' || c == '\0'))
                        break;
                j++;
        }
        return MAX(j, i + 1) - i;
}

static void mutate_once(Mutator *m, Buffer *b) {
        const char *text;
        size_t at, len;

        /* Mostly mutations that keep the calls JSON, whose bounds are what the handlers check;
         * a few that break it, which the server must survive too. */
        switch (below(m, 17)) {
        case 0:
        case 1:
        case 2: /* a number for an edge value */
                if (find_token(m, b, number_starts, number_length, &at, &len)) {
                        text = numbers[below(m, ELEMENTSOF(numbers))];
                        splice_text(b, at, len, text, strlen(text));
                }
                break;
        case 3:
        case 4:
        case 5: /* a string for another */
                if (find_token(m, b, string_starts, string_length, &at, &len)) {
                        text = strings[below(m, ELEMENTSOF(strings))];
                        splice_text(b, at, len, text, strlen(text));
                }
                break;
        case 6:
        case 7:
        case 8: /* a value for one of any type */
                if (find_token(m, b, value_starts, value_length, &at, &len)) {
                        text = values[below(m, ELEMENTSOF(values))];
                        splice_text(b, at, len, text, strlen(text));
                }
                break;
        case 9:
        case 10: /* a member more, before a string (a key, mostly): a dictionary name and a value */
                if (m->n_dict > 0 && find_token(m, b, string_starts, string_length, &at, &len)) {
                        const Token *t = &m->dict[below(m, m->n_dict)];
                        char member[512];
                        int n;

                        if (t->size > 256)
                                break;
                        n = snprintf(member, sizeof(member), "%.*s%s%s,", (int) t->size, t->text,
                                     t->size > 0 && t->text[t->size - 1] == ':' ? "" : ":",
                                     below(m, 2) ? numbers[below(m, ELEMENTSOF(numbers))]
                                                 : values[below(m, ELEMENTSOF(values))]);
                        if (n > 0 && (size_t) n < sizeof(member))
                                splice_text(b, at, 0, member, (size_t) n);
                }
                break;
        case 11: /* a dictionary token for a string, or inserted anywhere */
                if (m->n_dict > 0) {
                        const Token *t = &m->dict[below(m, m->n_dict)];

                        if (below(m, 2) && find_token(m, b, string_starts, string_length, &at, &len))
                                splice_text(b, at, len, t->text, t->size);
                        else
                                splice_text(b, below(m, b->size + 1), 0, t->text, t->size);
                }
                break;
        case 12: /* a byte changed */
                if (b->size > 0)
                        b->data[below(m, b->size)] = (uint8_t) next(m);
                break;
        case 13: /* a range erased */
                if (b->size > 0) {
                        at = below(m, b->size);
                        splice_text(b, at, 1 + below(m, MIN(b->size - at, 16)), "", 0);
                }
                break;
        case 14: /* a range repeated */
                if (b->size > 0) {
                        char copy[64];

                        at = below(m, b->size);
                        len = 1 + below(m, MIN(b->size - at, sizeof(copy)));
                        memcpy(copy, b->data + at, len);
                        splice_text(b, at, 0, copy, len);
                }
                break;
        case 15: /* a NUL: a message cut in two */
                splice_text(b, below(m, b->size + 1), 0, "", 1);
                break;
        default: /* a value nested in arrays */
                if (find_token(m, b, value_starts, value_length, &at, &len)) {
                        splice_text(b, at + len, 0, "]]]]]]]]", 8);
                        splice_text(b, at, 0, "[[[[[[[[", 8);
                }
                break;
        }
}

int mutator_run(Mutator *m, const uint8_t *data, size_t size, const uint8_t *other, size_t other_size,
                size_t max_size, uint8_t **ret, size_t *ret_size) {
        Buffer b = { .data = malloc(max_size ? max_size : 1), .max_size = max_size };
        unsigned n = 1 + (unsigned) below(m, 4);

        if (!b.data)
                return -ENOMEM;
        b.size = MIN(size, max_size);
        memcpy(b.data, data, b.size);
        /* Sometimes two inputs one after the other: pipelined calls. */
        if (other && below(m, 8) == 0)
                splice_text(&b, b.size, 0, (const char *) other, other_size);
        for (unsigned i = 0; i < n; i++)
                mutate_once(m, &b);
        *ret = b.data;
        *ret_size = b.size;
        return 0;
}

/* SPDX-License-Identifier: MIT */
#include "utf8-util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Reads one character at s (n > 0): returns how many bytes it takes, and whether they form a
 * well-formed character. An ill-formed part is the longest prefix of a well-formed sequence
 * there (its maximal subpart), at least one byte. */
static size_t utf8_scan(const unsigned char *s, size_t n, uint32_t *ret_codepoint, bool *ret_valid) {
        unsigned char lo = 0x80, hi = 0xBF; /* the range of the first continuation byte */
        size_t need, i;
        uint32_t cp;

        *ret_valid = false;
        if (s[0] < 0x80) {
                *ret_codepoint = s[0];
                *ret_valid = true;
                return 1;
        }
        if (s[0] >= 0xC2 && s[0] <= 0xDF) {
                need = 2;
                cp = s[0] & 0x1F;
        } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
                need = 3;
                cp = s[0] & 0x0F;
                if (s[0] == 0xE0)
                        lo = 0xA0; /* below: overlong */
                else if (s[0] == 0xED)
                        hi = 0x9F; /* above: surrogates */
        } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
                need = 4;
                cp = s[0] & 0x07;
                if (s[0] == 0xF0)
                        lo = 0x90; /* below: overlong */
                else if (s[0] == 0xF4)
                        hi = 0x8F; /* above: beyond U+10FFFF */
        } else
                return 1; /* a continuation byte, C0, C1 (overlong) or F5..FF */

        for (i = 1; i < need; i++) {
                if (i >= n || s[i] < lo || s[i] > hi)
                        return i;
                cp = cp << 6 | (s[i] & 0x3F);
                lo = 0x80;
                hi = 0xBF;
        }
        *ret_codepoint = cp;
        *ret_valid = true;
        return need;
}

int utf8_decode(const char *s, size_t n, uint32_t *ret_codepoint) {
        uint32_t cp = 0;
        size_t l;
        bool valid;

        if (n == 0)
                return -EILSEQ;
        l = utf8_scan((const unsigned char *) s, n, &cp, &valid);
        if (!valid)
                return -EILSEQ;
        if (ret_codepoint)
                *ret_codepoint = cp;
        return (int) l;
}

int utf8_replace_invalid(const char *s, char **ret) {
        size_t n = strlen(s);
        char *copy, *p;

        /* At worst every byte becomes the three of U+FFFD. */
        if (n > (SIZE_MAX - 1) / 3)
                return -ENOMEM;
        copy = malloc(n * 3 + 1);
        if (!copy)
                return -ENOMEM;
        for (p = copy; n > 0;) {
                uint32_t cp;
                bool valid;
                size_t l = utf8_scan((const unsigned char *) s, n, &cp, &valid);

                if (valid) {
                        memcpy(p, s, l);
                        p += l;
                } else {
                        memcpy(p, UTF8_REPLACEMENT_CHARACTER, 3);
                        p += 3;
                }
                s += l;
                n -= l;
        }
        *p = '\0';
        *ret = copy;
        return 0;
}

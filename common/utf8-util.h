/* SPDX-License-Identifier: MIT */
#pragma once

/* Well-formed UTF-8 (RFC 3629, Unicode table 3-7) for text that comes from processes: comm,
 * command lines and unit names are bytes, and JSON strings must be valid UTF-8. */

#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT_CHARACTER "\xef\xbf\xbd" /* U+FFFD */

/* Decodes the character at s, of which n > 0 bytes may be read: returns its length (1 to 4) and
 * its code point in *ret_codepoint (may be NULL), or -EILSEQ when s does not start with a
 * well-formed character: a continuation byte, an overlong form, a surrogate (U+D800..U+DFFF),
 * a code point above U+10FFFF, or a sequence cut short. NUL decodes as U+0000. */
int utf8_decode(const char *s, size_t n, uint32_t *ret_codepoint);

/* A malloc'd copy of s in which each ill-formed part is replaced by U+FFFD, one per maximal
 * ill-formed subpart as Unicode recommends (and as Python's "replace" and WHATWG decoders do:
 * "\xf0\x9f\x98" is one, "\xc0\xaf" two). 0, or -ENOMEM. */
int utf8_replace_invalid(const char *s, char **ret);

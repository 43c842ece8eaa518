/* SPDX-License-Identifier: MIT */
/* Varlink messages, with no socket or event loop involved: framing (one JSON object, then a NUL),
 * the numbers JSON allows but jansson cannot hold (read as the string "out of range"), call-header
 * parsing, and the VarlinkReply builder that formats a reply ahead, away from the event loop. */

/* struct ucred (SO_PEERCRED, in varlink-internal.h) is a GNU extension; the build may already
 * define this. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "varlink.h"
#include "varlink-internal.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

/* ---- framing ---- */

#define OUT_OF_RANGE "\"out of range\""
#define REPAIRS_MAX 64 /* numbers replaced per message (and one quoting of "\u0000"); more: refused */

static bool is_number_char(char c) {
        return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Replaces text[start, end) of the message being repaired by with (len bytes). */
static int text_replace(char **text, size_t *size, size_t start, size_t end, const char *with, size_t len) {
        char *next = malloc(*size - (end - start) + len + 1);

        if (!next)
                return -ENOMEM;
        memcpy(next, *text, start);
        memcpy(next + start, with, len);
        memcpy(next + start + len, *text + end, *size - end);
        *size = *size - (end - start) + len;
        free(*text);
        *text = next;
        return 0;
}

/* A string token of a message: [start, end), quotes included. */
typedef struct Span {
        size_t start, end;
} Span;

/* Where the string token ending at `end` (jansson reports a duplicate key or a "\u0000" just past
 * it) is in the message: *ret_top the member of the message holding it, or naming it; *ret_param,
 * when that member's value is an object, its member likewise (else {0, 0}): a parameter, when
 * top is "parameters". jansson tells only the offset; text before it is JSON it accepted, so
 * following strings and brackets is enough. Returns 0, or -EBADMSG when the token is not inside
 * the message object. */
static int locate(const char *text, size_t end, Span *ret_top, Span *ret_param) {
        Span key[3] = {}, token = {}, top, param = {};
        bool object[3] = {}, want_key = false, token_is_key = false;
        unsigned depth = 0, token_depth = 0;

        for (size_t i = 0; i < end; i++)
                switch (text[i]) {
                case '"':
                        token.start = i;
                        for (i++; i < end && text[i] != '"'; i++)
                                if (text[i] == '\\')
                                        i++;
                        token.end = i + 1;
                        token_depth = depth;
                        token_is_key = depth >= 1 && depth <= 2 && object[depth] && want_key;
                        if (token_is_key)
                                key[depth] = token;
                        break;
                case '{':
                case '[':
                        depth++;
                        want_key = text[i] == '{';
                        if (depth <= 2) {
                                object[depth] = want_key;
                                key[depth] = (Span) {};
                        }
                        break;
                case '}':
                case ']':
                        depth--;
                        want_key = false;
                        break;
                case ',':
                        want_key = depth <= 2 && object[depth];
                        break;
                case ':':
                        want_key = false;
                        break;
                }

        top = token_depth == 1 && token_is_key ? token : key[1];
        /* In no member of an object: a message that is no call anyway. */
        if (token_depth == 0 || token.end != end || top.end == 0)
                return -EBADMSG;
        if (token_depth >= 2 && object[2])
                param = token_depth == 2 && token_is_key ? token : key[2];
        *ret_top = top;
        *ret_param = param;
        return 0;
}

/* The name a key token stands for; its text between the quotes when that holds "\u0000". */
static char *span_name(const char *text, Span span) {
        _cleanup_json_ json_t *v =
                json_loadb(text + span.start, span.end - span.start, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

        if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v))
                return strdup(json_string_value(v));
        return strndup(text + span.start + 1, span.end - span.start - 2);
}

/* Every "\u0000" of the text becomes "\\u0000", a backslash and "u0000": in keys, which jansson
 * takes with no flag, and in values. One pass for all of them, however many there are. Outside
 * strings JSON has no backslash, so every backslash starts an escape. */
static int nul_escapes_quote(char **text, size_t *size) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0, k = 0;

        for (size_t i = 0; i + 1 < *size; i++)
                if ((*text)[i] == '\\' && (*text)[i + 1] == 'u' && i + 6 <= *size &&
                    memcmp(*text + i + 2, "0000", 4) == 0)
                        n++;
                else if ((*text)[i] == '\\')
                        i++;
        out = malloc(*size + n + 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < *size; i++) {
                if ((*text)[i] == '\\' && i + 1 < *size) {
                        if ((*text)[i + 1] == 'u' && i + 6 <= *size && memcmp(*text + i + 2, "0000", 4) == 0)
                                out[k++] = '\\';
                        else
                                out[k++] = (*text)[i++];
                }
                out[k++] = (*text)[i];
        }
        free(*text);
        *text = TAKE_PTR(out);
        *size = k;
        return 0;
}

/* Puts the mark of varlink_message_read() on the member named by top (and param). */
static int mark_invalid(json_t *msg, const char *top, const char *param) {
        json_t *parameters = json_object_get(msg, "parameters");

        if (param && json_is_object(parameters))
                return json_object_set_new(parameters, param, json_stringn("", 1)) < 0 ? -ENOMEM : 0;
        return json_object_set_new(msg, top, json_stringn("", 1)) < 0 ? -ENOMEM : 0;
}

/* Parses a message jansson refused at error only for what a call is answered about rather than
 * closed for, repairing its text and parsing it again:
 * - a number out of range becomes the string OUT_OF_RANGE;
 * - at the first duplicate key or "\u0000", the member of the message (or of its parameters)
 *   holding it is noted; then every "\u0000" is quoted (nul_escapes_quote()) and duplicates are
 *   let through, the last one counting: one more parse, however many there are. The noted
 *   member gets the mark, so the call is refused whatever the rest holds.
 * Sets *ret_marked when a mark was put. NULL when the message cannot be read. */
static json_t *load_repaired(const char *data, size_t len, json_error_t *error, bool *ret_marked) {
        _cleanup_free_ char *copy = NULL, *top = NULL, *param = NULL;
        size_t flags = JSON_REJECT_DUPLICATES, size = len;
        json_t *msg = NULL;

        copy = malloc(len + 1);
        if (!copy)
                return NULL;
        memcpy(copy, data, len);

        for (unsigned i = 0; i < REPAIRS_MAX && !msg; i++) {
                enum json_error_code code = json_error_code(error);
                size_t end = (size_t) error->position, start = end;
                Span top_span, param_span;

                if (error->position <= 0 || end > size)
                        return NULL;
                if (code == json_error_numeric_overflow) {
                        while (start > 0 && is_number_char(copy[start - 1]))
                                start--;
                        if (start == end ||
                            text_replace(&copy, &size, start, end, OUT_OF_RANGE, strlen(OUT_OF_RANGE)) < 0)
                                return NULL;
                } else if (code == json_error_duplicate_key || code == json_error_null_character ||
                           code == json_error_null_byte_in_key) {
                        /* After the first, quoted and let through: there is no second. */
                        if (top || locate(copy, end, &top_span, &param_span) < 0)
                                return NULL;
                        top = span_name(copy, top_span);
                        if (!top)
                                return NULL;
                        if (param_span.end > 0 && strcmp(top, "parameters") == 0) {
                                param = span_name(copy, param_span);
                                if (!param)
                                        return NULL;
                        }
                        if (nul_escapes_quote(&copy, &size) < 0)
                                return NULL;
                        flags = 0;
                } else
                        return NULL;
                msg = json_loadb(copy, size, flags, error);
        }
        if (msg && top && mark_invalid(msg, top, param) < 0) {
                json_decref(msg);
                return NULL;
        }
        *ret_marked = top != NULL;
        return msg;
}

int varlink_message_read(struct evbuffer *buf, size_t max_size, json_t **ret) {
        struct evbuffer_ptr nul;
        json_error_t error;
        bool marked = false;
        const char *data;
        json_t *msg;
        size_t len;

        if (!buf || !ret)
                return -EINVAL;

        nul = evbuffer_search(buf, "", 1, NULL);
        if (nul.pos < 0)
                return evbuffer_get_length(buf) > max_size ? -EMSGSIZE : 0;

        /* An oversized message is left in the buffer: the stream cannot be trusted any more and
         * the caller drops the connection, so skipping it would only hide the problem. */
        len = (size_t) nul.pos;
        if (len > max_size)
                return -EMSGSIZE;

        data = (const char *) evbuffer_pullup(buf, (ev_ssize_t) len + 1);
        if (!data)
                return -ENOMEM;

        /* Duplicate keys are refused: {"method":"a.B","method":"c.D"} has no single meaning. So is
         * "\u0000" in strings (jansson's default): every consumer uses them as C strings, where it
         * would silently cut off the rest. Both are answered, not closed for: load_repaired(). */
        msg = json_loadb(data, len, JSON_REJECT_DUPLICATES, &error);
        if (!msg)
                msg = load_repaired(data, len, &error, &marked);
        evbuffer_drain(buf, len + 1);
        if (!msg)
                return -EBADMSG;
        if (!json_is_object(msg)) {
                json_decref(msg);
                return -EBADMSG;
        }

        *ret = msg;
        return marked ? 2 : 1;
}

/* Like varlink_message_read(), but remembers in *scanned how much of buf is already known to hold
 * no NUL. A large message arriving in small pieces is then searched once, not once per piece
 * (which would be quadratic in the message size). */
int varlink_message_read_incremental(struct evbuffer *buf, size_t max_size, size_t *scanned, json_t **ret) {
        size_t len = evbuffer_get_length(buf);

        if (*scanned < len) {
                struct evbuffer_ptr start, nul;

                if (evbuffer_ptr_set(buf, &start, *scanned, EVBUFFER_PTR_SET) < 0)
                        return -EINVAL;
                nul = evbuffer_search(buf, "", 1, &start);
                if (nul.pos >= 0) {
                        *scanned = 0;
                        return varlink_message_read(buf, max_size, ret);
                }
                *scanned = len;
        }

        return len > max_size ? -EMSGSIZE : 0;
}

/* Serializes msg into a malloc'd buffer holding compact JSON plus the terminating NUL. */
int varlink_message_format(const json_t *msg, char **ret, size_t *ret_size) {
        char *s;

        if (!json_is_object(msg))
                return -EINVAL;

        /* jansson escapes U+0000 inside strings, so the only NUL on the wire is the terminator. */
        s = json_dumps(msg, JSON_COMPACT);
        if (!s)
                return -ENOMEM;

        *ret_size = strlen(s) + 1;
        *ret = s;
        return 0;
}

static void free_reference(const void *data, size_t len _unused_, void *extra _unused_) {
        free((void *) data);
}

int varlink_message_write(struct evbuffer *buf, const json_t *msg) {
        char *s;
        size_t size;
        int r;

        if (!buf)
                return -EINVAL;

        r = varlink_message_format(msg, &s, &size);
        if (r < 0)
                return r;

        /* Hand the string to the evbuffer instead of copying it: replies can be large. */
        if (evbuffer_add_reference(buf, s, size, free_reference, NULL) < 0) {
                free(s);
                return -ENOMEM;
        }
        return 0;
}

static int json_get_optional_bool(json_t *msg, const char *key, bool *ret) {
        json_t *v = json_object_get(msg, key);

        if (!v) {
                *ret = false;
                return 0;
        }
        if (!json_is_boolean(v))
                return -EBADMSG;
        *ret = json_is_true(v);
        return 0;
}

/* Whether v is a string holding "\u0000": the mark of varlink_message_read(). */
static bool has_nul(json_t *v) {
        return json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v);
}

int varlink_call_header_parse(json_t *msg, VarlinkCallHeader *ret) {
        VarlinkCallHeader h = {};
        const char *key, *dot;
        json_t *value;

        if (!ret)
                return -EINVAL;
        if (!json_is_object(msg))
                return -EBADMSG;

        /* Before anything else: what else is wrong with such a call may stem from it. */
        json_object_foreach(msg, key, value)
                if (has_nul(value)) {
                        *ret = (VarlinkCallHeader) { .invalid = key };
                        return 0;
                }

        json_object_foreach(msg, key, value) {
                if (!strcmp(key, "method")) {
                        if (!json_is_string(value))
                                return -EBADMSG;
                        h.method = json_string_value(value);
                } else if (!strcmp(key, "parameters")) {
                        if (!json_is_object(value))
                                return -EBADMSG;
                        h.parameters = value;
                } else if (strcmp(key, "more") && strcmp(key, "oneway") && strcmp(key, "upgrade"))
                        return -EBADMSG;
        }

        if (json_get_optional_bool(msg, "more", &h.more) < 0 ||
            json_get_optional_bool(msg, "oneway", &h.oneway) < 0 ||
            json_get_optional_bool(msg, "upgrade", &h.upgrade) < 0)
                return -EBADMSG;

        /* "interface.Method": both halves non-empty, split at the last dot. */
        if (!h.method)
                return -EBADMSG;
        dot = strrchr(h.method, '.');
        if (!dot || dot == h.method || dot[1] == '\0')
                return -EBADMSG;

        /* Handlers always get an object. Storing it in msg keeps "pointers borrow from msg" true. */
        if (!h.parameters) {
                h.parameters = json_object();
                if (!h.parameters || json_object_set_new(msg, "parameters", h.parameters) < 0)
                        return -ENOMEM;
        }

        *ret = h;
        return 0;
}

/* ---- replies formatted ahead ---- */

/* varlink_reply_set_thread_max_size(): each query thread limits the replies it builds. */
/* initial-exec: a plain %fs-relative load, not a __tls_get_addr() call (which ASan intercepts). */
static _Thread_local size_t thread_max_size __attribute__((tls_model("initial-exec")));

void varlink_reply_set_thread_max_size(size_t max) {
        thread_max_size = max;
}

/* Whether len more bytes (and the message's closing "]}}" and NUL) still fit in r. */
static bool reply_fits(const VarlinkReply *r, size_t len) {
        return r->max_size == 0 || evbuffer_get_length(r->text) + len + 4 <= r->max_size;
}

static int reply_alloc(VarlinkReply **ret) {
        VarlinkReply *r = calloc(1, sizeof(*r));

        if (!r)
                return -ENOMEM;
        r->text = evbuffer_new();
        if (!r->text) {
                free(r);
                return -ENOMEM;
        }
        r->max_size = thread_max_size;
        *ret = r;
        return 0;
}

/* Appends v as compact JSON. */
static int reply_add_json(VarlinkReply *r, const json_t *v) {
        _cleanup_free_ char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        size_t len;

        if (!s)
                return -ENOMEM;
        len = strlen(s);
        if (!reply_fits(r, len))
                return -EMSGSIZE;
        return evbuffer_add(r->text, s, len) < 0 ? -ENOMEM : 0;
}

static int reply_new_message(json_t *msg, const char *error, VarlinkReply **ret) {
        _cleanup_json_ json_t *m = msg;
        VarlinkReply *r;

        if (!m || reply_alloc(&r) < 0)
                return -ENOMEM;
        if ((error && !(r->error = strdup(error))) || varlink_message_write(r->text, m) < 0) {
                varlink_reply_free(r);
                return -ENOMEM;
        }
        /* Formatted whole (a reply of one object is small), but not sent when over the limit. */
        if (!error && !reply_fits(r, 0)) {
                varlink_reply_free(r);
                return -EMSGSIZE;
        }
        *ret = r;
        return 0;
}

int varlink_reply_new(json_t *parameters, VarlinkReply **ret) {
        _cleanup_json_ json_t *p = parameters;

        if (!ret || (p && !json_is_object(p)))
                return -EINVAL;
        return reply_new_message(p ? json_pack("{s:O}", "parameters", p) : json_pack("{s:{}}", "parameters"), NULL, ret);
}

int varlink_reply_new_error(const char *error, json_t *parameters, VarlinkReply **ret) {
        _cleanup_json_ json_t *p = parameters;

        if (!error || !ret || (p && !json_is_object(p)))
                return -EINVAL;
        return reply_new_message(p ? json_pack("{s:s, s:O}", "error", error, "parameters", p)
                                   : json_pack("{s:s, s:{}}", "error", error, "parameters"),
                                 error, ret);
}

int varlink_reply_new_array(const char *member, VarlinkReply **ret) {
        _cleanup_json_ json_t *name = NULL;
        VarlinkReply *r;

        if (!member || !ret)
                return -EINVAL;
        name = json_string(member);
        if (!name || reply_alloc(&r) < 0)
                return -ENOMEM;
        if (evbuffer_add_printf(r->text, "{\"parameters\":{") < 0 || reply_add_json(r, name) < 0 ||
            evbuffer_add_printf(r->text, ":[") < 0) {
                varlink_reply_free(r);
                return -ENOMEM;
        }
        r->array_open = r->first = true;
        *ret = r;
        return 0;
}

int varlink_reply_append(VarlinkReply *r, json_t *element) {
        _cleanup_json_ json_t *e = element;

        if (!r || !e || !r->array_open)
                return -EINVAL;
        if (!r->first && evbuffer_add(r->text, ",", 1) < 0)
                return -ENOMEM;
        r->first = false;
        return reply_add_json(r, e);
}

int varlink_reply_append_text(VarlinkReply *r, const char *json, size_t len) {
        if (!r || !json || len == 0 || !r->array_open)
                return -EINVAL;
        if (!reply_fits(r, len + 1))
                return -EMSGSIZE;
        if (!r->first && evbuffer_add(r->text, ",", 1) < 0)
                return -ENOMEM;
        r->first = false;
        return evbuffer_add(r->text, json, len) < 0 ? -ENOMEM : 0;
}

int varlink_reply_finish(VarlinkReply *r, json_t *members) {
        _cleanup_json_ json_t *m = members;
        _cleanup_free_ char *s = NULL;
        size_t len;

        if (!r || !r->array_open || (m && !json_is_object(m)))
                return -EINVAL;
        if (evbuffer_add(r->text, "]", 1) < 0)
                return -ENOMEM;
        /* The other members follow the array: "{...}" without its braces, after a comma. */
        if (m && json_object_size(m) > 0) {
                s = json_dumps(m, JSON_COMPACT);
                if (!s)
                        return -ENOMEM;
                len = strlen(s);
                if (!reply_fits(r, len))
                        return -EMSGSIZE;
                if (evbuffer_add(r->text, ",", 1) < 0 || evbuffer_add(r->text, s + 1, len - 2) < 0)
                        return -ENOMEM;
        }
        /* The closing braces of parameters and of the message, and the message's NUL. */
        if (evbuffer_add(r->text, "}}", 3) < 0)
                return -ENOMEM;
        r->array_open = false;
        return 0;
}

size_t varlink_reply_size(const VarlinkReply *r) {
        return r ? evbuffer_get_length(r->text) : 0;
}

const char *varlink_reply_error(const VarlinkReply *r) {
        return r ? r->error : NULL;
}

VarlinkReply *varlink_reply_free(VarlinkReply *r) {
        if (!r)
                return NULL;
        if (r->text)
                evbuffer_free(r->text);
        free(r->error);
        free(r);
        return NULL;
}

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
#define OUT_OF_RANGE_MAX 64 /* numbers replaced per message; a message with more is refused */

static bool is_number_char(char c) {
        return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* data failed to parse only because of a number out of range: parses it again with each such
 * number replaced by the string OUT_OF_RANGE. jansson reports the offset just past the number. */
static json_t *load_out_of_range(const char *data, size_t len) {
        _cleanup_free_ char *copy = NULL;
        json_error_t error;
        size_t size = len;

        copy = malloc(len ? len : 1);
        if (!copy)
                return NULL;
        memcpy(copy, data, len);

        for (unsigned i = 0; i < OUT_OF_RANGE_MAX; i++) {
                size_t end, start;
                json_t *msg;
                char *next;

                msg = json_loadb(copy, size, JSON_REJECT_DUPLICATES, &error);
                if (msg || json_error_code(&error) != json_error_numeric_overflow)
                        return msg;
                if (error.position <= 0 || (size_t) error.position > size)
                        return NULL;
                end = start = (size_t) error.position;
                while (start > 0 && is_number_char(copy[start - 1]))
                        start--;
                if (start == end)
                        return NULL;

                next = malloc(size - (end - start) + strlen(OUT_OF_RANGE));
                if (!next)
                        return NULL;
                memcpy(next, copy, start);
                memcpy(next + start, OUT_OF_RANGE, strlen(OUT_OF_RANGE));
                memcpy(next + start + strlen(OUT_OF_RANGE), copy + end, size - end);
                size = size - (end - start) + strlen(OUT_OF_RANGE);
                free(copy);
                copy = next;
        }
        return NULL;
}

int varlink_message_read(struct evbuffer *buf, size_t max_size, json_t **ret) {
        struct evbuffer_ptr nul;
        json_error_t error;
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

        /* Duplicate keys are rejected: {"method":"a.B","method":"c.D"} has no single meaning.
         * So is "\u0000" in strings (jansson's default): every consumer uses them as C strings,
         * where it would silently cut off the rest. */
        msg = json_loadb(data, len, JSON_REJECT_DUPLICATES, &error);
        if (!msg && json_error_code(&error) == json_error_numeric_overflow)
                msg = load_out_of_range(data, len);
        evbuffer_drain(buf, len + 1);
        if (!msg)
                return -EBADMSG;
        if (!json_is_object(msg)) {
                json_decref(msg);
                return -EBADMSG;
        }

        *ret = msg;
        return 1;
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

int varlink_call_header_parse(json_t *msg, VarlinkCallHeader *ret) {
        VarlinkCallHeader h = {};
        const char *key, *dot;
        json_t *value;

        if (!ret)
                return -EINVAL;
        if (!json_is_object(msg))
                return -EBADMSG;

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

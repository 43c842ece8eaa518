/* SPDX-License-Identifier: MIT */
/* Varlink IDL parsing: a recursive-descent parser over the text (no separate lexer: the grammar is
 * small and a type expression such as `?[]Name` must not contain blanks anyway), then a pass that
 * resolves named types to their declarations. Lookups and validation against the resulting tree
 * are in varlink-idl-validate.c. */

#include "varlink-idl.h"
#include "varlink-idl-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "macro.h"

/* Parsing recurses once per level of a type expression; hostile input must not exhaust the stack. */
#define TYPE_DEPTH_MAX 64U

typedef struct Parser {
        const char *s; /* the next character */
        unsigned line, column;
        unsigned depth; /* of the type expression being parsed */
        char *error;
        size_t error_size;
} Parser;

/* ---- trees ---- */

static VarlinkType *type_free(VarlinkType *t) {
        if (!t)
                return NULL;
        type_free(t->element);
        for (size_t k = 0; k < t->n_fields; k++) {
                free(t->fields[k].name);
                type_free(t->fields[k].type);
        }
        free(t->fields);
        free(t->name);
        free(t);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkType *, type_free)

static int type_new(VarlinkTypeKind kind, VarlinkType **ret) {
        VarlinkType *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->kind = kind;
        *ret = t;
        return 0;
}

/* Appends a field (or enum value). Takes ownership of type, also on failure. */
static int type_add_field(VarlinkType *t, const char *name, size_t n, VarlinkType *type) {
        char *copy;

        if (type_find_field(t, name, n)) {
                type_free(type);
                return -EEXIST;
        }
        copy = strndup(name, n);
        if (!copy || array_grow((void **) &t->fields, &t->fields_capacity, t->n_fields, 1, sizeof(*t->fields)) < 0) {
                free(copy);
                type_free(type);
                return -ENOMEM;
        }
        t->fields[t->n_fields++] = (VarlinkField) { .name = copy, .type = type };
        return 0;
}

VarlinkInterface *varlink_interface_free(VarlinkInterface *i) {
        if (!i)
                return NULL;
        for (size_t k = 0; k < i->n_symbols; k++) {
                free(i->symbols[k].name);
                type_free(i->symbols[k].type);
                type_free(i->symbols[k].output);
        }
        free(i->symbols);
        free(i->methods);
        free(i->name);
        free(i);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkInterface *, varlink_interface_free)

/* ---- characters ---- */

static bool is_lower(char c) {
        return c >= 'a' && c <= 'z';
}

static bool is_upper(char c) {
        return c >= 'A' && c <= 'Z';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_alnum(char c) {
        return is_lower(c) || is_upper(c) || is_digit(c);
}

/* Length of the run of characters that can make up a name or keyword. */
static size_t word_length(const char *s) {
        size_t n = 0;

        while (is_alnum(s[n]) || s[n] == '_')
                n++;
        return n;
}

/* [A-Za-z](_?[A-Za-z0-9])* */
static bool field_name_valid(const char *s, size_t n) {
        if (n == 0 || !(is_lower(s[0]) || is_upper(s[0])))
                return false;
        for (size_t k = 1; k < n; k++) {
                if (s[k] == '_') {
                        if (k + 1 == n || s[k + 1] == '_')
                                return false;
                } else if (!is_alnum(s[k]))
                        return false;
        }
        return true;
}

/* [A-Z][A-Za-z0-9]*: types, methods and errors. */
static bool symbol_name_valid(const char *s, size_t n) {
        if (n == 0 || !is_upper(s[0]))
                return false;
        for (size_t k = 1; k < n; k++)
                if (!is_alnum(s[k]))
                        return false;
        return true;
}

/* [A-Za-z]([-]*[A-Za-z0-9])* ('.' [A-Za-z0-9]([-]*[A-Za-z0-9])*)+ : at least two dot-separated
 * labels of letters, digits and inner hyphens, the first starting with a letter. The varlink
 * spec says lowercase; systemd's sd-varlink takes uppercase too and names its interfaces so
 * (io.systemd.Metrics, which trapstatd serves). */
static bool interface_name_valid(const char *s, size_t n) {
        const char *end = s + n, *label = s;
        size_t labels = 0;

        if (n == 0 || !(is_lower(s[0]) || is_upper(s[0])))
                return false;
        for (;;) {
                const char *dot = memchr(label, '.', (size_t) (end - label));
                const char *label_end = dot ? dot : end;

                if (label_end == label || label[0] == '-' || label_end[-1] == '-')
                        return false;
                for (const char *c = label; c < label_end; c++)
                        if (!is_lower(*c) && !is_upper(*c) && !is_digit(*c) && *c != '-')
                                return false;
                labels++;
                if (!dot)
                        return labels >= 2;
                label = dot + 1;
        }
}

/* ---- parser primitives ---- */

static int _printf_(4, 5) parser_error_at(Parser *p, unsigned line, unsigned column, const char *format, ...) {
        va_list ap;
        int n;

        if (!p->error || p->error_size == 0)
                return -EBADMSG;
        n = snprintf(p->error, p->error_size, "%u:%u: ", line, column);
        if (n >= 0 && (size_t) n < p->error_size) {
                va_start(ap, format);
                vsnprintf(p->error + n, p->error_size - (size_t) n, format, ap);
                va_end(ap);
        }
        return -EBADMSG;
}
#define parser_error(p, ...) parser_error_at((p), (p)->line, (p)->column, __VA_ARGS__)

/* Describes what stands at the current position, for "expected X, found Y". */
static const char *found(const Parser *p, char *buf, size_t size) {
        unsigned char c = (unsigned char) *p->s;
        size_t n = word_length(p->s);

        if (c == '\0')
                return "end of input";
        if (c == '\n' || c == '\r')
                return "end of line";
        if (c == ' ' || c == '\t')
                return "whitespace";
        if (n > 0)
                snprintf(buf, size, "'%.*s'", (int) MIN(n, 32U), p->s);
        else if (c > ' ' && c < 0x7f)
                snprintf(buf, size, "'%c'", c);
        else
                snprintf(buf, size, "byte 0x%02x", c);
        return buf;
}
#define FOUND(p) found((p), (char[48]) { 0 }, 48)

static void advance(Parser *p, size_t n) {
        for (; n > 0 && *p->s != '\0'; n--, p->s++) {
                char c = *p->s;

                /* "\r\n" is one line end: the '\r' counts as a column, the '\n' ends the line. */
                if (c == '\n' || (c == '\r' && p->s[1] != '\n')) {
                        p->line++;
                        p->column = 1;
                } else if (((unsigned char) c & 0xc0) != 0x80) /* not a UTF-8 continuation byte */
                        p->column++;
        }
}

/* Skips whitespace, line ends and comments. Returns whether anything was skipped; *ret_newline
 * says whether a line ended in between (declarations must start on a line of their own). */
static bool skip_blank(Parser *p, bool *ret_newline) {
        const char *start = p->s;
        bool newline = false;

        for (;;) {
                if (*p->s == ' ' || *p->s == '\t')
                        advance(p, 1);
                else if (*p->s == '\n' || *p->s == '\r') {
                        newline = true;
                        advance(p, 1);
                } else if (*p->s == '#') {
                        while (*p->s != '\0' && *p->s != '\n' && *p->s != '\r')
                                advance(p, 1);
                } else
                        break;
        }
        if (ret_newline)
                *ret_newline = newline;
        return p->s != start;
}

/* ---- types ---- */

static int parse_type(Parser *p, VarlinkType **ret);

/* '(' then ')' (the empty struct), fields "name: type" (a struct) or bare names (an enum, where
 * allowed), separated by commas. The first member decides between struct and enum. */
static int parse_struct_or_enum(Parser *p, bool allow_enum, VarlinkType **ret) {
        _cleanup_(type_freep) VarlinkType *t = NULL;
        int r;

        if (*p->s != '(')
                return parser_error(p, "expected '(', found %s", FOUND(p));
        advance(p, 1);
        skip_blank(p, NULL);

        r = type_new(VARLINK_TYPE_STRUCT, &t);
        if (r < 0)
                return r;

        if (*p->s == ')') {
                advance(p, 1);
                *ret = TAKE_PTR(t);
                return 0;
        }

        for (;;) {
                unsigned line = p->line, column = p->column;
                const char *name = p->s;
                size_t n = word_length(name);
                VarlinkType *field_type = NULL;

                if (n == 0)
                        return parser_error(p, "expected field name, found %s", FOUND(p));
                if (!field_name_valid(name, n))
                        return parser_error(p, "invalid field name '%.*s': expected a letter, then letters, digits and single inner underscores",
                                            (int) n, name);
                advance(p, n);
                skip_blank(p, NULL);

                if (t->n_fields == 0 && allow_enum && (*p->s == ',' || *p->s == ')'))
                        t->kind = VARLINK_TYPE_ENUM;

                if (t->kind == VARLINK_TYPE_STRUCT) {
                        if (*p->s != ':')
                                return parser_error(p, "expected ':' after field name '%.*s', found %s", (int) n, name, FOUND(p));
                        advance(p, 1);
                        skip_blank(p, NULL);
                        r = parse_type(p, &field_type);
                        if (r < 0)
                                return r;
                }

                r = type_add_field(t, name, n, field_type);
                if (r == -EEXIST)
                        return parser_error_at(p, line, column, "duplicate %s '%.*s'",
                                               t->kind == VARLINK_TYPE_ENUM ? "enum value" : "field", (int) n, name);
                if (r < 0)
                        return r;

                skip_blank(p, NULL);
                if (*p->s == ')') {
                        advance(p, 1);
                        break;
                }
                if (*p->s != ',')
                        return parser_error(p, "expected ',' or ')' after %s '%.*s', found %s",
                                            t->kind == VARLINK_TYPE_ENUM ? "enum value" : "field", (int) n, name, FOUND(p));
                advance(p, 1);
                skip_blank(p, NULL);
                if (*p->s == ')')
                        return parser_error(p, "expected %s after ',' (trailing commas are not allowed)",
                                            t->kind == VARLINK_TYPE_ENUM ? "enum value" : "field name");
        }

        *ret = TAKE_PTR(t);
        return 0;
}

/* One type expression. The prefixes '?', '[]' and '[string]' bind directly to what follows; '?'
 * may not be doubled (the reference grammar: option = "?" (btype / array type / dict type)). */
static int parse_type_at_depth(Parser *p, VarlinkType **ret) {
        static const struct {
                const char *word;
                VarlinkTypeKind kind;
        } builtins[] = {
                { "bool", VARLINK_TYPE_BOOL },     { "int", VARLINK_TYPE_INT },
                { "float", VARLINK_TYPE_FLOAT },   { "string", VARLINK_TYPE_STRING },
                { "object", VARLINK_TYPE_OBJECT },
        };
        _cleanup_(type_freep) VarlinkType *t = NULL;
        VarlinkTypeKind kind;
        size_t n;
        int r;

        if (*p->s == '(')
                return parse_struct_or_enum(p, true, ret);

        if (*p->s == '?' || *p->s == '[') {
                if (*p->s == '?') {
                        kind = VARLINK_TYPE_OPTIONAL;
                        advance(p, 1);
                        if (*p->s == '?')
                                return parser_error(p, "'?' cannot be applied to an optional type");
                } else if (strncmp(p->s, "[]", 2) == 0) {
                        kind = VARLINK_TYPE_ARRAY;
                        advance(p, 2);
                } else if (strncmp(p->s, "[string]", 8) == 0) {
                        kind = VARLINK_TYPE_MAP;
                        advance(p, 8);
                } else
                        return parser_error(p, "expected '[]' or '[string]'");

                r = type_new(kind, &t);
                if (r < 0)
                        return r;
                r = parse_type(p, &t->element);
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(t);
                return 0;
        }

        n = word_length(p->s);
        if (n == 0)
                return parser_error(p, "expected type, found %s", FOUND(p));

        for (size_t k = 0; k < ELEMENTSOF(builtins); k++)
                if (name_equal(builtins[k].word, p->s, n)) {
                        r = type_new(builtins[k].kind, &t);
                        if (r < 0)
                                return r;
                        advance(p, n);
                        *ret = TAKE_PTR(t);
                        return 0;
                }

        if (!symbol_name_valid(p->s, n))
                return parser_error(p, "unknown type '%.*s': expected bool, int, float, string, object or a type name",
                                    (int) n, p->s);

        r = type_new(VARLINK_TYPE_NAMED, &t);
        if (r < 0)
                return r;
        t->name = strndup(p->s, n);
        if (!t->name)
                return -ENOMEM;
        t->line = p->line;
        t->column = p->column;
        advance(p, n);
        *ret = TAKE_PTR(t);
        return 0;
}

static int parse_type(Parser *p, VarlinkType **ret) {
        int r;

        if (p->depth >= TYPE_DEPTH_MAX)
                return parser_error(p, "type nested more than %u levels deep", TYPE_DEPTH_MAX);
        p->depth++;
        r = parse_type_at_depth(p, ret);
        p->depth--;
        return r;
}

/* ---- declarations ---- */

static int expect_open(Parser *p, const char *after) {
        if (*p->s != '(')
                return parser_error(p, "expected '(' after %s, found %s", after, FOUND(p));
        return 0;
}

static int interface_add_symbol(VarlinkInterface *i, const VarlinkSymbol *s) {
        int r;

        /* Room in both before either grows by one: on failure neither has the symbol. */
        if (s->kind == VARLINK_SYMBOL_METHOD) {
                r = array_grow((void **) &i->methods, &i->methods_capacity, i->n_methods, 1, sizeof(*i->methods));
                if (r < 0)
                        return r;
        }
        r = array_grow((void **) &i->symbols, &i->symbols_capacity, i->n_symbols, 1, sizeof(*i->symbols));
        if (r < 0)
                return r;

        if (s->kind == VARLINK_SYMBOL_METHOD)
                i->methods[i->n_methods++] = i->n_symbols;
        i->symbols[i->n_symbols++] = *s;
        return 0;
}

static const char *const declaration_keywords[] = {
        [VARLINK_SYMBOL_TYPE] = "type",
        [VARLINK_SYMBOL_METHOD] = "method",
        [VARLINK_SYMBOL_ERROR] = "error",
};

/* "type", "method" or "error", and the whitespace after it; returns the VarlinkSymbolKind. */
static int parse_declaration_keyword(Parser *p) {
        size_t n = word_length(p->s), k;

        if (name_equal("interface", p->s, n))
                return parser_error(p, "only one 'interface' declaration is allowed");
        for (k = 0; k < ELEMENTSOF(declaration_keywords); k++)
                if (name_equal(declaration_keywords[k], p->s, n))
                        break;
        if (k == ELEMENTSOF(declaration_keywords))
                return parser_error(p, "expected 'type', 'method' or 'error', found %s", FOUND(p));
        advance(p, n);
        if (!skip_blank(p, NULL))
                return parser_error(p, "expected whitespace after '%s', found %s", declaration_keywords[k], FOUND(p));
        return (int) k;
}

/* The declaration's name, new in this interface, and the blanks after it. */
static int parse_declaration_name(Parser *p, const VarlinkInterface *i, VarlinkSymbolKind kind, char **ret) {
        const VarlinkSymbol *previous;
        size_t n = word_length(p->s);
        char *name;

        if (n == 0)
                return parser_error(p, "expected %s name, found %s", declaration_keywords[kind], FOUND(p));
        if (!symbol_name_valid(p->s, n))
                return parser_error(p, "invalid %s name '%.*s': expected an uppercase letter, then letters and digits",
                                    declaration_keywords[kind], (int) n, p->s);
        previous = interface_find_symbol(i, p->s, n);
        if (previous)
                return parser_error(p, "duplicate name '%s' (already declared at %u:%u)", previous->name,
                                    previous->line, previous->column);
        name = strndup(p->s, n);
        if (!name)
                return -ENOMEM;
        advance(p, n);
        skip_blank(p, NULL);
        *ret = name;
        return 0;
}

/* "(...)" after a type or error name, "(...) -> (...)" after a method's. */
static int parse_declaration_body(Parser *p, VarlinkSymbolKind kind, VarlinkType **ret_type, VarlinkType **ret_output) {
        int r;

        switch (kind) {
        case VARLINK_SYMBOL_TYPE:
                r = expect_open(p, "type name");
                if (r < 0)
                        return r;
                return parse_struct_or_enum(p, true, ret_type);
        case VARLINK_SYMBOL_METHOD:
                r = expect_open(p, "method name");
                if (r >= 0)
                        r = parse_struct_or_enum(p, false, ret_type);
                if (r < 0)
                        return r;
                skip_blank(p, NULL);
                if (strncmp(p->s, "->", 2) != 0)
                        return parser_error(p, "expected '->' after method parameters, found %s", FOUND(p));
                advance(p, 2);
                skip_blank(p, NULL);
                r = expect_open(p, "'->'");
                if (r < 0)
                        return r;
                return parse_struct_or_enum(p, false, ret_output);
        case VARLINK_SYMBOL_ERROR:
                r = expect_open(p, "error name");
                if (r < 0)
                        return r;
                return parse_struct_or_enum(p, false, ret_type);
        }
        return -EINVAL;
}

/* "type Name (...)", "method Name (...) -> (...)" or "error Name (...)". */
static int parse_declaration(Parser *p, VarlinkInterface *i) {
        _cleanup_(type_freep) VarlinkType *type = NULL, *output = NULL;
        _cleanup_free_ char *name = NULL;
        VarlinkSymbolKind kind;
        unsigned line, column;
        int r;

        r = parse_declaration_keyword(p);
        if (r < 0)
                return r;
        kind = (VarlinkSymbolKind) r;
        line = p->line;
        column = p->column;
        r = parse_declaration_name(p, i, kind, &name);
        if (r < 0)
                return r;
        r = parse_declaration_body(p, kind, &type, &output);
        if (r < 0)
                return r;

        r = interface_add_symbol(i, &(VarlinkSymbol) {
                .kind = kind,
                .name = name,
                .type = type,
                .output = output,
                .line = line,
                .column = column,
        });
        if (r < 0)
                return r;
        name = NULL;
        type = output = NULL;
        return 0;
}

/* Points every named reference at its declaration. Walks the owned tree only, never through a
 * resolved reference, so recursive types are no problem. */
static int resolve_type(Parser *p, const VarlinkInterface *i, VarlinkType *t) {
        int r;

        if (!t)
                return 0;
        if (t->kind == VARLINK_TYPE_NAMED) {
                const VarlinkSymbol *s = interface_find_symbol(i, t->name, strlen(t->name));

                if (!s)
                        return parser_error_at(p, t->line, t->column, "unknown type '%s'", t->name);
                if (s->kind != VARLINK_SYMBOL_TYPE)
                        return parser_error_at(p, t->line, t->column, "'%s' is %s, not a type", t->name,
                                               s->kind == VARLINK_SYMBOL_METHOD ? "a method" : "an error");
                t->resolved = s->type;
                return 0;
        }
        r = resolve_type(p, i, t->element);
        if (r < 0)
                return r;
        for (size_t k = 0; k < t->n_fields; k++) {
                r = resolve_type(p, i, t->fields[k].type);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_interface(Parser *p, VarlinkInterface *i) {
        size_t n;
        int r;

        skip_blank(p, NULL);
        n = word_length(p->s);
        if (!name_equal("interface", p->s, n))
                return parser_error(p, "expected 'interface' declaration, found %s", FOUND(p));
        advance(p, n);
        if (!skip_blank(p, NULL))
                return parser_error(p, "expected whitespace after 'interface', found %s", FOUND(p));

        /* Take in everything that could be meant as part of the name, to reject it as a whole. */
        n = 0;
        while (is_alnum(p->s[n]) || p->s[n] == '.' || p->s[n] == '_' || p->s[n] == '-')
                n++;
        if (n == 0)
                return parser_error(p, "expected interface name, found %s", FOUND(p));
        if (!interface_name_valid(p->s, n))
                return parser_error(p, "invalid interface name '%.*s': expected a lowercase reverse domain name such as org.example.service",
                                    (int) n, p->s);
        i->name = strndup(p->s, n);
        if (!i->name)
                return -ENOMEM;
        advance(p, n);

        for (;;) {
                bool newline;

                skip_blank(p, &newline);
                if (*p->s == '\0')
                        break;
                if (!newline)
                        return parser_error(p, "expected end of line after declaration, found %s", FOUND(p));
                r = parse_declaration(p, i);
                if (r < 0)
                        return r;
        }
        if (i->n_symbols == 0)
                return parser_error(p, "expected 'type', 'method' or 'error' declaration, found end of input");

        for (size_t k = 0; k < i->n_symbols; k++) {
                r = resolve_type(p, i, i->symbols[k].type);
                if (r < 0)
                        return r;
                r = resolve_type(p, i, i->symbols[k].output);
                if (r < 0)
                        return r;
        }
        return 0;
}

int varlink_interface_parse(const char *text, VarlinkInterface **ret, char *error, size_t error_size) {
        _cleanup_(varlink_interface_freep) VarlinkInterface *i = NULL;
        Parser p = {
                .s = text,
                .line = 1,
                .column = 1,
                .error = error,
                .error_size = error_size,
        };
        int r;

        if (error && error_size > 0)
                error[0] = '\0';
        if (!text || !ret)
                return -EINVAL;

        i = calloc(1, sizeof(*i));
        if (!i)
                return -ENOMEM;
        r = parse_interface(&p, i);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(i);
        return 0;
}

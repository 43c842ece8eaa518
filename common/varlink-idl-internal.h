/* SPDX-License-Identifier: MIT */
#pragma once

/* Internal to the varlink IDL code: only common/varlink-idl.c (parsing) and
 * common/varlink-idl-validate.c (lookups and validation) include this; everyone else uses
 * varlink-idl.h. The tree a parsed interface is made of, and the lookups both files need. */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "varlink-idl.h"

typedef enum VarlinkTypeKind {
        VARLINK_TYPE_BOOL,
        VARLINK_TYPE_INT,
        VARLINK_TYPE_FLOAT,
        VARLINK_TYPE_STRING,
        VARLINK_TYPE_OBJECT,   /* any JSON value */
        VARLINK_TYPE_NAMED,    /* a reference to a `type` declaration */
        VARLINK_TYPE_STRUCT,   /* (name: T, ...) */
        VARLINK_TYPE_ENUM,     /* (a, b, ...) */
        VARLINK_TYPE_ARRAY,    /* []T */
        VARLINK_TYPE_MAP,      /* [string]T */
        VARLINK_TYPE_OPTIONAL, /* ?T */
} VarlinkTypeKind;

typedef struct VarlinkType VarlinkType;

typedef struct VarlinkField {
        char *name;
        VarlinkType *type; /* NULL for an enum value */
} VarlinkField;

struct VarlinkType {
        VarlinkTypeKind kind;
        VarlinkType *element;        /* ARRAY, MAP, OPTIONAL */
        VarlinkField *fields;        /* STRUCT: its fields; ENUM: its values */
        size_t n_fields, fields_capacity;
        char *name;                  /* NAMED */
        const VarlinkType *resolved; /* NAMED: the declaration's struct or enum (not owned) */
        unsigned line, column;       /* NAMED: where the reference stands, for "unknown type" */
};

typedef enum VarlinkSymbolKind {
        VARLINK_SYMBOL_TYPE,
        VARLINK_SYMBOL_METHOD,
        VARLINK_SYMBOL_ERROR,
} VarlinkSymbolKind;

typedef struct VarlinkSymbol {
        VarlinkSymbolKind kind;
        char *name;
        VarlinkType *type;   /* TYPE: struct or enum; METHOD: input struct; ERROR: its struct */
        VarlinkType *output; /* METHOD only */
        unsigned line, column;
} VarlinkSymbol;

struct VarlinkInterface {
        char *name;
        VarlinkSymbol *symbols; /* in declaration order */
        size_t n_symbols, symbols_capacity;
        size_t *methods;        /* indices into symbols */
        size_t n_methods, methods_capacity;
};

/* Whether the string name equals the n bytes at s (which may hold a NUL: JSON strings can). */
static inline bool name_equal(const char *name, const char *s, size_t n) {
        return strlen(name) == n && memcmp(name, s, n) == 0;
}

static inline const VarlinkField *type_find_field(const VarlinkType *t, const char *s, size_t n) {
        for (size_t k = 0; k < t->n_fields; k++)
                if (name_equal(t->fields[k].name, s, n))
                        return t->fields + k;
        return NULL;
}

static inline const VarlinkSymbol *interface_find_symbol(const VarlinkInterface *i, const char *name, size_t n) {
        for (size_t k = 0; k < i->n_symbols; k++)
                if (name_equal(i->symbols[k].name, name, n))
                        return i->symbols + k;
        return NULL;
}

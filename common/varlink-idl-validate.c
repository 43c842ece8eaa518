/* SPDX-License-Identifier: MIT */
/* Varlink IDL lookups (methods and errors by name) and the validator of JSON parameters against a
 * parsed interface (varlink-idl.c). */

#include "varlink-idl.h"
#include "varlink-idl-internal.h"

#include <errno.h>
#include <string.h>

/* ---- queries ---- */

const char *varlink_interface_name(const VarlinkInterface *i) {
        return i ? i->name : NULL;
}

size_t varlink_interface_n_methods(const VarlinkInterface *i) {
        return i ? i->n_methods : 0;
}

const char *varlink_interface_method_name(const VarlinkInterface *i, size_t index) {
        if (!i || index >= i->n_methods)
                return NULL;
        return i->symbols[i->methods[index]].name;
}

/* Accepts "Name" and "<interface>.Name". */
static const VarlinkSymbol *interface_lookup(const VarlinkInterface *i, VarlinkSymbolKind kind, const char *name) {
        const VarlinkSymbol *s;
        size_t n;

        if (!i || !name)
                return NULL;
        n = strlen(i->name);
        if (strncmp(name, i->name, n) == 0 && name[n] == '.')
                name += n + 1;
        s = interface_find_symbol(i, name, strlen(name));
        return s && s->kind == kind ? s : NULL;
}

bool varlink_interface_has_method(const VarlinkInterface *i, const char *name) {
        return interface_lookup(i, VARLINK_SYMBOL_METHOD, name);
}

bool varlink_interface_has_error(const VarlinkInterface *i, const char *name) {
        return interface_lookup(i, VARLINK_SYMBOL_ERROR, name);
}

/* ---- validation ---- */

static int struct_validate(const VarlinkType *t, json_t *object, const char **ret_field);

/* Whether v is a value of type t. Terminates on recursive types: every step through a named
 * reference lands on a struct or an enum, and a struct only recurses into a part of v. */
static bool value_valid(const VarlinkType *t, json_t *v) {
        const char *key;
        json_t *element;
        size_t index;

        /* A string holding "\u0000" is a value of no type, "object" included: C code would read it
         * cut short. varlink_message_read() marks a member holding a duplicate key so too. */
        if (json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v))
                return false;

        switch (t->kind) {
        case VARLINK_TYPE_BOOL:
                return json_is_boolean(v);
        case VARLINK_TYPE_INT:
                return json_is_integer(v);
        case VARLINK_TYPE_FLOAT:
                return json_is_number(v);
        case VARLINK_TYPE_STRING:
                return json_is_string(v);
        case VARLINK_TYPE_OBJECT:
                return true;
        case VARLINK_TYPE_NAMED:
                return value_valid(t->resolved, v);
        case VARLINK_TYPE_STRUCT:
                return json_is_object(v) && struct_validate(t, v, NULL) == 0;
        case VARLINK_TYPE_ENUM:
                return json_is_string(v) && type_find_field(t, json_string_value(v), json_string_length(v));
        case VARLINK_TYPE_ARRAY:
                if (!json_is_array(v))
                        return false;
                json_array_foreach(v, index, element)
                        if (!value_valid(t->element, element))
                                return false;
                return true;
        case VARLINK_TYPE_MAP:
                if (!json_is_object(v))
                        return false;
                json_object_foreach(v, key, element)
                        if (!value_valid(t->element, element))
                                return false;
                return true;
        case VARLINK_TYPE_OPTIONAL:
                return json_is_null(v) || value_valid(t->element, v);
        }
        return false;
}

/* object NULL counts as {}. Declared fields are checked first, in declaration order, so which
 * field is reported does not depend on the order of the keys. */
static int struct_validate(const VarlinkType *t, json_t *object, const char **ret_field) {
        for (size_t k = 0; k < t->n_fields; k++) {
                const VarlinkField *f = t->fields + k;
                json_t *v = object ? json_object_get(object, f->name) : NULL;

                if (v ? !value_valid(f->type, v) : f->type->kind != VARLINK_TYPE_OPTIONAL) {
                        if (ret_field)
                                *ret_field = f->name;
                        return -EINVAL;
                }
        }

        if (!object)
                return 0;
        /* By length: a key with an embedded NUL must not pass for the field it starts with. */
        for (void *iter = json_object_iter(object); iter; iter = json_object_iter_next(object, iter))
                if (!type_find_field(t, json_object_iter_key(iter), json_object_iter_key_len(iter))) {
                        if (ret_field)
                                *ret_field = json_object_iter_key(iter);
                        return -EINVAL;
                }
        return 0;
}

static int parameters_validate(const VarlinkType *t, json_t *parameters, const char **ret_field) {
        if (parameters && !json_is_object(parameters)) {
                if (ret_field)
                        *ret_field = NULL;
                return -EINVAL;
        }
        return struct_validate(t, parameters, ret_field);
}

int varlink_interface_validate_input(const VarlinkInterface *i, const char *method, json_t *parameters,
                                     const char **ret_field) {
        const VarlinkSymbol *s = interface_lookup(i, VARLINK_SYMBOL_METHOD, method);

        if (!s)
                return -ENOENT;
        return parameters_validate(s->type, parameters, ret_field);
}

int varlink_interface_validate_output(const VarlinkInterface *i, const char *method, json_t *parameters,
                                      const char **ret_field) {
        const VarlinkSymbol *s = interface_lookup(i, VARLINK_SYMBOL_METHOD, method);

        if (!s)
                return -ENOENT;
        return parameters_validate(s->output, parameters, ret_field);
}

int varlink_interface_validate_error(const VarlinkInterface *i, const char *error, json_t *parameters,
                                     const char **ret_field) {
        const VarlinkSymbol *s = interface_lookup(i, VARLINK_SYMBOL_ERROR, error);

        if (!s)
                return -ENOENT;
        return parameters_validate(s->type, parameters, ret_field);
}

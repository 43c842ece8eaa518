/* SPDX-License-Identifier: MIT */
#pragma once

/* A strict parser for the varlink interface definition language
 * (https://varlink.org/Interface-Definition) and a validator of message parameters against it.
 *
 * Parsing follows the reference grammar (varlink/rust varlink_parser): one `interface` line, then
 * `type`, `method` and `error` declarations, each starting on a line of its own. Whitespace,
 * newlines and `#` comments may stand between any two tokens; a type expression such as
 * `?[][string]Name` is one token (no blanks after `?`, `[]`, `[string]`). Trailing commas are
 * rejected, and so are duplicate declaration names (across types, methods and errors, which share
 * one namespace of qualified names), duplicate fields or enum values, and references to names that
 * are not a declared `type`. Recursive types (through named references) are allowed.
 *
 * Method and error names may be passed unqualified ("Top") or qualified with this interface's
 * name ("io.trapstat.Top"). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct VarlinkInterface VarlinkInterface;

/* Parses text. Returns 0 and sets *ret; -EBADMSG when text is not a valid interface definition,
 * with "LINE:COLUMN: what was expected" written to error (both 1-based; columns count characters;
 * the caller prefixes the file name); -ENOMEM; -EINVAL on NULL arguments.
 * error may be NULL or error_size 0 when the message is not wanted. */
int varlink_interface_parse(const char *text, VarlinkInterface **ret, char *error, size_t error_size);
VarlinkInterface *varlink_interface_free(VarlinkInterface *i);

/* "io.trapstat" */
const char *varlink_interface_name(const VarlinkInterface *i);

/* Method names (unqualified) in declaration order: for checking that every declared method has a
 * handler and the reverse. */
size_t varlink_interface_n_methods(const VarlinkInterface *i);
const char *varlink_interface_method_name(const VarlinkInterface *i, size_t index);
bool varlink_interface_has_method(const VarlinkInterface *i, const char *name);
bool varlink_interface_has_error(const VarlinkInterface *i, const char *name);

/* Checks a call's parameters object against the method's input struct.
 * Returns 0 when valid; -ENOENT when the method is not declared; -EINVAL when the parameters are
 * not valid, and then sets *ret_field (when ret_field is not NULL) to the name of the offending
 * top-level field, for org.varlink.service.InvalidParameter:
 *   - a non-optional field is missing (optional ones may be absent or null),
 *   - a field's value does not match its type, at any depth (int takes JSON integers only, float
 *     integers and reals, object any value, enums one of their names as a string; nested structs
 *     are checked as strictly as the top level),
 *   - a field is not declared (declared fields are checked first, in declaration order).
 * parameters NULL counts as {}. When parameters is not an object, returns -EINVAL and sets
 * *ret_field to NULL. *ret_field points into the interface or the JSON object, valid while both
 * live. It is left untouched unless -EINVAL is returned. */
int varlink_interface_validate_input(const VarlinkInterface *i, const char *method, json_t *parameters,
                                     const char **ret_field);

/* Same for a reply's parameters against the method's output struct. The daemon builds its replies
 * from the IDL's own types and does not check them at run time: the tests, the fuzzers and the
 * certification client (tests/helpers/varlink-cert-client.c) check every reply they get with this,
 * varlink_interface_validate_error() and varlink_interface_has_error(). */
int varlink_interface_validate_output(const VarlinkInterface *i, const char *method, json_t *parameters,
                                      const char **ret_field);

/* Same for an error's parameters against its struct; -ENOENT when the error is not declared. */
int varlink_interface_validate_error(const VarlinkInterface *i, const char *error, json_t *parameters,
                                     const char **ret_field);

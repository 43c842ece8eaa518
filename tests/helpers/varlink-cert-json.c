/* SPDX-License-Identifier: MIT */
/* JSON comparison shared by the certification helpers (see varlink-cert-json.h). */

#include "varlink-cert-json.h"

bool json_equivalent(const json_t *a, const json_t *b) {
        const char *key;
        json_t *v;

        if (json_is_number(a) && json_is_number(b)) {
                if (json_is_integer(a) && json_is_integer(b))
                        return json_integer_value(a) == json_integer_value(b);
                return json_number_value(a) == json_number_value(b);
        }
        if (json_typeof(a) != json_typeof(b))
                return false;
        if (json_is_array(a)) {
                if (json_array_size(a) != json_array_size(b))
                        return false;
                for (size_t i = 0; i < json_array_size(a); i++)
                        if (!json_equivalent(json_array_get(a, i), json_array_get(b, i)))
                                return false;
                return true;
        }
        if (json_is_object(a)) {
                json_object_foreach((json_t *) a, key, v) {
                        json_t *w = json_object_get(b, key);

                        if (!json_is_null(v) && (!w || !json_equivalent(v, w)))
                                return false;
                        if (json_is_null(v) && w && !json_is_null(w))
                                return false;
                }
                json_object_foreach((json_t *) b, key, v)
                        if (!json_is_null(v) && !json_object_get(a, key))
                                return false;
                return true;
        }
        return json_equal(a, b);
}

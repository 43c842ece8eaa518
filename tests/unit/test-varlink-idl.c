/* SPDX-License-Identifier: MIT */
/* Tests for common/varlink-idl.c and varlink-idl-validate.c: the project's own interface (path in
 * argv[1]), the standard org.varlink.service (schema/org.varlink.service.varlink, embedded) and
 * org.varlink.certification interfaces, one interface exercising every construct, validation rule
 * by rule, and malformed definitions with their error positions. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "embedded.h"
#include "json-util.h"
#include "sites.h"
#include "varlink-idl.h"
#include "traps.h"

static const char *trapstat_idl_path;

/* tests/data/org.varlink.certification.varlink, embedded at build time (the certification
 * server serves the same text). Calls chain Start, Test01 ... Test11, End. */
extern const EmbeddedFile embedded_certification[];
#define certification_idl (embedded_certification[0].text)

/* Every construct, with everything optional so that each field can be tested on its own. */
static const char types_idl[] =
        "interface org.example.types\n"
        "\n"
        "# An enum declared as a type.\n"
        "type Color (red, green, blue)\n"
        "\n"
        "# A recursive type: legal through named references.\n"
        "type Node (value: int, children: []Node, parent: ?Node)\n"
        "\n"
        "# Impossible to satisfy with a finite value, but legal to declare.\n"
        "type Endless (next: Endless)\n"
        "\n"
        "method Check(\n"
        "  b: ?bool,\n"
        "  i: ?int,\n"
        "  f: ?float,\n"
        "  s: ?string,\n"
        "  o: ?object,\n"
        "  e: ?Color,\n"
        "  a: ?[]int,\n"
        "  m: ?[string]float,\n"
        "  n: ?Node,\n"
        "  st: ?(x: int, y: ?(z: string)),\n"
        "  oa: ?[]?int,\n"
        "  ie: ?(one, two),\n"
        "  am: ?[][string][]Color,\n"
        "  end: ?Endless\n"
        ") -> ()\n"
        "\n"
        "method Required(o: object, c: Color) -> ()\n";

/* ---- helpers ---- */

static char *read_file(const char *path) {
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t size = 0;
        long length;

        assert_non_null(f);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        length = ftell(f);
        assert_true(length > 0);
        rewind(f);
        size = (size_t) length;
        text = malloc(size + 1);
        assert_non_null(text);
        assert_int_equal(fread(text, 1, size, f), size);
        text[size] = '\0';
        fclose(f);
        return text;
}

static VarlinkInterface *parse_ok(const char *text) {
        VarlinkInterface *i = NULL;
        char error[256];
        int r;

        r = varlink_interface_parse(text, &i, error, sizeof(error));
        if (r != 0)
                fail_msg("parse failed (%d): %s", r, error);
        assert_non_null(i);
        assert_string_equal(error, "");
        return i;
}

static json_t *json(const char *text) {
        json_error_t e;
        json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);

        if (!v)
                fail_msg("bad JSON in test: %s: %s", text, e.text);
        return v;
}

enum { CHECK_INPUT, CHECK_OUTPUT, CHECK_ERROR };

/* Validates parameters (JSON text) and checks the result: want_field NULL means valid. */
static void check(const VarlinkInterface *i, int what, const char *name, const char *parameters,
                  const char *want_field) {
        _cleanup_json_ json_t *p = json(parameters);
        const char *field = "untouched";
        int r;

        r = what == CHECK_INPUT    ? varlink_interface_validate_input(i, name, p, &field)
            : what == CHECK_OUTPUT ? varlink_interface_validate_output(i, name, p, &field)
                             : varlink_interface_validate_error(i, name, p, &field);
        if (!want_field) {
                if (r != 0)
                        fail_msg("%s %s: expected valid, got %d (field %s)", name, parameters, r, field ? field : "(null)");
                assert_string_equal(field, "untouched");
                return;
        }
        if (r != -EINVAL)
                fail_msg("%s %s: expected -EINVAL for %s, got %d", name, parameters, want_field, r);
        assert_non_null(field);
        if (strcmp(field, want_field) != 0)
                fail_msg("%s %s: expected field %s, got %s", name, parameters, want_field, field);
}

#define check_input(i, method, parameters, field) check((i), CHECK_INPUT, (method), (parameters), (field))
#define check_output(i, method, parameters, field) check((i), CHECK_OUTPUT, (method), (parameters), (field))
#define check_error(i, error, parameters, field) check((i), CHECK_ERROR, (error), (parameters), (field))

/* Expects text to be rejected with an error beginning with where ("LINE:COL: ") and containing
 * what. */
static void check_parse_error(const char *text, const char *where, const char *what) {
        VarlinkInterface *i = NULL;
        char error[256] = "garbage";
        int r;

        r = varlink_interface_parse(text, &i, error, sizeof(error));
        if (r != -EBADMSG)
                fail_msg("expected -EBADMSG, got %d for:\n%s", r, text);
        assert_null(i);
        if (strncmp(error, where, strlen(where)) != 0 || error[strlen(where)] != ' ' || !strstr(error, what))
                fail_msg("expected \"%s ...%s...\", got \"%s\" for:\n%s", where, what, error, text);
}

/* ---- parsing well-formed interfaces ---- */

static void test_parse_trapstat(void **state) {
        _cleanup_free_ char *text = read_file(trapstat_idl_path);
        VarlinkInterface *i = parse_ok(text);
        static const char *const methods[] = { "GetStatus",     "Top",   "History", "UnitHistory", "ContainerHistory",
                                                "UnitTotals",    "Sites", "ListProcesses", "Watch",   "Traps" };

        assert_string_equal(varlink_interface_name(i), "io.trapstat");
        assert_int_equal(varlink_interface_n_methods(i), ELEMENTSOF(methods));
        for (size_t k = 0; k < ELEMENTSOF(methods); k++) {
                assert_string_equal(varlink_interface_method_name(i, k), methods[k]);
                assert_true(varlink_interface_has_method(i, methods[k]));
        }
        assert_null(varlink_interface_method_name(i, ELEMENTSOF(methods)));

        assert_true(varlink_interface_has_method(i, "io.trapstat.Top"));
        assert_false(varlink_interface_has_method(i, "org.varlink.service.Top"));
        assert_false(varlink_interface_has_method(i, "top"));
        assert_false(varlink_interface_has_method(i, "Faults"));        /* a type */
        assert_false(varlink_interface_has_method(i, "NoSuchProcess")); /* an error */
        assert_false(varlink_interface_has_method(i, ""));
        assert_false(varlink_interface_has_method(i, NULL));

        assert_true(varlink_interface_has_error(i, "NoSuchProcess"));
        assert_true(varlink_interface_has_error(i, "DatabaseError"));
        assert_true(varlink_interface_has_error(i, "NoSuchUnit"));
        assert_true(varlink_interface_has_error(i, "io.trapstat.DatabaseError"));
        assert_false(varlink_interface_has_error(i, "Top"));
        assert_false(varlink_interface_has_error(i, "Process"));
        assert_false(varlink_interface_has_error(i, "InvalidParameter"));

        assert_null(varlink_interface_free(i));
}

static void test_parse_service(void **state) {
        /* schema/org.varlink.service.varlink, embedded exactly as the server serves it. */
        VarlinkInterface *i = parse_ok(embedded_varlink_service[0].text);
        static const char *const errors[] = { "InterfaceNotFound", "MethodNotFound", "MethodNotImplemented",
                                              "InvalidParameter",  "PermissionDenied", "ExpectedMore" };

        assert_string_equal(varlink_interface_name(i), "org.varlink.service");
        assert_int_equal(varlink_interface_n_methods(i), 2);
        assert_string_equal(varlink_interface_method_name(i, 0), "GetInfo");
        assert_string_equal(varlink_interface_method_name(i, 1), "GetInterfaceDescription");
        for (size_t k = 0; k < ELEMENTSOF(errors); k++)
                assert_true(varlink_interface_has_error(i, errors[k]));
        assert_true(varlink_interface_has_error(i, "org.varlink.service.InvalidParameter"));

        check_input(i, "GetInfo", "{}", NULL);
        check_input(i, "GetInfo", "{\"x\": 1}", "x");
        check_input(i, "GetInterfaceDescription", "{\"interface\": \"io.trapstat\"}", NULL);
        check_input(i, "GetInterfaceDescription", "{}", "interface");
        check_output(i, "GetInfo",
                     "{\"vendor\": \"v\", \"product\": \"p\", \"version\": \"1\", \"url\": \"u\","
                     " \"interfaces\": [\"org.varlink.service\", \"io.trapstat\"]}",
                     NULL);
        check_output(i, "GetInfo",
                     "{\"vendor\": \"v\", \"product\": \"p\", \"version\": \"1\", \"url\": \"u\", \"interfaces\": [1]}",
                     "interfaces");
        check_error(i, "InvalidParameter", "{\"parameter\": \"pid\"}", NULL);
        check_error(i, "org.varlink.service.InvalidParameter", "{}", "parameter");
        check_error(i, "PermissionDenied", "{}", NULL);
        check_error(i, "PermissionDenied", "{\"why\": \"no\"}", "why");
        varlink_interface_free(i);
}

/* A certification call: every method but Start takes the client_id that Start returned. */
static void check_cert(const VarlinkInterface *i, const char *name, const char *parameters, const char *want_field) {
        _cleanup_json_ json_t *p = json(parameters);
        _cleanup_free_ char *text = NULL;

        assert_int_equal(json_object_set_new(p, "client_id", json_string("c")), 0);
        text = json_dumps(p, JSON_COMPACT);
        assert_non_null(text);
        check(i, CHECK_INPUT, name, text, want_field);
}

static void test_parse_certification(void **state) {
        VarlinkInterface *i = parse_ok(certification_idl);
        char name[16];

        assert_string_equal(varlink_interface_name(i), "org.varlink.certification");
        assert_int_equal(varlink_interface_n_methods(i), 13);
        assert_string_equal(varlink_interface_method_name(i, 0), "Start");
        for (unsigned k = 1; k <= 11; k++) {
                snprintf(name, sizeof(name), "Test%02u", k);
                assert_string_equal(varlink_interface_method_name(i, k), name);
        }
        assert_string_equal(varlink_interface_method_name(i, 12), "End");
        assert_true(varlink_interface_has_error(i, "CertificationError"));
        assert_false(varlink_interface_has_method(i, "MyType"));

        /* The chain of calls with the values the reference servers send. */
        check_output(i, "Start", "{\"client_id\": \"c\"}", NULL);
        check_cert(i, "Test02", "{\"bool\": true}", NULL);
        check_cert(i, "Test03", "{\"int\": 1}", NULL);
        check_cert(i, "Test04", "{\"float\": 1.0}", NULL);
        check_cert(i, "Test05", "{\"string\": \"ping\"}", NULL);
        check_cert(i, "Test06", "{\"bool\": false, \"int\": 2, \"float\": 3.14, \"string\": \"a\"}", NULL);
        check_cert(i, "Test07", "{\"struct\": {\"bool\": false, \"int\": 2, \"float\": 3, \"string\": \"a\"}}", NULL);
        check_cert(i, "Test07", "{\"struct\": {\"bool\": false, \"int\": 2.5, \"float\": 3, \"string\": \"a\"}}", "struct");
        check_cert(i, "Test08", "{\"map\": {\"foo\": \"Foo\", \"bar\": \"Bar\"}}", NULL);
        check_output(i, "Test08", "{\"set\": {\"one\": {}, \"two\": {}}}", NULL);
        check_output(i, "Test08", "{\"set\": {\"one\": {}, \"two\": {\"x\": 1}}}", "set");

        static const char mytype[] =
                "{\"mytype\": {"
                "  \"object\": {\"method\": \"org.varlink.certification.Test09\", \"parameters\": {\"map\": {}}},"
                "  \"enum\": \"two\","
                "  \"struct\": {\"first\": 1, \"second\": \"2\"},"
                "  \"array\": [\"one\", \"two\", \"three\"],"
                "  \"dictionary\": {\"foo\": \"Foo\", \"bar\": \"Bar\"},"
                "  \"stringset\": {\"one\": {}, \"two\": {}},"
                "  \"nullable\": null,"
                "  \"nullable_array_struct\": null,"
                "  \"interface\": {"
                "    \"foo\": [null, {\"foo\": \"foo\", \"bar\": \"bar\"}, null, {\"one\": \"foo\", \"two\": \"baz\"}],"
                "    \"anon\": {\"foo\": true, \"bar\": false}"
                "  }"
                "}}";
        check_output(i, "Test09", mytype, NULL);
        check_cert(i, "Test10", mytype, NULL);

        /* The same value with one deep flaw at a time. */
        check_cert(i, "Test10", "{\"mytype\": {\"enum\": \"two\"}}", "mytype");
        check_cert(i, "Test10",
                    "{\"mytype\": {\"object\": 1, \"enum\": \"four\", \"struct\": {\"first\": 1, \"second\": \"2\"},"
                    " \"array\": [], \"dictionary\": {}, \"stringset\": {}, \"interface\": {\"anon\": {\"foo\": true, \"bar\": false}}}}",
                    "mytype");
        check_cert(i, "Test10",
                    "{\"mytype\": {\"object\": 1, \"enum\": \"one\", \"struct\": {\"first\": 1, \"second\": \"2\"},"
                    " \"array\": [], \"dictionary\": {}, \"stringset\": {}, \"interface\": {\"anon\": {\"foo\": true, \"bar\": false}}}}",
                    NULL);
        check_cert(i, "Test10",
                    "{\"mytype\": {\"object\": 1, \"enum\": \"one\", \"struct\": {\"first\": 1, \"second\": \"2\"},"
                    " \"array\": [], \"dictionary\": {}, \"stringset\": {}, \"nullable_array_struct\": [{\"first\": 1, \"second\": \"x\"}],"
                    " \"interface\": {\"foo\": [{\"a\": \"qux\"}], \"anon\": {\"foo\": true, \"bar\": false}}}}",
                    "mytype");
        check_cert(i, "Test11", "{\"last_more_replies\": [\"a\", \"b\"]}", NULL);
        check_output(i, "End", "{\"all_ok\": true}", NULL);
        check_error(i, "CertificationError", "{\"wants\": {\"a\": 1}, \"got\": [1]}", NULL);
        check_error(i, "CertificationError", "{\"wants\": {\"a\": 1}}", "got");
        varlink_interface_free(i);
}

/* Blanks and comments between any tokens, CRLF line ends, names at the edges of their rules. */
static void test_parse_layout(void **state) {
        VarlinkInterface *i;

        i = parse_ok("# leading comment\n"
                     "\n"
                     "interface   org.example-1.x2# comment right after the name\n"
                     "# before a declaration\n"
                     "method\tF  (  # after '('\n"
                     "   a  :  int  ,  # after ','\n"
                     "   b_c2:[string]?[]Name ,\n"
                     "   type: int, method: string, interface: string, error: bool, A1: float\n"
                     " )  # between the structs\n"
                     "  ->  (  )\n"
                     "type Name ( x , y\n"
                     " # inside an enum\n"
                     " , z )\n"
                     "   error E()   \n"
                     "method G()->()");
        assert_string_equal(varlink_interface_name(i), "org.example-1.x2");
        assert_int_equal(varlink_interface_n_methods(i), 2);
        assert_string_equal(varlink_interface_method_name(i, 1), "G");
        assert_true(varlink_interface_has_error(i, "E"));
        check_input(i, "F", "{\"a\": 1, \"b_c2\": {\"k\": [\"x\", \"z\"], \"l\": null}, \"type\": 1, \"method\": \"m\","
                            " \"interface\": \"i\", \"error\": false, \"A1\": 1}", NULL);
        check_input(i, "F", "{\"a\": 1, \"b_c2\": {\"k\": [\"w\"]}, \"type\": 1, \"method\": \"m\","
                            " \"interface\": \"i\", \"error\": false, \"A1\": 1}", "b_c2");
        varlink_interface_free(i);

        i = parse_ok("interface a.b\r\n# c\r\nmethod F(\r\n  a: int\r\n) -> ()\r\n");
        assert_true(varlink_interface_has_method(i, "F"));
        varlink_interface_free(i);

        /* Old Mac line ends count too. */
        i = parse_ok("interface a.b\rmethod F() -> ()\r");
        varlink_interface_free(i);

        /* A comment may end the text without a newline. */
        i = parse_ok("interface a.b\nerror E ()\n# the end");
        varlink_interface_free(i);
}

static void test_parse_arguments(void **state) {
        VarlinkInterface *i = (VarlinkInterface *) 0x1;
        char error[16] = "x";

        assert_int_equal(varlink_interface_parse(NULL, &i, error, sizeof(error)), -EINVAL);
        assert_ptr_equal(i, (VarlinkInterface *) 0x1);
        assert_int_equal(varlink_interface_parse("interface a.b\nerror E ()\n", NULL, NULL, 0), -EINVAL);

        /* The message is wanted but the buffer is small: cut, and still a string. */
        assert_int_equal(varlink_interface_parse("interface a.b\nerror e ()\n", &i, error, sizeof(error)), -EBADMSG);
        assert_ptr_equal(i, (VarlinkInterface *) 0x1);
        assert_int_equal(strlen(error), sizeof(error) - 1);
        assert_memory_equal(error, "2:7: invalid e", 14);

        /* Or not wanted at all. */
        assert_int_equal(varlink_interface_parse("garbage", &i, NULL, 0), -EBADMSG);
        assert_int_equal(varlink_interface_parse("garbage", &i, error, 0), -EBADMSG);

        assert_null(varlink_interface_free(NULL));
        assert_null(varlink_interface_name(NULL));
        assert_int_equal(varlink_interface_n_methods(NULL), 0);
        assert_null(varlink_interface_method_name(NULL, 0));
        assert_false(varlink_interface_has_method(NULL, "F"));
        assert_false(varlink_interface_has_error(NULL, "E"));
        assert_int_equal(varlink_interface_validate_input(NULL, "F", NULL, NULL), -ENOENT);
}

/* ---- malformed interfaces ---- */

static void test_parse_errors(void **state) {
        char deep[256];

        /* The dozen the module must reject, then more. */
        check_parse_error("interface a.b\nmethod F(a: int,) -> ()\n", "2:17:", "trailing commas are not allowed");
        check_parse_error("interface a.b\ntype E (a, b,)\n", "2:14:", "expected enum value after ','");
        check_parse_error("interface a.b\nmethod F() ()\n", "2:12:", "expected '->' after method parameters, found '('");
        check_parse_error("interface a.b\nmethod F(a: Foo) -> ()\n", "2:13:", "unknown type 'Foo'");
        check_parse_error("interface a.b\nmethod F() -> ()\nmethod F(a: int) -> ()\n", "3:8:",
                          "duplicate name 'F' (already declared at 2:8)");
        check_parse_error("interface a.b\nmethod F(a__b: int) -> ()\n", "2:10:", "invalid field name 'a__b'");
        check_parse_error("interface a.b\nmethod F(a: int,\n  b: string\n", "4:1:",
                          "expected ',' or ')' after field 'b', found end of input");
        check_parse_error("interface a.b\nmethod F(a: ??int) -> ()\n", "2:14:", "'?' cannot be applied to an optional type");
        /* "()" is the empty struct (error PermissionDenied () above), so an enum without values
         * can only be written as "(,)". */
        check_parse_error("interface a.b\ntype E (,)\n", "2:9:", "expected field name, found ','");
        check_parse_error("method F() -> ()\n", "1:1:", "expected 'interface' declaration, found 'method'");
        check_parse_error("interface a.b\ninterface a.c\nmethod F() -> ()\n", "2:1:", "only one 'interface' declaration is allowed");
        check_parse_error("interface a.b\nmethod F() -> ()\n}\n", "3:1:", "expected 'type', 'method' or 'error', found '}'");
        check_parse_error("interface a.b\ntype foo (a: int)\n", "2:6:", "invalid type name 'foo'");

        /* Interface line. */
        check_parse_error("", "1:1:", "expected 'interface' declaration, found end of input");
        check_parse_error("# only a comment\n", "2:1:", "expected 'interface' declaration");
        check_parse_error("interface a.b\n", "2:1:", "expected 'type', 'method' or 'error' declaration, found end of input");
        check_parse_error("interface\n", "2:1:", "expected interface name, found end of input");
        check_parse_error("interface(a.b)\n", "1:10:", "expected whitespace after 'interface', found '('");
        check_parse_error("interface io\nerror E ()\n", "1:11:", "invalid interface name 'io'");
        /* Uppercase letters, as systemd names its interfaces (io.systemd.Metrics). */
        varlink_interface_free(parse_ok("interface io.systemd.Metrics\nerror NoSuchMetric ()\n"));
        check_parse_error("interface io.Trap_stat\nerror E ()\n", "1:11:", "invalid interface name 'io.Trap_stat'");
        check_parse_error("interface 1o.x\nerror E ()\n", "1:11:", "invalid interface name");
        check_parse_error("interface io..x\nerror E ()\n", "1:11:", "invalid interface name");
        check_parse_error("interface io.x-\nerror E ()\n", "1:11:", "invalid interface name");
        check_parse_error("interface io.-x\nerror E ()\n", "1:11:", "invalid interface name");
        check_parse_error("interface io_x.y\nerror E ()\n", "1:11:", "invalid interface name");
        check_parse_error("interface a.b method F() -> ()\n", "1:15:", "expected end of line after declaration, found 'method'");

        /* Declarations. */
        check_parse_error("interface a.b\nmethod A() -> () method B() -> ()\n", "2:18:", "expected end of line after declaration");
        check_parse_error("interface a.b\nmethod f() -> ()\n", "2:8:", "invalid method name 'f'");
        check_parse_error("interface a.b\nerror Not_found ()\n", "2:7:", "invalid error name 'Not_found'");
        check_parse_error("interface a.b\ntypeFoo (a: int)\n", "2:1:", "found 'typeFoo'");
        check_parse_error("interface a.b\nmethod(a: int) -> ()\n", "2:7:", "expected whitespace after 'method'");
        check_parse_error("interface a.b\nmethod F\n", "3:1:", "expected '(' after method name, found end of input");
        check_parse_error("interface a.b\nmethod F() -> \n", "3:1:", "expected '(' after '->'");
        check_parse_error("interface a.b\nmethod F() - > ()\n", "2:12:", "expected '->'");
        check_parse_error("interface a.b\nerror E\n", "3:1:", "expected '(' after error name");
        check_parse_error("interface a.b\ntype T int\n", "2:8:", "expected '(' after type name, found 'int'");
        check_parse_error("interface a.b\nmethod F(a, b) -> ()\n", "2:11:", "expected ':' after field name 'a', found ','");
        check_parse_error("interface a.b\nerror E (a)\n", "2:11:", "expected ':' after field name 'a'");
        check_parse_error("interface a.b\ntype T (a: int)\nerror T ()\n", "3:7:", "duplicate name 'T'");
        check_parse_error("interface a.b\nmethod F() -> ()\nerror E (a: F)\n", "3:13:", "'F' is a method, not a type");
        check_parse_error("interface a.b\nerror E ()\nerror X (a: E)\n", "3:13:", "'E' is an error, not a type");

        /* Structs, enums and types. */
        check_parse_error("interface a.b\nmethod F(a: int b: int) -> ()\n", "2:17:", "expected ',' or ')' after field 'a', found 'b'");
        check_parse_error("interface a.b\nmethod F(a int) -> ()\n", "2:12:", "expected ':' after field name 'a', found 'int'");
        check_parse_error("interface a.b\nmethod F(a: int, a: string) -> ()\n", "2:18:", "duplicate field 'a'");
        check_parse_error("interface a.b\ntype E (a, b, a)\n", "2:15:", "duplicate enum value 'a'");
        check_parse_error("interface a.b\ntype E (a, b: int)\n", "2:13:", "expected ',' or ')' after enum value 'b', found ':'");
        check_parse_error("interface a.b\nmethod F(_a: int) -> ()\n", "2:10:", "invalid field name '_a'");
        check_parse_error("interface a.b\nmethod F(a_: int) -> ()\n", "2:10:", "invalid field name 'a_'");
        check_parse_error("interface a.b\nmethod F(1a: int) -> ()\n", "2:10:", "invalid field name '1a'");
        check_parse_error("interface a.b\nmethod F(a: integer) -> ()\n", "2:13:", "unknown type 'integer'");
        check_parse_error("interface a.b\nmethod F(a: ) -> ()\n", "2:13:", "expected type, found ')'");
        check_parse_error("interface a.b\nmethod F(a: ? int) -> ()\n", "2:14:", "expected type, found whitespace");
        check_parse_error("interface a.b\nmethod F(a: [int]string) -> ()\n", "2:13:", "expected '[]' or '[string]'");
        check_parse_error("interface a.b\nmethod F(a: [] int) -> ()\n", "2:15:", "expected type, found whitespace");
        check_parse_error("interface a.b\nmethod F(a: (b: (c: int)) -> ()\n", "2:27:", "expected ',' or ')' after field 'a', found '-'");
        check_parse_error("interface a.b\nmethod F(a: $) -> ()\n", "2:13:", "expected type, found '$'");
        check_parse_error("interface a.b\nmethod F(a: int) -> ()\n\xc3\xa9\n", "3:1:", "found byte 0xc3");
        check_parse_error("interface a.b\r\n# c\r\nmethod F(a int) -> ()\r\n", "3:12:", "expected ':'");
        check_parse_error("interface a.b\n# \xc3\xa9\xc3\xa9\nmethod F(\xc3\xa9: int) -> ()\n", "3:10:", "expected field name, found byte 0xc3");
        check_parse_error("interface a.b\nmethod F(a: int) -> (b: \xc3\xa9\xc3\xa9, c: $)\n", "2:25:", "found byte 0xc3");

        /* Nesting is bounded. */
        strcpy(deep, "interface a.b\nerror E (a: ");
        for (unsigned k = 0; k < 70; k++)
                strcat(deep, "[]");
        strcat(deep, "int)\n");
        check_parse_error(deep, "2:141:", "type nested more than 64 levels deep");
}

/* ---- validation ---- */

static void test_validate_trapstat_input(void **state) {
        _cleanup_free_ char *text = read_file(trapstat_idl_path);
        VarlinkInterface *i = parse_ok(text);
        _cleanup_json_ json_t *array = json("[]");
        const char *field = "untouched";

        check_input(i, "Top", "{}", NULL);
        check_input(i, "Top", "{\"windowSec\": 60, \"sortBy\": \"user\", \"limit\": 10}", NULL);
        check_input(i, "Top", "{\"windowSec\": \"x\"}", "windowSec");
        check_input(i, "Top", "{\"windowSec\": 1.5}", "windowSec");
        check_input(i, "Top", "{\"windowSec\": 60.0}", "windowSec"); /* a real, not an integer */
        check_input(i, "Top", "{\"limit\": 5, \"bogus\": 1}", "bogus");
        check_input(i, "Top", "{\"bogus\": 1, \"limit\": \"5\"}", "limit"); /* declared fields first */
        check_input(i, "Top", "{\"sortBy\": null}", NULL);
        check_input(i, "Top", "{\"sortBy\": null, \"windowSec\": null, \"limit\": null}", NULL);
        check_input(i, "Top", "{\"sortBy\": 1}", "sortBy");
        check_input(i, "io.trapstat.Top", "{\"sortBy\": 1}", "sortBy");
        /* The filters: types are the IDL's to check, bounds the handler's. */
        check_input(i, "Top", "{\"pids\": [1, 2], \"uid\": 0, \"unit\": \"a*.service\", \"comm\": \"x\"}", NULL);
        check_input(i, "Top", "{\"pids\": [], \"uid\": null}", NULL);
        check_input(i, "Top", "{\"pids\": [\"1\"]}", "pids");
        check_input(i, "Top", "{\"pids\": 1}", "pids");
        check_input(i, "Top", "{\"pids\": [1, null]}", "pids");
        check_input(i, "Top", "{\"unit\": 1}", "unit");
        check_input(i, "Top", "{\"comm\": [\"x\"]}", "comm");
        check_input(i, "Watch", "{\"pid\": 1, \"pids\": [1], \"uid\": 5, \"unit\": \"x\", \"comm\": \"y\"}", NULL);
        check_input(i, "Watch", "{\"uid\": \"0\"}", "uid");

        check_input(i, "UnitHistory", "{}", "unit");
        check_input(i, "UnitHistory", "{\"unit\": null}", "unit");
        check_input(i, "UnitHistory", "{\"unit\": 5}", "unit");
        check_input(i, "UnitHistory", "{\"unit\": \"a.service\"}", NULL);
        check_input(i, "UnitHistory", "{\"unit\": \"a*\", \"sinceUsec\": 1, \"untilUsec\": 2, \"resolutionSec\": 60}", NULL);
        check_input(i, "UnitHistory", "{\"unit\": \"a\", \"pid\": 1}", "pid");

        check_input(i, "UnitTotals", "{}", NULL);
        check_input(i, "UnitTotals", "{\"limit\": null}", NULL);
        check_input(i, "UnitTotals", "{\"limit\": 5}", NULL);
        check_input(i, "UnitTotals", "{\"limit\": \"5\"}", "limit");
        check_input(i, "UnitTotals", "{\"unit\": \"a.service\"}", "unit");

        check_input(i, "History", "{}", "pid");
        check_input(i, "History", "{\"startTime\": 5}", "pid");
        check_input(i, "History", "{\"pid\": null}", "pid");
        check_input(i, "History", "{\"pid\": \"42\"}", "pid");
        check_input(i, "History", "{\"pid\": true}", "pid");
        check_input(i, "History", "{\"pid\": 42}", NULL);
        check_input(i, "History", "{\"pid\": 42, \"startTime\": null, \"sinceUsec\": 1, \"untilUsec\": 2, \"resolutionSec\": 60}", NULL);
        check_input(i, "History", "{\"pid\": 42, \"resolutionSec\": [60]}", "resolutionSec");

        check_input(i, "Sites", "{\"pid\": 42}", NULL);
        check_input(i, "Sites", "{\"pid\": 42, \"kind\": \"trap\", \"limit\": 3, \"sinceUsec\": 1, \"untilUsec\": 2}", NULL);
        check_input(i, "Sites", "{\"pid\": 42, \"kind\": \"fault\"}", NULL);
        check_input(i, "Sites", "{\"pid\": 42, \"kind\": \"traps\"}", "kind");
        check_input(i, "Sites", "{\"kind\": \"trap\"}", "pid");

        check_input(i, "ListProcesses", "{\"includeExited\": true}", NULL);
        check_input(i, "ListProcesses", "{\"includeExited\": 1}", "includeExited");
        check_input(i, "GetStatus", "{}", NULL);
        check_input(i, "GetStatus", "{\"verbose\": true}", "verbose");

        /* NULL parameters are {}. */
        assert_int_equal(varlink_interface_validate_input(i, "Top", NULL, &field), 0);
        assert_string_equal(field, "untouched");
        assert_int_equal(varlink_interface_validate_input(i, "History", NULL, &field), -EINVAL);
        assert_string_equal(field, "pid");
        assert_int_equal(varlink_interface_validate_input(i, "History", NULL, NULL), -EINVAL);

        /* Parameters that are no object name no field. */
        assert_int_equal(varlink_interface_validate_input(i, "Top", array, &field), -EINVAL);
        assert_null(field);

        field = "untouched";
        assert_int_equal(varlink_interface_validate_input(i, "Nope", array, &field), -ENOENT);
        assert_int_equal(varlink_interface_validate_input(i, "org.varlink.service.Top", NULL, &field), -ENOENT);
        assert_int_equal(varlink_interface_validate_input(i, "Process", NULL, &field), -ENOENT); /* a type */
        assert_int_equal(varlink_interface_validate_input(i, "NoSuchProcess", NULL, &field), -ENOENT);
        assert_int_equal(varlink_interface_validate_input(i, NULL, NULL, &field), -ENOENT);
        assert_int_equal(varlink_interface_validate_output(i, "Nope", NULL, &field), -ENOENT);
        assert_int_equal(varlink_interface_validate_error(i, "Top", NULL, &field), -ENOENT);
        assert_string_equal(field, "untouched");
        varlink_interface_free(i);
}

/* An empty FaultTime member of Counters, as text. */
#define FAULT_TIME_ZERO                                                                                            \
        "\"faultTime\": {\"minorNs\": 0, \"majorNs\": 0, \"kernelNs\": 0, \"maxNs\": 0, \"histogram\": "          \
        "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0], \"majorNsByCause\": {\"file\": 0, \"anon\": 0, \"shmem\": 0}},"

static json_t *counters_new(json_int_t user) {
        json_t *c = json_pack("{s:{s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:{s:i,s:i,s:i}}, "
                              "s:{s:i,s:i,s:i,s:i,s:[iiiiiiiiiiiiiiiiiiiiiiii],s:{s:i,s:i,s:i}}, s:{s:i}, s:{s:i}, s:{s:i}}",
                              "faults", "user", user, "kernel", 2, "minor", 3, "major", 2, "read", 1, "write", 1,
                              "exec", 0, "protection", 0, "majorByCause", "file", 1, "anon", 1, "shmem", 0,
                              "faultTime", "minorNs", 4000, "majorNs", 0, "kernelNs", 900, "maxNs", 2100, "histogram",
                              1, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "majorNsByCause",
                              "file", 300, "anon", 0, "shmem", 0,
                              "traps", "UD", 1,
                              "signals", "SIGILL", 1,
                              "signalCodes", "SIGILL/ILL_ILLOPN", 1);
        assert_non_null(c);
        return c;
}

static void test_validate_trapstat_output(void **state) {
        _cleanup_free_ char *text = read_file(trapstat_idl_path);
        VarlinkInterface *i = parse_ok(text);
        _cleanup_json_ json_t *reply = NULL;
        json_t *process, *samples, *sample, *total;
        const char *field = NULL;

        process = json_pack("{s:i, s:I, s:s, s:n, s:i, s:s, s:I, s:I, s:b}",
                            "pid", 4242, "startTime", (json_int_t) 987654000000, "comm", "worker", "cmdline",
                            "uid", 1000, "unit", "payload.scope", "firstSeenUsec", (json_int_t) 1700000000000000,
                            "lastSeenUsec", (json_int_t) 1700000060000000, "exited", false);
        assert_non_null(process);
        total = counters_new(30);
        samples = json_array();
        assert_non_null(samples);
        for (unsigned k = 0; k < 3; k++) {
                sample = json_pack("{s:I, s:o}", "timeUsec", (json_int_t) (1700000000000000 + k * 10000000),
                                   "counters", counters_new(10));
                assert_non_null(sample);
                assert_int_equal(json_array_append_new(samples, sample), 0);
        }
        reply = json_pack("{s:o, s:o, s:o}", "process", process, "total", total, "samples", samples);
        assert_non_null(reply);

        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), 0);
        assert_null(field);
        assert_int_equal(varlink_interface_validate_output(i, "io.trapstat.History", reply, &field), 0);
        /* A reply is no call. */
        assert_int_equal(varlink_interface_validate_input(i, "History", reply, &field), -EINVAL);
        assert_string_equal(field, "pid");

        /* Optional members may also be absent. */
        assert_int_equal(json_object_del(process, "cmdline"), 0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), 0);

        /* Each flaw is reported by the top-level member it hides in. */
        assert_int_equal(json_object_set_new(process, "exited", json_integer(0)), 0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), -EINVAL);
        assert_string_equal(field, "process");
        assert_int_equal(json_object_set_new(process, "exited", json_true()), 0);
        assert_int_equal(json_object_set_new(process, "extra", json_true()), 0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), -EINVAL);
        assert_string_equal(field, "process");
        assert_int_equal(json_object_del(process, "extra"), 0);
        assert_int_equal(json_object_del(process, "comm"), 0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), -EINVAL);
        assert_string_equal(field, "process");
        assert_int_equal(json_object_set_new(process, "comm", json_string("worker")), 0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), 0);

        /* A map value of the wrong type. */
        assert_int_equal(json_object_set_new(json_object_get(total, "traps"), "GP", json_string("1")), 0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), -EINVAL);
        assert_string_equal(field, "total");
        assert_int_equal(json_object_set_new(json_object_get(total, "traps"), "GP", json_integer(1)), 0);

        /* Deep inside an array element. */
        sample = json_array_get(samples, 2);
        assert_int_equal(json_object_set_new(json_object_get(json_object_get(sample, "counters"), "faults"),
                                             "major", json_real(1.0)),
                         0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), -EINVAL);
        assert_string_equal(field, "samples");
        assert_int_equal(json_array_remove(samples, 2), 0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), 0);
        assert_int_equal(json_array_append_new(samples, json_null()), 0); /* elements are not optional */
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), -EINVAL);
        assert_string_equal(field, "samples");
        assert_int_equal(json_object_set_new(reply, "samples", json_object()), 0); /* not an array */
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), -EINVAL);
        assert_string_equal(field, "samples");
        assert_int_equal(json_object_set_new(reply, "samples", json_array()), 0);
        assert_int_equal(varlink_interface_validate_output(i, "History", reply, &field), 0);

        check_output(i, "GetStatus",
                     "{\"version\": \"0.1.0\", \"arch\": \"x86_64\", \"kernel\": \"5.10.0-32-amd64\","
                     " \"bpfObject\": \"base\", \"features\": [{\"name\": \"trap_sites\", \"active\": false,"
                     " \"reason\": \"needs get_current_task_btf (Linux 5.11): no trap sites\"}],"
                     " \"capabilities\": [{\"name\": \"bpf_loop\", \"present\": false, \"since\": \"5.17\"}],"
                     " \"sources\": [{\"name\": \"page_fault_user\", \"active\": true, \"reason\": null},"
                     " {\"name\": \"signal_generate\", \"active\": false, \"reason\": \"no BTF\"}],"
                     " \"tickUsec\": 1000000, \"databasePath\": \"/var/lib/trapstat/db\", \"databaseBytes\": 4096,"
                     " \"processesTracked\": 3, \"drops\": 2, \"unsavedSamples\": 0, \"faultSamplePeriod\": 64,"
                     " \"dropsByKind\": [{\"kind\": \"fault_map_full\", \"count\": 2, \"lost\": \"one page fault\"}],"
                     " \"dropsByUser\": [{\"uid\": 1000, \"drops\": 2, \"dropsByKind\": [{\"kind\": \"fault_map_full\","
                     " \"count\": 2, \"lost\": \"one page fault\"}]}]}",
                     NULL);
        /* Every drop kind says what it lost. */
        check_output(i, "GetStatus",
                     "{\"version\": \"0.1.0\", \"arch\": \"x86_64\", \"sources\": [],"
                     " \"tickUsec\": 1000000, \"databasePath\": \"/var/lib/trapstat/db\", \"databaseBytes\": 4096,"
                     " \"processesTracked\": 3, \"drops\": 2, \"unsavedSamples\": 0, \"faultSamplePeriod\": 64,"
                     " \"dropsByKind\": [{\"kind\": \"fault_map_full\", \"count\": 2}], \"dropsByUser\": []}",
                     "dropsByKind");
        check_output(i, "GetStatus",
                     "{\"version\": \"0.1.0\", \"arch\": \"x86_64\", \"sources\": [{\"name\": \"page_fault_user\"}],"
                     " \"tickUsec\": 1000000, \"databasePath\": \"/var/lib/trapstat/db\", \"databaseBytes\": 4096,"
                     " \"processesTracked\": 3, \"drops\": 0, \"unsavedSamples\": 0, \"faultSamplePeriod\": 64, \"dropsByKind\": [], \"dropsByUser\": []}",
                     "sources");
        /* Every reply says the architecture. */
        check_output(i, "GetStatus",
                     "{\"version\": \"0.1.0\", \"sources\": [],"
                     " \"tickUsec\": 1000000, \"databasePath\": \"/var/lib/trapstat/db\", \"databaseBytes\": 4096,"
                     " \"processesTracked\": 3, \"drops\": 0, \"unsavedSamples\": 0, \"faultSamplePeriod\": 64, \"dropsByKind\": [], \"dropsByUser\": []}",
                     "arch");
        /* GetStatus says how faults are sampled. */
        check_output(i, "GetStatus",
                     "{\"version\": \"0.1.0\", \"arch\": \"x86_64\", \"sources\": [],"
                     " \"tickUsec\": 1000000, \"databasePath\": \"/var/lib/trapstat/db\", \"databaseBytes\": 4096,"
                     " \"processesTracked\": 3, \"drops\": 0, \"unsavedSamples\": 0, \"dropsByKind\": [], \"dropsByUser\": []}",
                     "faultSamplePeriod");
        /* Every user's drops say whose they are. */
        check_output(i, "GetStatus",
                     "{\"version\": \"0.1.0\", \"arch\": \"x86_64\", \"sources\": [],"
                     " \"tickUsec\": 1000000, \"databasePath\": \"/var/lib/trapstat/db\", \"databaseBytes\": 4096,"
                     " \"processesTracked\": 3, \"drops\": 0, \"unsavedSamples\": 0, \"faultSamplePeriod\": 64,"
                     " \"dropsByKind\": [], \"dropsByUser\": [{\"drops\": 0, \"dropsByKind\": []}]}",
                     "dropsByUser");
        check_output(i, "Top", "{\"rows\": []}", NULL);
        check_output(i, "Top", "{}", "rows");
        check_output(i, "ListProcesses", "{\"processes\": [{\"pid\": 1}]}", "processes");
        /* What a limit left out: optional (older daemons), an int when there. */
        check_output(i, "ListProcesses", "{\"processes\": [], \"otherProcesses\": 432}", NULL);
        check_output(i, "ListProcesses", "{\"processes\": []}", NULL);
        check_output(i, "ListProcesses", "{\"processes\": [], \"otherProcesses\": true}", "otherProcesses");
        check_output(i, "Top", "{\"rows\": [], \"otherProcesses\": 0}", NULL);
        /* Watch always says which processes exited, also when none did. */
        check_output(i, "Watch",
                     "{\"timeUsec\": 1, \"intervalUsec\": 1, \"total\": {\"faults\": {\"user\": 0, \"kernel\": 0,"
                     " \"minor\": 0, \"major\": 0, \"read\": 0, \"write\": 0, \"exec\": 0, \"protection\": 0}, " FAULT_TIME_ZERO
                     " \"traps\": {}, \"signals\": {}, \"signalCodes\": {}}, \"processes\": 0, \"rows\": [],"
                     " \"missedTicks\": 0, \"exited\": [{\"pid\": 5, \"startTime\": 7}]}",
                     NULL);
        check_output(i, "Watch",
                     "{\"timeUsec\": 1, \"intervalUsec\": 1, \"total\": {\"faults\": {\"user\": 0, \"kernel\": 0,"
                     " \"minor\": 0, \"major\": 0, \"read\": 0, \"write\": 0, \"exec\": 0, \"protection\": 0}, " FAULT_TIME_ZERO
                     " \"traps\": {}, \"signals\": {}, \"signalCodes\": {}}, \"processes\": 0, \"rows\": [],"
                     " \"missedTicks\": 0}",
                     "exited");
        check_output(i, "UnitHistory",
                     "{\"units\": [\"a.service\"], \"processes\": 2, \"running\": 1, \"samples\": [],"
                     " \"total\": {\"faults\": {\"user\": 0, \"kernel\": 0, \"minor\": 0, \"major\": 0, \"read\": 0,"
                     " \"write\": 0, \"exec\": 0, \"protection\": 0}, " FAULT_TIME_ZERO " \"traps\": {\"UD\": 300}, \"signals\": {},"
                     " \"signalCodes\": {}}}",
                     NULL);
        check_output(i, "UnitHistory", "{\"units\": [], \"processes\": 2, \"samples\": []}", "running");

        /* unit may be null (processes in no unit). */
        check_output(i, "UnitTotals",
                     "{\"sinceUsec\": 1, \"otherUnits\": 0, \"units\": [{\"unit\": null, \"processes\": 1,"
                     " \"counters\": {\"faults\": {\"user\": 1, \"kernel\": 0, \"minor\": 0, \"major\": 0, \"read\": 0,"
                     " \"write\": 0, \"exec\": 0, \"protection\": 0}, " FAULT_TIME_ZERO " \"traps\": {}, \"signals\": {},"
                     " \"signalCodes\": {}}}],"
                     " \"total\": {\"faults\": {\"user\": 1, \"kernel\": 0, \"minor\": 0, \"major\": 0, \"read\": 0,"
                     " \"write\": 0, \"exec\": 0, \"protection\": 0}, " FAULT_TIME_ZERO " \"traps\": {}, \"signals\": {},"
                     " \"signalCodes\": {}}}",
                     NULL);
        /* A row without processes is named by the member holding it. */
        check_output(i, "UnitTotals", "{\"sinceUsec\": 1, \"otherUnits\": 0, \"units\": [{\"unit\": \"a\"}]}",
                     "units");
        check_output(i, "UnitTotals", "{\"sinceUsec\": 1, \"otherUnits\": 0, \"units\": []}", "total");

        check_error(i, "NoSuchProcess", "{\"pid\": 5}", NULL);
        check_error(i, "io.trapstat.NoSuchProcess", "{\"pid\": 5}", NULL);
        check_error(i, "NoSuchProcess", "{}", "pid");
        check_error(i, "NoSuchProcess", "{\"pid\": 5, \"startTime\": 1}", "startTime");
        check_error(i, "DatabaseError", "{\"message\": 1}", "message");
        check_error(i, "DatabaseError", "{\"message\": \"disk full\"}", NULL);
        check_error(i, "NoSuchUnit", "{\"unit\": \"a*.service\"}", NULL);
        check_error(i, "NoSuchUnit", "{\"pid\": 5}", "unit");
        check_error(i, "NoSuchUnit", "{\"unit\": \"x\", \"pid\": 5}", "pid");
        varlink_interface_free(i);
}

/* A Sites reply made of site_count_to_json() (common/sites.c) is what the IDL declares, for each
 * kind of site and memory: the JSON of a site and the IDL's type Site cannot drift apart. */
static void test_validate_sites_output(void **state) {
        _cleanup_free_ char *text = read_file(trapstat_idl_path);
        VarlinkInterface *i = parse_ok(text);
        _cleanup_json_ json_t *reply = NULL;
        json_t *sites = json_array(), *site;
        const char *field = NULL;

        assert_non_null(sites);
        for (unsigned m = 0; m < _MEMORY_KIND_MAX; m++)
                for (unsigned k = 0; k < _SITE_KIND_MAX; k++) {
                        SiteCount s = { .kind = (SiteKind) k,
                                        .vector = site_kind_is_fault((SiteKind) k) ? SITE_FAULT_VECTOR : m,
                                        .period = k == SITE_FAULT ? 64 : 1,
                                        .object = (char *) "/usr/bin/app",
                                        .offset = 0x1000 + m,
                                        .symbol = m % 2 ? (char *) "main" : NULL,
                                        .symbol_offset = 4,
                                        .memory = (MemoryKind) m,
                                        .memory_object = m == MEMORY_FILE ? (char *) "/data" : NULL,
                                        .count = 3 };

                        site = site_count_to_json(&s);
                        assert_non_null(site);
                        assert_int_equal(json_array_append_new(sites, site), 0);
                }
        reply = json_pack("{s:{s:i, s:I, s:s, s:n, s:i, s:n, s:I, s:I, s:b}, s:o}", "process", "pid", 4242,
                          "startTime", (json_int_t) 987654000000, "comm", "worker", "cmdline", "uid", 1000, "unit",
                          "firstSeenUsec", (json_int_t) 1700000000000000, "lastSeenUsec",
                          (json_int_t) 1700000060000000, "exited", true, "sites", sites);
        assert_non_null(reply);
        assert_int_equal(varlink_interface_validate_output(i, "Sites", reply, &field), 0);
        assert_null(field);

        /* And the validator does look into the sites. */
        assert_int_equal(json_object_set_new(json_array_get(sites, 1), "kind", json_string("both")), 0);
        assert_int_equal(varlink_interface_validate_output(i, "Sites", reply, &field), -EINVAL);
        assert_string_equal(field, "sites");
        varlink_interface_free(i);
}

/* Every type rule on its own, through optional fields of one method. */
static void test_validate_types(void **state) {
        VarlinkInterface *i = parse_ok(types_idl);

        check_input(i, "Check", "{}", NULL);

        check_input(i, "Check", "{\"b\": true}", NULL);
        check_input(i, "Check", "{\"b\": false}", NULL);
        check_input(i, "Check", "{\"b\": 1}", "b");
        check_input(i, "Check", "{\"b\": \"true\"}", "b");

        check_input(i, "Check", "{\"i\": -9223372036854775807}", NULL);
        check_input(i, "Check", "{\"i\": 1.0}", "i");
        check_input(i, "Check", "{\"i\": 1e3}", "i");
        check_input(i, "Check", "{\"i\": \"1\"}", "i");
        check_input(i, "Check", "{\"i\": true}", "i");

        check_input(i, "Check", "{\"f\": 1}", NULL);
        check_input(i, "Check", "{\"f\": -1.5e-3}", NULL);
        check_input(i, "Check", "{\"f\": \"1.5\"}", "f");
        check_input(i, "Check", "{\"f\": false}", "f");

        check_input(i, "Check", "{\"s\": \"\"}", NULL);
        check_input(i, "Check", "{\"s\": 0}", "s");
        check_input(i, "Check", "{\"s\": [\"x\"]}", "s");

        check_input(i, "Check", "{\"o\": {\"any\": [1, \"thing\"]}}", NULL);
        check_input(i, "Check", "{\"o\": [1]}", NULL);
        check_input(i, "Check", "{\"o\": 1}", NULL);
        check_input(i, "Check", "{\"o\": \"x\"}", NULL);
        check_input(i, "Required", "{\"o\": null, \"c\": \"red\"}", NULL);
        check_input(i, "Required", "{\"o\": false, \"c\": \"blue\"}", NULL);
        check_input(i, "Required", "{\"c\": \"red\"}", "o");
        check_input(i, "Required", "{\"o\": {}}", "c");
        check_input(i, "Required", "{\"o\": {}, \"c\": null}", "c");

        check_input(i, "Check", "{\"e\": \"green\"}", NULL);
        check_input(i, "Check", "{\"e\": \"pink\"}", "e");
        check_input(i, "Check", "{\"e\": \"Green\"}", "e");
        check_input(i, "Check", "{\"e\": \"\"}", "e");
        check_input(i, "Check", "{\"e\": 0}", "e");
        check_input(i, "Check", "{\"e\": \"red\\u0000x\"}", "e"); /* a prefix of the value is no match */
        check_input(i, "Check", "{\"ie\": \"two\"}", NULL);
        check_input(i, "Check", "{\"ie\": \"three\"}", "ie");
        check_input(i, "Check", "{\"ie\": {}}", "ie");

        check_input(i, "Check", "{\"a\": []}", NULL);
        check_input(i, "Check", "{\"a\": [1, 2, 3]}", NULL);
        check_input(i, "Check", "{\"a\": [1, \"2\"]}", "a");
        check_input(i, "Check", "{\"a\": [1, null]}", "a");
        check_input(i, "Check", "{\"a\": {}}", "a");
        check_input(i, "Check", "{\"a\": 1}", "a");
        check_input(i, "Check", "{\"oa\": [1, null, 3]}", NULL);
        check_input(i, "Check", "{\"oa\": [1, null, 3.5]}", "oa");

        check_input(i, "Check", "{\"m\": {}}", NULL);
        check_input(i, "Check", "{\"m\": {\"a\": 1, \"b\": 2.5}}", NULL);
        check_input(i, "Check", "{\"m\": {\"a\": 1, \"b\": null}}", "m");
        check_input(i, "Check", "{\"m\": {\"a\": \"1\"}}", "m");
        check_input(i, "Check", "{\"m\": [1]}", "m");

        check_input(i, "Check", "{\"am\": [{}, {\"x\": [\"red\", \"blue\"], \"y\": []}]}", NULL);
        check_input(i, "Check", "{\"am\": [{}, {\"x\": [\"red\", \"black\"]}]}", "am");
        check_input(i, "Check", "{\"am\": [{\"x\": \"red\"}]}", "am");

        check_input(i, "Check", "{\"st\": {\"x\": 1}}", NULL);
        check_input(i, "Check", "{\"st\": {\"x\": 1, \"y\": null}}", NULL);
        check_input(i, "Check", "{\"st\": {\"x\": 1, \"y\": {\"z\": \"a\"}}}", NULL);
        check_input(i, "Check", "{\"st\": {\"x\": 1, \"y\": {\"z\": 1}}}", "st");
        check_input(i, "Check", "{\"st\": {\"x\": 1, \"y\": {}}}", "st");
        check_input(i, "Check", "{\"st\": {\"x\": 1, \"y\": {\"z\": \"a\", \"w\": 1}}}", "st");
        check_input(i, "Check", "{\"st\": {\"y\": {\"z\": \"a\"}}}", "st");
        check_input(i, "Check", "{\"st\": [1]}", "st");
        check_input(i, "Check", "{\"st\": null}", NULL);

        /* Recursion through a named type. */
        check_input(i, "Check", "{\"n\": {\"value\": 1, \"children\": []}}", NULL);
        check_input(i, "Check",
                    "{\"n\": {\"value\": 1, \"parent\": {\"value\": 0, \"children\": []}, \"children\": ["
                    "{\"value\": 2, \"children\": [{\"value\": 3, \"children\": [], \"parent\": null}]}]}}",
                    NULL);
        check_input(i, "Check",
                    "{\"n\": {\"value\": 1, \"children\": [{\"value\": 2, \"children\": [{\"value\": \"3\", \"children\": []}]}]}}",
                    "n");
        check_input(i, "Check", "{\"n\": {\"value\": 1, \"children\": [{\"value\": 2}]}}", "n");
        check_input(i, "Check", "{\"n\": {\"value\": 1, \"children\": [{\"value\": 2, \"children\": [], \"x\": 0}]}}", "n");
        /* A type with no finite value: every value is refused, and the check ends. */
        check_input(i, "Check", "{\"end\": {\"next\": {\"next\": {}}}}", "end");
        check_input(i, "Check", "{\"end\": null}", NULL);

        check_input(i, "Check", "{\"b\": true, \"i\": 1, \"f\": 1, \"s\": \"\", \"zzz\": 1}", "zzz");
        check_input(i, "Check", "{\"B\": true}", "B"); /* names are case-sensitive */
        varlink_interface_free(i);
}

/* A deep value of a recursive type: validation follows the JSON, which is finite. */
static void test_validate_deep(void **state) {
        VarlinkInterface *i = parse_ok(types_idl);
        _cleanup_json_ json_t *parameters = NULL;
        json_t *node = json_pack("{s:i, s:[]}", "value", 0, "children");
        const char *field = NULL;

        for (unsigned k = 1; k < 1000; k++) {
                node = json_pack("{s:i, s:[o]}", "value", k, "children", node);
                assert_non_null(node);
        }
        parameters = json_pack("{s:o}", "n", node);
        assert_non_null(parameters);
        assert_int_equal(varlink_interface_validate_input(i, "Check", parameters, &field), 0);

        /* Spoil the innermost node. */
        for (json_t *n = node;; n = json_array_get(json_object_get(n, "children"), 0))
                if (json_array_size(json_object_get(n, "children")) == 0) {
                        assert_int_equal(json_object_set_new(n, "value", json_string("x")), 0);
                        break;
                }
        assert_int_equal(varlink_interface_validate_input(i, "Check", parameters, &field), -EINVAL);
        assert_string_equal(field, "n");
        varlink_interface_free(i);
}

/* A key with an embedded NUL is not the field its first part names. */
static void test_validate_nul_key(void **state) {
        VarlinkInterface *i = parse_ok(types_idl);
        _cleanup_json_ json_t *parameters = json_object();
        const char *field = NULL;

        assert_int_equal(json_object_setn_new(parameters, "b\0x", 3, json_integer(5)), 0);
        assert_int_equal(varlink_interface_validate_input(i, "Check", parameters, &field), -EINVAL);
        assert_non_null(field);
        assert_string_equal(field, "b");
        assert_int_equal(json_object_set_new(parameters, "b", json_true()), 0);
        assert_int_equal(varlink_interface_validate_input(i, "Check", parameters, &field), -EINVAL);
        varlink_interface_free(i);
}

/* A string holding "\u0000" is a value of no type, "object" and optional ones included, at any
 * depth: the member holding it is named. It is also the mark varlink_message_read() puts on a
 * member holding a duplicate key. */
static void test_validate_nul_string(void **state) {
        VarlinkInterface *i = parse_ok(types_idl);

        check_input(i, "Check", "{\"s\": \"a\\u0000b\"}", "s");
        check_input(i, "Check", "{\"s\": \"\\u0000\"}", "s");
        check_input(i, "Check", "{\"o\": \"\\u0000\"}", "o");
        check_input(i, "Required", "{\"o\": \"\\u0000\", \"c\": \"red\"}", "o");
        check_input(i, "Check", "{\"i\": \"\\u0000\"}", "i");
        check_input(i, "Check", "{\"st\": {\"x\": 1, \"y\": {\"z\": \"a\\u0000\"}}}", "st");
        check_input(i, "Check", "{\"st\": \"\\u0000\"}", "st");
        check_input(i, "Check", "{\"m\": {\"a\": 1, \"b\": \"\\u0000\"}}", "m");
        check_input(i, "Check", "{\"am\": [{}, {\"x\": [\"red\", \"\\u0000\"]}]}", "am");
        check_input(i, "Check", "{\"s\": \"\\\\u0000\"}", NULL); /* a backslash and "u0000" */
        varlink_interface_free(i);
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_trapstat),
                cmocka_unit_test(test_parse_service),
                cmocka_unit_test(test_parse_certification),
                cmocka_unit_test(test_parse_layout),
                cmocka_unit_test(test_parse_arguments),
                cmocka_unit_test(test_parse_errors),
                cmocka_unit_test(test_validate_trapstat_input),
                cmocka_unit_test(test_validate_trapstat_output),
                cmocka_unit_test(test_validate_sites_output),
                cmocka_unit_test(test_validate_types),
                cmocka_unit_test(test_validate_deep),
                cmocka_unit_test(test_validate_nul_key),
                cmocka_unit_test(test_validate_nul_string),
        };

        if (argc != 2) {
                fprintf(stderr, "usage: test-varlink-idl IO.TRAPSTAT.VARLINK\n");
                return 2;
        }
        trapstat_idl_path = argv[1];
        /* Written with x86's trap names, whatever the machine (common/traps.h). */
        trap_arch = TRAP_ARCH_X86;
        return cmocka_run_group_tests(tests, NULL, NULL);
}

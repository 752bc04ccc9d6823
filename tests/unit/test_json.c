/* The core's JSON reader: valid documents, strings, numbers, and rejection
 * of malformed input. */
#include <string.h>

#include "base/json.h"
#include "check.h"

static int parses(const char *text) {
    sdfed_json j;
    sdfed_error err = {0};
    int rc = sdfed_json_parse(&j, text, strlen(text), &err);
    if (rc == SDFED_OK)
        sdfed_json_free(&j);
    else if (err.message[0] == '\0')
        return -1; /* errors must carry a message */
    return rc == SDFED_OK;
}

static void test_document(void) {
    const char *text = " {\"a\": [1, -2.5e3, {\"x\": null}], \"b\\u00e9\": \"caf\\u00e9 \\ud83d\\ude42\\n\", "
                       "\"t\": true, \"f\": false, \"e\": {}, \"z\": []} ";
    sdfed_json j;
    sdfed_error err = {0};
    CHECK(sdfed_json_parse(&j, text, strlen(text), &err) == SDFED_OK, "parse: %s", err.message);
    int a = sdfed_json_get(&j, 0, "a");
    CHECK(a > 0 && j.nodes[a].type == SDFED_JSON_ARRAY && j.nodes[a].size == 3, "array member");
    double v = 0;
    CHECK(sdfed_json_number(&j, sdfed_json_at(&j, a, 1), &v) == 0 && v == -2500.0, "number %g", v);
    int inner = sdfed_json_at(&j, a, 2);
    CHECK(j.nodes[sdfed_json_get(&j, inner, "x")].type == SDFED_JSON_NULL, "nested null");
    char buf[64];
    int b = sdfed_json_get(&j, 0, "b\xc3\xa9");
    CHECK(b > 0, "key with an escape is found by its decoded form");
    CHECK(sdfed_json_string(&j, b, buf, sizeof buf) == 11 && strcmp(buf, "caf\xc3\xa9 \xf0\x9f\x99\x82\n") == 0,
          "escapes and surrogate pairs decode to UTF-8");
    CHECK(sdfed_json_string(&j, b, buf, 5) == -1, "a too small buffer is refused");
    CHECK(j.nodes[sdfed_json_get(&j, 0, "t")].type == SDFED_JSON_TRUE, "true");
    CHECK(j.nodes[sdfed_json_get(&j, 0, "e")].size == 0 && j.nodes[sdfed_json_get(&j, 0, "z")].size == 0, "empties");
    CHECK(sdfed_json_get(&j, 0, "missing") == -1 && sdfed_json_at(&j, a, 3) == -1 && sdfed_json_get(&j, a, "x") == -1,
          "absent members and wrong node types give -1");
    sdfed_json_free(&j);
}

static void test_rejects(void) {
    const char *bad[] = {"",          "{",       "[1,]",        "{\"a\":1,}", "{\"a\" 1}", "[1 2]", "\"abc",
                         "\"a\x01\"", "\"\\x\"", "\"\\u12g4\"", "01",         "1.",        ".5",    "-",
                         "1e",        "tru",     "nul",         "[1]]",       "{} {}",     "{1:2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(parses(bad[i]) == 0, "rejects <%s>", bad[i]);
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    sdfed_json j;
    CHECK(sdfed_json_parse(&j, deep, sizeof deep, NULL) == SDFED_ERR_FORMAT, "nesting beyond the depth limit");
    memset(deep, '[', 60);
    memset(deep + 60, ']', 60);
    CHECK(sdfed_json_parse(&j, deep, 120, NULL) == SDFED_OK, "nesting within the limit");
    sdfed_json_free(&j);
    const char *good[] = {"0", "-0.5e-3", "\"\"", "[]", "{}", " true ", "[null,false]", "1E+2"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK(parses(good[i]) == 1, "accepts <%s>", good[i]);
}

int main(void) {
    test_document();
    test_rejects();
    return check_report("test_json");
}

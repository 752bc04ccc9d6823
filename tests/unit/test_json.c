/* The core's JSON reader: valid documents, strings, numbers, and rejection
 * of malformed input (invalid UTF-8, repeated keys, NUL in text among it). */
#include <stdint.h>
#include <stdio.h>
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

/* integers read exactly from their text, never through a double */
static void test_integers(void) {
    const struct {
        const char *text;
        int ok;
        int64_t value;
    } cases[] = {
        {"0", 1, 0},
        {"-0", 1, 0},
        {"42", 1, 42},
        {"-17", 1, -17},
        {"9007199254740992", 1, 9007199254740992}, /* 2^53 */
        {"9007199254740993", 1, 9007199254740993}, /* 2^53 + 1: a double would read 2^53 */
        {"9223372036854775807", 1, INT64_MAX},     /* the largest */
        {"-9223372036854775808", 1, INT64_MIN},    /* the smallest */
        {"9223372036854775808", 0, 0},             /* one past */
        {"-9223372036854775809", 0, 0},            /* one below */
        {"5.0", 1, 5},
        {"1.20e1", 1, 12},
        {"1E+2", 1, 100},
        {"2500e-2", 1, 25},
        {"0.000", 1, 0},
        {"0e999999999999", 1, 0},
        {"1.5", 0, 0},
        {"1e-1", 0, 0},
        {"123e-2", 0, 0},
        {"1e19", 0, 0},
        {"1e999999999999", 0, 0},
        {"100000000000000000000", 0, 0},
        {"0.0000000000000000000000000000001e31", 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sdfed_json j;
        int64_t v = -1;
        CHECK(sdfed_json_parse(&j, cases[i].text, strlen(cases[i].text), NULL) == SDFED_OK, "parse <%s>",
              cases[i].text);
        int rc = sdfed_json_integer(&j, 0, &v);
        CHECK(cases[i].ok ? rc == 0 && v == cases[i].value : rc == -1, "<%s> as an integer: %d, %lld", cases[i].text,
              rc, (long long)v);
        sdfed_json_free(&j);
    }
    sdfed_json j;
    int64_t v;
    CHECK(sdfed_json_parse(&j, "[\"7\", true]", 11, NULL) == SDFED_OK && sdfed_json_integer(&j, 1, &v) == -1 &&
              sdfed_json_integer(&j, 2, &v) == -1 && sdfed_json_integer(&j, 0, &v) == -1,
          "a string, a literal or an array is not an integer");
    sdfed_json_free(&j);
    /* a number longer than 63 characters is a number */
    const char *longer = "0.10000000000000000000000000000000000000000000000000000000000000000000000001";
    double d = 0;
    CHECK(sdfed_json_parse(&j, longer, strlen(longer), NULL) == SDFED_OK && sdfed_json_number(&j, 0, &d) == 0 &&
              d == 0.1,
          "a long number is read (%g)", d);
    sdfed_json_free(&j);
}

/* the error parsing text gives, or "" when it parses */
static const char *error_of(const char *text, sdfed_error *err) {
    sdfed_json j;
    err->message[0] = '\0';
    if (sdfed_json_parse(&j, text, strlen(text), err) == SDFED_OK) sdfed_json_free(&j);
    return err->message;
}

/* UTF-8 (RFC 3629) in strings and keys, every byte of it */
static void test_utf8(void) {
    const char *bad[] = {
        "\"caf\xe9\"",            /* Latin-1, not UTF-8 */
        "\"\xc0\xaf\"",           /* an overlong '/' */
        "\"\xe0\x80\xaf\"",       /* overlong in three bytes */
        "\"\xf0\x80\x80\xaf\"",   /* and in four */
        "\"\xed\xa0\x80\"",       /* the surrogate U+D800 in UTF-8 */
        "\"\xed\xbf\xbf\"",       /* and U+DFFF */
        "\"\xf4\x90\x80\x80\"",   /* U+110000 */
        "\"\xf5\x80\x80\x80\"",   /* no lead byte past F4 */
        "\"\xe2\x82\"",           /* cut short before the quote */
        "\"\xf0\x9f\x99\"",       /* the same in four */
        "\"\x80\"",               /* a stray continuation byte */
        "\"a\xc3\"",              /* a lead byte at the end of the string */
        "{\"k\xff\": 1}",         /* in a key */
        "[\"ok\", \"\xc3\x28\"]", /* a lead byte before a non-continuation */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(parses(bad[i]) == 0, "rejects bad UTF-8 #%zu", i);
    const char *good[] = {"\"caf\xc3\xa9\"",      "\"\xf0\x9f\x99\x82\"",         "\"\xef\xbf\xbf\"",
                          "\"\xf4\x8f\xbf\xbf\"", "\"\xed\x9f\xbf\xee\x80\x80\"", "{\"\xc3\xa9\": \"\xe2\x82\xac\"}"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK(parses(good[i]) == 1, "accepts UTF-8 #%zu", i);
    sdfed_error err;
    const char *where = error_of("{\"rounds\": 2, \"name\": \"caf\xe9\"}", &err);
    CHECK(strstr(where, "UTF-8") && strstr(where, "byte 26") && strstr(where, "'name'"),
          "the error says where and in which key's value: %s", where);
    where = error_of("{\"a\": {\"classes\": [\"x\", \"\xed\xa0\x80\"]}}", &err);
    CHECK(strstr(where, "UTF-8") && strstr(where, "'classes'"), "the innermost key: %s", where);
}

/* a key twice in one object is refused, named; the same key in two objects is not */
static void test_repeated_keys(void) {
    sdfed_error err;
    const char *why = error_of("{\"rounds\": 2, \"rounds\": 3}", &err);
    CHECK(strstr(why, "'rounds'") && strstr(why, "twice"), "a repeated key: %s", why);
    why = error_of("{\"round\": 0, \"x\": 1, \"\\u0072ound\": 9}", &err);
    CHECK(strstr(why, "'round'") && strstr(why, "byte 21"), "escaped, it is the same key, named at its second: %s",
          why);
    why = error_of("{\"p\": {\"kind\": \"iid\", \"kind\": \"dirichlet\"}}", &err);
    CHECK(strstr(why, "'kind'"), "in a nested object: %s", why);
    why = error_of("[{\"a\": 1}, {\"a\": 2}, {\"a\": {\"a\": 3}}]", &err);
    CHECK(!why[0], "one key in several objects: %s", why);
    why = error_of("{\"a\": 1, \"ab\": 2, \"b\": 3, \"a\\u00e9\": 4, \"\": 5}", &err);
    CHECK(!why[0], "keys that differ: %s", why);
    /* many keys: each object's are sorted once, not compared in pairs */
    enum { MANY = 100000 };
    static char big[MANY * 16 + 16];
    size_t n = 0;
    big[n++] = '{';
    for (int i = 0; i < MANY; i++) n += (size_t)snprintf(big + n, sizeof big - n, "%s\"k%d\": %d", i ? "," : "", i, i);
    big[n++] = '}';
    big[n] = '\0';
    why = error_of(big, &err);
    CHECK(!why[0], "%d keys: %s", MANY, why);
    snprintf(big + n - 1, sizeof big - n + 1, ", \"k%d\": 0}", MANY / 2);
    why = error_of(big, &err);
    CHECK(strstr(why, "'k50000'"), "the one repeated key among them: %s", why);
}

/* \u0000 in a string: kept by sdfed_json_bytes, refused by every text read */
static void test_nul(void) {
    const char *text = "{\"type\": \"heartbeat\\u0000x\", \"key\": \"K\\u0000\"}";
    sdfed_json j;
    sdfed_error err = {0};
    CHECK(sdfed_json_parse(&j, text, strlen(text), &err) == SDFED_OK, "a NUL in a value parses: %s", err.message);
    int type = sdfed_json_get(&j, 0, "type"), key = sdfed_json_get(&j, 0, "key");
    char buf[32];
    CHECK(sdfed_json_string(&j, type, buf, sizeof buf) == -1, "no text holds a NUL");
    CHECK(sdfed_json_string_dup(&j, type) == NULL, "nor a copy of it");
    CHECK(!sdfed_json_string_eq(&j, type, "heartbeat"), "nor does it equal the text before the NUL");
    CHECK(sdfed_json_bytes(&j, key, buf, sizeof buf) == 2 && !memcmp(buf, "K\0", 3), "bytes keep it");
    CHECK(sdfed_json_bytes(&j, key, buf, 2) == -1, "bytes that do not fit are refused");
    sdfed_json_free(&j);
    const char *why = error_of("{\"type\\u0000x\": \"hello\"}", &err);
    CHECK(strstr(why, "key") && strstr(why, "\\u0000"), "a key is text: no NUL in it: %s", why);
}

int main(void) {
    test_document();
    test_rejects();
    test_integers();
    test_utf8();
    test_repeated_keys();
    test_nul();
    return check_report("test_json");
}

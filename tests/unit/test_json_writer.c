/* The one JSON writer: its layout byte for byte (the protocol, /status,
 * the demo shards and the logs are compared as text), nesting, escapes,
 * base64, bytes that are not UTF-8, and what the reader reads back. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/json.h"
#include "base/json_writer.h"
#include "check.h"

/* the writer's text, NUL-terminated, in text (cap bytes) */
static int written(sdfed_buffer *b, char *text, size_t cap) {
    if (b->size >= cap) return 0;
    memcpy(text, b->data, b->size);
    text[b->size] = '\0';
    sdfed_buffer_free(b);
    return 1;
}

static void test_layout(void) {
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    uint32_t shape[2] = {1, 512};
    const char *names[2] = {"a", "b"};
    sdfed_jw_begin(&w, &b, "hello");
    sdfed_jw_int(&w, "n", -3);
    sdfed_jw_double(&w, "x", 0.1);
    sdfed_jw_double(&w, "inf", INFINITY);
    sdfed_jw_fixed(&w, "ts", 1795000000123.0 / 1000, 3);
    sdfed_jw_fixed(&w, "nan", NAN, 2);
    sdfed_jw_bool(&w, "yes", 1);
    sdfed_jw_null(&w, "none");
    sdfed_jw_object(&w, "inner");
    sdfed_jw_array(&w, "empty");
    sdfed_jw_close(&w);
    sdfed_jw_array(&w, "rows");
    sdfed_jw_object(&w, NULL);
    sdfed_jw_int(&w, "r", 1);
    sdfed_jw_close(&w);
    sdfed_jw_int(&w, NULL, 2);
    sdfed_jw_close(&w);
    sdfed_jw_close(&w);
    sdfed_jw_shape(&w, "shape", 2, shape);
    sdfed_jw_strings(&w, "names", names, 2);
    sdfed_jw_raw(&w, NULL, "", 0);
    sdfed_jw_raw(&w, NULL, "\"spliced\": true", 15);
    CHECK(sdfed_jw_end(&w, NULL) == SDFED_OK, "written");
    char text[512];
    CHECK(written(&b, text, sizeof text) &&
              !strcmp(text, "{\"type\": \"hello\", \"n\": -3, \"x\": 0.1, \"inf\": 0, \"ts\": 1795000000.123, "
                            "\"nan\": 0.00, \"yes\": true, \"none\": null, \"inner\": {\"empty\": [], \"rows\": "
                            "[{\"r\": 1}, 2]}, \"shape\": [1, 512], \"names\": [\"a\", \"b\"], \"spliced\": true}"),
          "the layout: %s", text);
}

static void test_escapes_and_base64(void) {
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "s", "quote \" backslash \\ newline \n");
    sdfed_jw_base64(&w, "one", "M", 1);
    sdfed_jw_base64(&w, "two", "Ma", 2);
    sdfed_jw_base64(&w, "three", "Man", 3);
    sdfed_jw_base64(&w, "none", "", 0);
    CHECK(sdfed_jw_end(&w, NULL) == SDFED_OK, "written");
    sdfed_json j;
    char s[64] = "";
    CHECK(sdfed_json_parse(&j, (const char *)b.data, b.size, NULL) == SDFED_OK &&
              sdfed_json_string(&j, sdfed_json_get(&j, 0, "s"), s, sizeof s) >= 0 &&
              !strcmp(s, "quote \" backslash \\ newline \n"),
          "a string comes back through the reader (%s)", s);
    sdfed_json_free(&j);
    char text[256];
    CHECK(written(&b, text, sizeof text) && strstr(text, "\\u000a") &&
              strstr(text, "\"one\": \"TQ==\", \"two\": \"TWE=\", \"three\": \"TWFu\", \"none\": \"\""),
          "escapes and base64: %s", text);
}

/* formatted strings escaped like any other, short or longer than the writer's own room */
static void test_formatted_strings(void) {
    char path[1200];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    path[3] = '"';
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_stringf(&w, "short", "round %d: \"%s\"", 7, "a\\b");
    sdfed_jw_stringf(&w, "long", "cannot read %s", path);
    CHECK(sdfed_jw_end(&w, NULL) == SDFED_OK, "written");
    const char short_one[] = "{\"short\": \"round 7: \\\"a\\\\b\\\"\", ";
    CHECK(b.size > sizeof short_one && !memcmp(b.data, short_one, sizeof short_one - 1), "a short one: %.40s",
          (const char *)b.data);
    sdfed_json j;
    char s[1300] = "", want[1300];
    snprintf(want, sizeof want, "cannot read %s", path);
    CHECK(sdfed_json_parse(&j, (const char *)b.data, b.size, NULL) == SDFED_OK &&
              sdfed_json_string(&j, sdfed_json_get(&j, 0, "long"), s, sizeof s) >= 0 && !strcmp(s, want),
          "a long one comes back through the reader (%zu bytes)", strlen(s));
    sdfed_json_free(&j);
    sdfed_buffer_free(&b);
}

/* bytes that are not UTF-8 (a folder's name from disk, a message cut
 * inside a character) are written as U+FFFD, one for each such byte: the
 * writer's text is UTF-8 whatever it is given */
static void test_invalid_utf8(void) {
    const struct {
        const char *in, *out;
    } cases[] = {
        {"caf\xc3\xa9 \xf0\x9f\x99\x82", "caf\xc3\xa9 \xf0\x9f\x99\x82"},         /* UTF-8 as it is */
        {"caf\xe9", "caf\xef\xbf\xbd"},                                           /* Latin-1 */
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},                                 /* an overlong form */
        {"\xed\xa0\x80!", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!"},               /* a surrogate */
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* past U+10FFFF */
        {"ab\xe2\x82", "ab\xef\xbf\xbd\xef\xbf\xbd"},                             /* cut short */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sdfed_buffer b = {0};
        sdfed_json_writer w;
        sdfed_jw_begin(&w, &b, NULL);
        sdfed_jw_string(&w, cases[i].in, cases[i].in);
        CHECK(sdfed_jw_end(&w, NULL) == SDFED_OK, "written");
        sdfed_json j;
        sdfed_error err = {0};
        char s[64] = "";
        int parsed = sdfed_json_parse(&j, (const char *)b.data, b.size, &err) == SDFED_OK;
        CHECK(parsed && sdfed_json_string(&j, sdfed_json_get(&j, 0, cases[i].out), s, sizeof s) >= 0 &&
                  !strcmp(s, cases[i].out),
              "case %zu: the key and the value written as UTF-8 (%s)", i, parsed ? s : err.message);
        if (parsed) sdfed_json_free(&j);
        sdfed_buffer_free(&b);
    }
}

int main(void) {
    if (check_case("layout")) test_layout();
    if (check_case("escapes_and_base64")) test_escapes_and_base64();
    if (check_case("formatted_strings")) test_formatted_strings();
    if (check_case("invalid_utf8")) test_invalid_utf8();
    return check_report("test_json_writer");
}

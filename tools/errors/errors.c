/* The protocol's error codes for the page and the docs, from their one table
 * (shared/fed/errors.c): web/errors.js whole, and in docs/protocol.md the
 * lines between the two marker comments.
 *   sdfed-errors check web/errors.js docs/protocol.md   exit 1 if either differs
 *   sdfed-errors write web/errors.js docs/protocol.md   rewrites them */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
#include "fed/errors.h"
#include "native/file_map.h"
#include "native/generated_file.h"

#define DOC_BEGIN                                                                                                      \
    "<!-- error codes: written from shared/fed/errors.c by `build/sdfed-errors write web/errors.js "                   \
    "docs/protocol.md`; the ctest error_codes checks them -->\n"
#define DOC_END "<!-- end of error codes -->\n"

static void put_bytes(sdfed_buffer *b, const void *data, size_t n) {
    sdfed_sink sink = sdfed_buffer_sink(b);
    if (sink.write(sink.ctx, data, n)) {
        fprintf(stderr, "sdfed-errors: out of memory\n");
        exit(2);
    }
}

static void put(sdfed_buffer *b, const char *s) { put_bytes(b, s, strlen(s)); }

static void put_js_string(sdfed_buffer *b, const char *s) {
    put(b, "'");
    for (; *s; s++) {
        char c[3] = {*s, 0, 0};
        if (*s == '\'' || *s == '\\') {
            c[0] = '\\';
            c[1] = *s;
        }
        put(b, c);
    }
    put(b, "'");
}

static void upper(char *out, size_t cap, const char *s) {
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++) out[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
    out[i] = '\0';
}

static void write_js(sdfed_buffer *b) {
    char line[256];
    put(b, "// The sdfed.v1 protocol's error codes (docs/protocol.md), written from their\n"
           "// one table, shared/fed/errors.c, by `build/sdfed-errors write web/errors.js\n"
           "// docs/protocol.md`; the ctest error_codes fails when this file differs.\n\n"
           "// name (on the wire), number and meaning of each, in number order\n"
           "export const ERROR_CODES = Object.freeze([\n");
    for (int c = 0; c < SDFED_CODE_COUNT; c++) {
        put(b, "  Object.freeze({ name: ");
        put_js_string(b, sdfed_codes[c].name);
        snprintf(line, sizeof line, ", number: %d, meaning: ", c);
        put(b, line);
        put_js_string(b, sdfed_codes[c].meaning);
        put(b, " }),\n");
    }
    put(b, "]);\n\n// each code's name, to compare an error message's `code` with\n");
    for (int c = 0; c < SDFED_CODE_COUNT; c++) {
        char name[64];
        upper(name, sizeof name, sdfed_codes[c].name);
        snprintf(line, sizeof line, "export const %s = '%s';\n", name, sdfed_codes[c].name);
        put(b, line);
    }
}

static void write_doc_list(sdfed_buffer *b) {
    char line[512];
    put(b, DOC_BEGIN "| code | number | meaning |\n|---|---|---|\n");
    for (int c = 0; c < SDFED_CODE_COUNT; c++) {
        snprintf(line, sizeof line, "| `%s` | %d | %s |\n", sdfed_codes[c].name, c, sdfed_codes[c].meaning);
        put(b, line);
    }
    put(b, DOC_END);
}

int main(int argc, char **argv) {
    static const char usage[] = "usage: sdfed-errors check|write web/errors.js docs/protocol.md\n";
    if (argc == 2 && !strcmp(argv[1], "--help")) {
        fputs(usage, stdout);
        return 0;
    }
    int write = argc == 4 && !strcmp(argv[1], "write");
    if (argc != 4 || (!write && strcmp(argv[1], "check"))) {
        fputs(usage, stderr);
        return 2;
    }
    const char *js_path = argv[2], *doc_path = argv[3];
    sdfed_buffer js = {0}, list = {0}, doc = {0};
    write_js(&js);
    put_bytes(&js, "", 1); /* a terminating NUL */
    write_doc_list(&list);

    native_file_map doc_file;
    sdfed_error err;
    if (native_file_map_open(&doc_file, doc_path, &err)) {
        fprintf(stderr, "sdfed-errors: %s\n", err.message);
        return 2;
    }
    sdfed_buffer old_doc = {0};
    put_bytes(&old_doc, doc_file.data, doc_file.size);
    put_bytes(&old_doc, "", 1);
    native_file_map_close(&doc_file);
    /* the document up to its list, the list, and the rest after it */
    const char *text = (const char *)old_doc.data;
    const char *begin = strstr(text, DOC_BEGIN), *end = begin ? strstr(begin, DOC_END) : NULL;
    if (!end) {
        fprintf(stderr, "sdfed-errors: %s has no list of error codes between the markers\n  %s  %s", doc_path,
                DOC_BEGIN, DOC_END);
        return 2;
    }
    end += strlen(DOC_END);
    put_bytes(&doc, text, (size_t)(begin - text));
    put_bytes(&doc, list.data, list.size);
    put_bytes(&doc, end, strlen(end) + 1); /* with its NUL */

    int js_same, doc_same;
    int rc = native_generated_file(js_path, (const char *)js.data, write, &js_same, &err) ||
             native_generated_file(doc_path, (const char *)doc.data, write, &doc_same, &err);
    if (rc) {
        fprintf(stderr, "sdfed-errors: %s\n", err.message);
        rc = 2;
    } else if (!write) {
        if (!js_same) fprintf(stderr, "sdfed-errors: %s is not the table's (shared/fed/errors.c)\n", js_path);
        if (!doc_same)
            fprintf(stderr, "sdfed-errors: the list of error codes in %s is not the table's (shared/fed/errors.c)\n",
                    doc_path);
        if (!js_same || !doc_same) {
            fprintf(stderr, "sdfed-errors: run `build/sdfed-errors write %s %s`\n", js_path, doc_path);
            rc = 1;
        } else {
            printf("sdfed-errors: %s and %s list the %d codes of the table\n", js_path, doc_path, SDFED_CODE_COUNT);
        }
    }
    sdfed_buffer_free(&js);
    sdfed_buffer_free(&list);
    sdfed_buffer_free(&doc);
    sdfed_buffer_free(&old_doc);
    return rc;
}

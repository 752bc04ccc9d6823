/* A small strict JSON reader for the core (safetensors headers, task and
 * message bodies in the wasm builds, where no system JSON library exists).
 *
 * Parsing produces a flat array of nodes in document order; a node's
 * children follow it, and `next` is the index just past its subtree, so
 * walking siblings is `for (c = node + 1; ...; c = nodes[c].next)`.
 * Strings are left escaped in the text and decoded on request.
 *
 * Strict: RFC 8259's grammar, every string's bytes UTF-8 (RFC 3629: no
 * overlong form, no surrogate, nothing past U+10FFFF), no key twice in one
 * object (the key is named), no \u0000 in a key; an error says at which
 * byte, and in the value of which key when there is one. */
#ifndef SDFED_JSON_H
#define SDFED_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

enum {
    SDFED_JSON_NULL,
    SDFED_JSON_FALSE,
    SDFED_JSON_TRUE,
    SDFED_JSON_NUMBER,
    SDFED_JSON_STRING,
    SDFED_JSON_ARRAY,
    SDFED_JSON_OBJECT
};

typedef struct sdfed_json_node {
    int type;
    int size;     /* arrays: element count; objects: member count */
    size_t start; /* strings: first byte after the quote; others: first byte */
    size_t end;   /* one past the last byte (strings: the closing quote) */
    int next;     /* index of the node after this subtree */
} sdfed_json_node;

typedef struct sdfed_json {
    const char *text;
    size_t len;
    sdfed_json_node *nodes;
    int count, cap;
} sdfed_json;

#define SDFED_JSON_MAX_DEPTH 64

int sdfed_json_parse(sdfed_json *j, const char *text, size_t len, sdfed_error *err);
void sdfed_json_free(sdfed_json *j);

/* Node index of member `key` of object node `obj`, or -1. */
int sdfed_json_get(const sdfed_json *j, int obj, const char *key);
/* Node index of element i of array node `arr`, or -1. */
int sdfed_json_at(const sdfed_json *j, int arr, int i);
/* Decodes string node into out as text (NUL-terminated, UTF-8). Returns the
 * decoded length, or -1 if the node is not a string, holds a NUL (\u0000:
 * no text holds one) or does not fit in cap bytes. */
long sdfed_json_string(const sdfed_json *j, int node, char *out, size_t cap);
/* The same as bytes: a NUL in the string kept (the length says where it
 * ends), for a value compared whole, never read as text (a secret). */
long sdfed_json_bytes(const sdfed_json *j, int node, char *out, size_t cap);
/* Decoded text in a new heap buffer (caller frees), or NULL (not a string,
 * a NUL in it, or no memory). */
char *sdfed_json_string_dup(const sdfed_json *j, int node);
/* 1 if string node is text equal to s (compared decoded). */
int sdfed_json_string_eq(const sdfed_json *j, int node, const char *s);
/* Number node as a double; returns 0 on success, -1 if not a number. */
int sdfed_json_number(const sdfed_json *j, int node, double *out);
/* Number node as an integer, read exactly from its text (no double in
 * between: 9007199254740993 stays itself); "12", "1.20e1" and "-0" are
 * integers, "1.5" is not. Returns 0 on success, -1 if the node is not a
 * number, not an integer or outside int64_t. */
int sdfed_json_integer(const sdfed_json *j, int node, int64_t *out);

#endif

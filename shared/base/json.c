/* Strict recursive-descent JSON reader producing a flat node array. */
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/utf8.h"

typedef struct parser {
    sdfed_json *j;
    size_t pos;
    int key; /* the member key whose value is being read (its node), or -1 */
    sdfed_error *err;
} parser;

/* A key for a message: its text, cut to at most 60 bytes between two
 * characters (a key is UTF-8 without a NUL: the parser refused any other). */
static void key_text(const sdfed_json *j, int node, char *out, size_t cap) {
    enum { MOST = 60 };
    char *all = sdfed_json_string_dup(j, node);
    size_t n = all ? strlen(all) : 0, keep = 0, k;
    uint32_t cp;
    while (keep < n && (k = sdfed_utf8_read((const unsigned char *)all + keep, n - keep, &cp)) > 0 && keep + k <= MOST)
        keep += k;
    snprintf(out, cap, "%.*s%s", (int)keep, all ? all : "", keep < n ? "..." : "");
    free(all);
}

/* what, where, and in which key's value when there is one */
static int fail_where(parser *p, size_t pos, const char *what) {
    if (p->key < 0) return sdfed_fail(p->err, SDFED_ERR_FORMAT, "json: %s at byte %zu", what, pos);
    char key[80];
    key_text(p->j, p->key, key, sizeof key);
    return sdfed_fail(p->err, SDFED_ERR_FORMAT, "json: %s at byte %zu, in the value of '%s'", what, pos, key);
}

static int fail_at(parser *p, const char *what) { return fail_where(p, p->pos, what); }

static void skip_space(parser *p) {
    const char *t = p->j->text;
    while (p->pos < p->j->len && (t[p->pos] == ' ' || t[p->pos] == '\t' || t[p->pos] == '\n' || t[p->pos] == '\r'))
        p->pos++;
}

static int new_node(parser *p, int type, int *index) {
    sdfed_json *j = p->j;
    sdfed_json_node *grown = sdfed_grow(j->nodes, &j->cap, j->count, sizeof *grown);
    if (!grown) return sdfed_fail(p->err, SDFED_ERR_NOMEM, "json: out of memory");
    j->nodes = grown;
    *index = j->count++;
    sdfed_json_node *n = &j->nodes[*index];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->start = p->pos;
    return SDFED_OK;
}

static long decode(const sdfed_json *j, int node, char *out, size_t cap);

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static unsigned read_hex4(const char *s) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) v = v << 4 | (unsigned)hex_digit(s[k]);
    return v;
}

/* A string: its escapes checked, its other bytes UTF-8; a key (is_key)
 * is text, so \u0000 may not be in it. */
static int parse_string(parser *p, int is_key) {
    const char *t = p->j->text;
    int index, rc;
    p->pos++; /* opening quote */
    if ((rc = new_node(p, SDFED_JSON_STRING, &index))) return rc;
    while (p->pos < p->j->len) {
        unsigned char c = (unsigned char)t[p->pos];
        if (c == '"') {
            p->j->nodes[index].end = p->pos++;
            p->j->nodes[index].next = p->j->count;
            return SDFED_OK;
        }
        if (c < 0x20) return fail_at(p, "control character in string");
        if (c >= 0x80) {
            uint32_t cp;
            size_t k = sdfed_utf8_read((const unsigned char *)t + p->pos, p->j->len - p->pos, &cp);
            if (k == 0) return fail_at(p, "invalid UTF-8");
            p->pos += k;
            continue;
        }
        if (c == '\\') {
            if (++p->pos >= p->j->len) break;
            switch (t[p->pos]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't': break;
            case 'u':
                for (int k = 1; k <= 4; k++)
                    if (p->pos + k >= p->j->len || hex_digit(t[p->pos + k]) < 0) return fail_at(p, "bad \\u escape");
                if (is_key && read_hex4(t + p->pos + 1) == 0) return fail_at(p, "\\u0000 in a key");
                p->pos += 4;
                break;
            default: return fail_at(p, "bad escape");
            }
        }
        p->pos++;
    }
    return fail_at(p, "unterminated string");
}

static int parse_number(parser *p) {
    const char *t = p->j->text;
    size_t n = p->j->len;
    int index, rc;
    if ((rc = new_node(p, SDFED_JSON_NUMBER, &index))) return rc;
    if (p->pos < n && t[p->pos] == '-') p->pos++;
    if (p->pos >= n || t[p->pos] < '0' || t[p->pos] > '9') return fail_at(p, "bad number");
    if (t[p->pos] == '0')
        p->pos++;
    else
        while (p->pos < n && t[p->pos] >= '0' && t[p->pos] <= '9') p->pos++;
    if (p->pos < n && t[p->pos] == '.') {
        p->pos++;
        if (p->pos >= n || t[p->pos] < '0' || t[p->pos] > '9') return fail_at(p, "bad number");
        while (p->pos < n && t[p->pos] >= '0' && t[p->pos] <= '9') p->pos++;
    }
    if (p->pos < n && (t[p->pos] == 'e' || t[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < n && (t[p->pos] == '+' || t[p->pos] == '-')) p->pos++;
        if (p->pos >= n || t[p->pos] < '0' || t[p->pos] > '9') return fail_at(p, "bad number");
        while (p->pos < n && t[p->pos] >= '0' && t[p->pos] <= '9') p->pos++;
    }
    p->j->nodes[index].end = p->pos;
    p->j->nodes[index].next = p->j->count;
    return SDFED_OK;
}

static int parse_literal(parser *p, const char *word, int type) {
    size_t n = strlen(word);
    int index, rc;
    if (p->j->len - p->pos < n || memcmp(p->j->text + p->pos, word, n) != 0) return fail_at(p, "unexpected character");
    if ((rc = new_node(p, type, &index))) return rc;
    p->pos += n;
    p->j->nodes[index].end = p->pos;
    p->j->nodes[index].next = p->j->count;
    return SDFED_OK;
}

static int parse_value(parser *p, int depth);

/* One key of an object, decoded, for finding a key given twice. */
typedef struct key_seen {
    const char *text;
    size_t len;
    int node;
} key_seen;

static int compare_keys(const void *a, const void *b) {
    const key_seen *x = a, *y = b;
    int c = memcmp(x->text, y->text, x->len < y->len ? x->len : y->len);
    if (c == 0) c = (x->len > y->len) - (x->len < y->len);
    return c ? c : x->node - y->node;
}

/* Refuses an object (node obj, complete) that has a key twice, naming it at
 * its second place; its keys decoded and sorted, not compared in pairs. */
static int check_keys(parser *p, int obj) {
    const sdfed_json *j = p->j;
    int n = j->nodes[obj].size;
    if (n < 2) return SDFED_OK;
    size_t room = 0;
    for (int i = 0, k = obj + 1; i < n; i++, k = j->nodes[j->nodes[k].next].next)
        room += j->nodes[k].end - j->nodes[k].start + 1; /* decoding makes no string longer */
    key_seen *keys = malloc(sizeof *keys * (size_t)n);
    char *text = malloc(room);
    if (!keys || !text) {
        free(keys);
        free(text);
        return sdfed_fail(p->err, SDFED_ERR_NOMEM, "json: out of memory");
    }
    size_t used = 0;
    for (int i = 0, k = obj + 1; i < n; i++, k = j->nodes[j->nodes[k].next].next) {
        long len = decode(j, k, text + used, room - used);
        keys[i] = (key_seen){.text = text + used, .len = (size_t)len, .node = k};
        used += (size_t)len + 1;
    }
    qsort(keys, (size_t)n, sizeof *keys, compare_keys);
    int second = -1; /* of the keys given twice, the one whose second place comes first */
    for (int i = 1; i < n; i++)
        if (keys[i].len == keys[i - 1].len && !memcmp(keys[i].text, keys[i - 1].text, keys[i].len) &&
            (second < 0 || keys[i].node < second))
            second = keys[i].node;
    free(keys);
    free(text);
    if (second < 0) return SDFED_OK;
    char key[80], what[120];
    key_text(j, second, key, sizeof key);
    snprintf(what, sizeof what, "key '%s' twice in one object, the second", key);
    return fail_where(p, j->nodes[second].start - 1, what);
}

/* Arrays and objects share one loop; objects read a key and a colon first,
 * and may not have a key twice. */
static int parse_container(parser *p, int depth, int type, char close) {
    int index, rc;
    if (depth >= SDFED_JSON_MAX_DEPTH) return fail_at(p, "nesting too deep");
    if ((rc = new_node(p, type, &index))) return rc;
    p->pos++;
    skip_space(p);
    if (p->pos < p->j->len && p->j->text[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            skip_space(p);
            int outer = p->key;
            if (type == SDFED_JSON_OBJECT) {
                if (p->pos >= p->j->len || p->j->text[p->pos] != '"') return fail_at(p, "expected a string key");
                int key = p->j->count;
                if ((rc = parse_string(p, 1))) return rc;
                skip_space(p);
                if (p->pos >= p->j->len || p->j->text[p->pos] != ':') return fail_at(p, "expected ':'");
                p->pos++;
                p->key = key;
            }
            if ((rc = parse_value(p, depth + 1))) return rc;
            p->key = outer;
            p->j->nodes[index].size++;
            skip_space(p);
            if (p->pos >= p->j->len) return fail_at(p, "unterminated container");
            char c = p->j->text[p->pos++];
            if (c == close) break;
            if (c != ',') return fail_at(p, "expected ',' or a closing bracket");
        }
    }
    p->j->nodes[index].end = p->pos;
    p->j->nodes[index].next = p->j->count;
    return type == SDFED_JSON_OBJECT ? check_keys(p, index) : SDFED_OK;
}

static int parse_value(parser *p, int depth) {
    skip_space(p);
    if (p->pos >= p->j->len) return fail_at(p, "unexpected end of input");
    switch (p->j->text[p->pos]) {
    case '{': return parse_container(p, depth, SDFED_JSON_OBJECT, '}');
    case '[': return parse_container(p, depth, SDFED_JSON_ARRAY, ']');
    case '"': return parse_string(p, 0);
    case 't': return parse_literal(p, "true", SDFED_JSON_TRUE);
    case 'f': return parse_literal(p, "false", SDFED_JSON_FALSE);
    case 'n': return parse_literal(p, "null", SDFED_JSON_NULL);
    default: return parse_number(p);
    }
}

int sdfed_json_parse(sdfed_json *j, const char *text, size_t len, sdfed_error *err) {
    memset(j, 0, sizeof *j);
    j->text = text;
    j->len = len;
    parser p = {.j = j, .pos = 0, .key = -1, .err = err};
    int rc = parse_value(&p, 0);
    if (rc == SDFED_OK) {
        skip_space(&p);
        if (p.pos != len) rc = fail_at(&p, "trailing characters after the value");
    }
    if (rc) sdfed_json_free(j);
    return rc;
}

void sdfed_json_free(sdfed_json *j) {
    free(j->nodes);
    j->nodes = NULL;
    j->count = j->cap = 0;
}

int sdfed_json_get(const sdfed_json *j, int obj, const char *key) {
    if (obj < 0 || obj >= j->count || j->nodes[obj].type != SDFED_JSON_OBJECT) return -1;
    int k = obj + 1;
    for (int i = 0; i < j->nodes[obj].size; i++) {
        int v = j->nodes[k].next;
        if (sdfed_json_string_eq(j, k, key)) return v;
        k = j->nodes[v].next;
    }
    return -1;
}

int sdfed_json_at(const sdfed_json *j, int arr, int i) {
    if (arr < 0 || arr >= j->count || j->nodes[arr].type != SDFED_JSON_ARRAY || i < 0 || i >= j->nodes[arr].size)
        return -1;
    int k = arr + 1;
    while (i-- > 0) k = j->nodes[k].next;
    return k;
}

/* The string node's bytes decoded into out (NUL-terminated; a \u0000 in
 * it kept), their count, or -1 when it is no string or they do not fit. */
static long decode(const sdfed_json *j, int node, char *out, size_t cap) {
    if (node < 0 || node >= j->count || j->nodes[node].type != SDFED_JSON_STRING || cap == 0) return -1;
    const char *s = j->text + j->nodes[node].start, *end = j->text + j->nodes[node].end;
    size_t n = 0;
    while (s < end) {
        unsigned char tmp[4];
        size_t k = 1;
        if (*s != '\\') {
            tmp[0] = (unsigned char)*s++;
        } else {
            char e = s[1];
            s += 2;
            switch (e) {
            case 'b': tmp[0] = '\b'; break;
            case 'f': tmp[0] = '\f'; break;
            case 'n': tmp[0] = '\n'; break;
            case 'r': tmp[0] = '\r'; break;
            case 't': tmp[0] = '\t'; break;
            case 'u': {
                uint32_t cp = read_hex4(s);
                s += 4;
                /* a high surrogate followed by a low one encodes one code point;
                 * lone surrogates become U+FFFD */
                if (cp >= 0xd800 && cp < 0xdc00 && end - s >= 6 && s[0] == '\\' && s[1] == 'u') {
                    uint32_t lo = read_hex4(s + 2);
                    if (lo >= 0xdc00 && lo < 0xe000) {
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        s += 6;
                    }
                }
                if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd;
                k = sdfed_utf8_write(tmp, cp);
                break;
            }
            default: tmp[0] = (unsigned char)e; break; /* '"', '\\', '/' */
            }
        }
        if (n + k >= cap) return -1;
        memcpy(out + n, tmp, k);
        n += k;
    }
    out[n] = '\0';
    return (long)n;
}

long sdfed_json_bytes(const sdfed_json *j, int node, char *out, size_t cap) { return decode(j, node, out, cap); }

long sdfed_json_string(const sdfed_json *j, int node, char *out, size_t cap) {
    long n = decode(j, node, out, cap);
    return n >= 0 && memchr(out, '\0', (size_t)n) ? -1 : n;
}

char *sdfed_json_string_dup(const sdfed_json *j, int node) {
    if (node < 0 || node >= j->count || j->nodes[node].type != SDFED_JSON_STRING) return NULL;
    /* decoding never makes a string longer than its escaped form */
    size_t cap = j->nodes[node].end - j->nodes[node].start + 1;
    char *out = malloc(cap);
    if (out && sdfed_json_string(j, node, out, cap) < 0) {
        free(out);
        out = NULL;
    }
    return out;
}

int sdfed_json_string_eq(const sdfed_json *j, int node, const char *s) {
    char *decoded = sdfed_json_string_dup(j, node);
    int eq = decoded && strcmp(decoded, s) == 0;
    free(decoded);
    return eq;
}

int sdfed_json_number(const sdfed_json *j, int node, double *out) {
    if (node < 0 || node >= j->count || j->nodes[node].type != SDFED_JSON_NUMBER) return -1;
    char small[64];
    size_t n = j->nodes[node].end - j->nodes[node].start;
    char *buf = n < sizeof small ? small : malloc(n + 1); /* a number of any length is one */
    if (!buf) return -1;
    memcpy(buf, j->text + j->nodes[node].start, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    if (buf != small) free(buf);
    return 0;
}

/* v * 10, unless that passes limit */
static int times_ten(uint64_t *v, uint64_t limit) {
    if (*v > limit / 10) return -1;
    *v *= 10;
    return 0;
}

int sdfed_json_integer(const sdfed_json *j, int node, int64_t *out) {
    if (node < 0 || node >= j->count || j->nodes[node].type != SDFED_JSON_NUMBER) return -1;
    /* the parser checked the grammar: -?digits(.digits)?([eE][+-]?digits)? */
    const char *t = j->text + j->nodes[node].start, *end = j->text + j->nodes[node].end;
    int negative = *t == '-';
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    /* the digits before and after the point, as one integer v; zeros after
     * its last non-zero digit are counted, not multiplied in, and so is
     * every digit after the point (scale: the power of ten v is missing) */
    int64_t scale = 0, zeros = 0;
    int after_point = 0;
    for (t += negative; t < end && *t != 'e' && *t != 'E'; t++) {
        if (*t == '.') {
            after_point = 1;
            continue;
        }
        scale -= after_point;
        if (*t == '0') {
            zeros++;
            continue;
        }
        for (; zeros >= 0; zeros--)
            if (times_ten(&v, limit)) return -1;
        zeros = 0;
        uint64_t digit = (uint64_t)(*t - '0');
        if (v > limit - digit) return -1;
        v += digit;
    }
    int64_t exponent = 0;
    int exponent_negative = t + 1 < end && t[1] == '-';
    if (t < end) t += 1 + (t[1] == '-' || t[1] == '+');
    for (; t < end; t++)
        if (exponent < 1000000) exponent = exponent * 10 + (*t - '0'); /* past that, too large either way */
    scale += zeros + (exponent_negative ? -exponent : exponent);
    if (v == 0) {
        *out = 0;
        return 0;
    }
    if (scale < 0) return -1; /* a fraction */
    for (int64_t k = 0; k < scale; k++)
        if (times_ten(&v, limit)) return -1;
    *out = negative ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

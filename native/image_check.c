/* Image files' decoding verdicts, remembered per content (see image_check.h). */
#include "native/image_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native/crypto.h"
#include "native/image_decode.h"
#include "native/keyed_records.h"

/* the record: whether the content decodes, and why not */
typedef struct verdict {
    uint8_t ok;
    uint8_t reserved[15];
    char reason[IMAGE_CHECK_REASON];
} verdict;

struct native_image_checks {
    native_keyed_records *records;
};

int native_image_checks_open(native_image_checks **out, const char *cache_dir, sdfed_error *err) {
    static const char magic[8] = {'S', 'D', 'I', 'M', 'G', 'O', 'K', '1'};
    char path[1200];
    snprintf(path, sizeof path, "%s/images-v%d.records", cache_dir, IMAGE_CHECK_VERSION);
    *out = calloc(1, sizeof **out);
    if (!*out) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    int rc = native_keyed_records_open(&(*out)->records, path, magic, sizeof(verdict), err);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

void native_image_checks_close(native_image_checks *c) {
    if (!c) return;
    native_keyed_records_close(c->records);
    free(c);
}

int native_image_file_key(const char *path, uint8_t key[32], sdfed_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return sdfed_fail(err, SDFED_ERR_IO, "cannot be read: %s", strerror(errno));
    native_sha256_ctx h;
    int rc = native_sha256_begin(&h, err);
    if (rc) {
        fclose(f);
        return rc;
    }
    const uint32_t version = IMAGE_CHECK_VERSION;
    native_sha256_add(&h, &version, sizeof version);
    unsigned char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) native_sha256_add(&h, chunk, n);
    int failed = ferror(f), read_errno = errno;
    fclose(f);
    rc = native_sha256_end(&h, key, err);
    if (failed) return sdfed_fail(err, SDFED_ERR_IO, "cannot be read: %s", strerror(read_errno));
    return rc;
}

/* The decoder's message without the file's name in front. */
static void reason_of(const char *message, const char *path, char reason[IMAGE_CHECK_REASON]) {
    size_t n = strlen(path);
    if (!strncmp(message, path, n) && !strncmp(message + n, ": ", 2)) message += n + 2;
    snprintf(reason, IMAGE_CHECK_REASON, "%s", message);
}

/* Whether a decoder's status is the file's fault (a verdict to keep). */
static int is_verdict(int status) { return status == SDFED_ERR_FORMAT || status == SDFED_ERR_UNSUPPORTED; }

int native_image_checks_decode(native_image_checks *c, const char *path, const uint8_t key[32],
                               const native_image_decode_options *options, uint8_t **pixels, int *width, int *height,
                               int *channels, char reason[IMAGE_CHECK_REASON], sdfed_error *err) {
    *pixels = NULL;
    reason[0] = '\0';
    verdict v;
    int known = native_keyed_records_find(c->records, key, &v);
    if (known && !v.ok) {
        snprintf(reason, IMAGE_CHECK_REASON, "%s", v.reason);
        return SDFED_OK;
    }
    sdfed_error why = {0};
    int rc = native_image_decode_file(path, options, pixels, width, height, channels, &why);
    if (rc != SDFED_OK && !is_verdict(rc)) {
        if (rc == SDFED_ERR_IO) { /* gone or unreadable now: named, not remembered */
            reason_of(why.message, path, reason);
            return SDFED_OK;
        }
        return sdfed_fail(err, rc, "%s", why.message);
    }
    if (rc != SDFED_OK) reason_of(why.message, path, reason);
    if (known) return SDFED_OK;
    verdict record = {.ok = rc == SDFED_OK};
    snprintf(record.reason, sizeof record.reason, "%s", reason);
    return native_keyed_records_append(c->records, key, &record, 1, err);
}

int native_image_checks_verdict(native_image_checks *c, const char *path, const uint8_t key[32],
                                const native_image_decode_options *options, int *ok, char reason[IMAGE_CHECK_REASON],
                                sdfed_error *err) {
    verdict v;
    reason[0] = '\0';
    if (native_keyed_records_find(c->records, key, &v)) {
        *ok = v.ok;
        snprintf(reason, IMAGE_CHECK_REASON, "%s", v.ok ? "" : v.reason);
        return SDFED_OK;
    }
    uint8_t *pixels;
    int width, height, channels;
    int rc = native_image_checks_decode(c, path, key, options, &pixels, &width, &height, &channels, reason, err);
    *ok = rc == SDFED_OK && pixels != NULL;
    free(pixels);
    return rc;
}

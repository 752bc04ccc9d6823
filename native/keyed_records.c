/* Keyed record files (see keyed_records.h). */
#include "native/keyed_records.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fed/protocol.h"
#include "native/paths.h"

#define HEADER 16
#define CRC 4
/* keys read this many bytes at a time when the file is opened */
#define READ_BLOCK ((size_t)4 << 20)

typedef struct slot {
    uint8_t key[KEYED_RECORDS_KEY];
    int64_t record; /* -1: empty */
} slot;

struct native_keyed_records {
    int fd;
    char path[1024];
    uint32_t payload_size;
    size_t record_size;
    slot *slots;
    size_t capacity; /* a power of two, at least twice the records */
    int count;
    uint8_t *scratch; /* one record */
};

static size_t slot_of(const native_keyed_records *r, const uint8_t *key) {
    uint64_t h;
    memcpy(&h, key, sizeof h);
    return (size_t)h & (r->capacity - 1);
}

/* key's slot: its own, or the empty one where it would go */
static slot *find_slot(const native_keyed_records *r, const uint8_t *key) {
    for (size_t i = slot_of(r, key);; i = (i + 1) & (r->capacity - 1)) {
        slot *s = &r->slots[i];
        if (s->record < 0 || !memcmp(s->key, key, KEYED_RECORDS_KEY)) return s;
    }
}

static int grow_index(native_keyed_records *r, size_t records, sdfed_error *err) {
    if (records * 2 < r->capacity) return SDFED_OK;
    size_t capacity = r->capacity ? r->capacity : 1024;
    while (records * 2 >= capacity) capacity *= 2;
    slot *old = r->slots;
    size_t old_capacity = r->capacity;
    r->slots = malloc(sizeof *r->slots * capacity);
    if (!r->slots) {
        r->slots = old;
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory for its index", r->path);
    }
    r->capacity = capacity;
    for (size_t i = 0; i < capacity; i++) r->slots[i].record = -1;
    for (size_t i = 0; i < old_capacity; i++)
        if (old[i].record >= 0) *find_slot(r, old[i].key) = old[i];
    free(old);
    return SDFED_OK;
}

static int index_record(native_keyed_records *r, const uint8_t *key, int64_t record, sdfed_error *err) {
    int rc = grow_index(r, (size_t)r->count + 1, err);
    if (rc) return rc;
    slot *s = find_slot(r, key);
    if (s->record < 0) r->count++;
    memcpy(s->key, key, KEYED_RECORDS_KEY);
    s->record = record;
    return SDFED_OK;
}

static int lock(int fd, short type) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET};
    int rc;
    do {
        rc = fcntl(fd, F_SETLKW, &l);
    } while (rc != 0 && errno == EINTR);
    return rc;
}

/* The header, written when the file is new, checked when it is not. */
static int check_header(native_keyed_records *r, const char magic[8], sdfed_error *err) {
    uint8_t want[HEADER] = {0}, have[HEADER];
    memcpy(want, magic, 8);
    memcpy(want + 8, &r->payload_size, 4);
    if (lock(r->fd, F_WRLCK)) return sdfed_fail(err, SDFED_ERR_IO, "%s: cannot lock: %s", r->path, strerror(errno));
    struct stat st;
    int rc = SDFED_OK;
    if (fstat(r->fd, &st) != 0)
        rc = sdfed_fail(err, SDFED_ERR_IO, "%s: %s", r->path, strerror(errno));
    else if (st.st_size < HEADER && (ftruncate(r->fd, 0) != 0 || pwrite(r->fd, want, HEADER, 0) != HEADER))
        rc = sdfed_fail(err, SDFED_ERR_IO, "%s: cannot write: %s", r->path, strerror(errno));
    else if (st.st_size >= HEADER && (pread(r->fd, have, HEADER, 0) != HEADER || memcmp(have, want, HEADER) != 0))
        rc = sdfed_fail(err, SDFED_ERR_FORMAT,
                        "%s: not a record file of this kind and version (delete it to start over)", r->path);
    lock(r->fd, F_UNLCK);
    return rc;
}

/* Every whole record's key, into the index. */
static int read_index(native_keyed_records *r, sdfed_error *err) {
    struct stat st;
    if (fstat(r->fd, &st) != 0) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", r->path, strerror(errno));
    int64_t records = (st.st_size - HEADER) / (int64_t)r->record_size;
    size_t per_block = READ_BLOCK / r->record_size ? READ_BLOCK / r->record_size : 1;
    uint8_t *block = malloc(per_block * r->record_size);
    if (!block) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", r->path);
    int rc = grow_index(r, (size_t)records, err);
    for (int64_t first = 0; first < records && rc == SDFED_OK; first += (int64_t)per_block) {
        size_t n = records - first < (int64_t)per_block ? (size_t)(records - first) : per_block;
        size_t bytes = n * r->record_size;
        if (pread(r->fd, block, bytes, HEADER + first * (int64_t)r->record_size) != (ssize_t)bytes) {
            rc = sdfed_fail(err, SDFED_ERR_IO, "%s: read failed: %s", r->path, strerror(errno));
            break;
        }
        for (size_t i = 0; i < n && rc == SDFED_OK; i++)
            rc = index_record(r, block + i * r->record_size, first + (int64_t)i, err);
    }
    free(block);
    return rc;
}

int native_keyed_records_open(native_keyed_records **out, const char *path, const char magic[8], uint32_t payload_size,
                              sdfed_error *err) {
    *out = NULL;
    native_keyed_records *r = calloc(1, sizeof *r);
    if (!r) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->payload_size = payload_size;
    r->record_size = KEYED_RECORDS_KEY + (size_t)payload_size + CRC;
    r->fd = -1;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    int rc = slash ? native_make_dirs(dir, err) : SDFED_OK;
    if (rc == SDFED_OK && (r->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
        rc = sdfed_fail(err, SDFED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (rc == SDFED_OK && !(r->scratch = malloc(r->record_size)))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    if (rc == SDFED_OK) rc = check_header(r, magic, err);
    if (rc == SDFED_OK) rc = read_index(r, err);
    if (rc) {
        native_keyed_records_close(r);
        return rc;
    }
    *out = r;
    return SDFED_OK;
}

static uint32_t record_crc(const native_keyed_records *r, const uint8_t *key, const void *payload) {
    return sdfed_crc32(sdfed_crc32(0, key, KEYED_RECORDS_KEY), payload, r->payload_size);
}

int native_keyed_records_find(native_keyed_records *r, const uint8_t key[KEYED_RECORDS_KEY], void *payload) {
    if (!r->capacity) return 0;
    const slot *s = find_slot(r, key);
    if (s->record < 0) return 0;
    int64_t at = HEADER + s->record * (int64_t)r->record_size;
    if (pread(r->fd, r->scratch, r->record_size, at) != (ssize_t)r->record_size) return 0;
    const uint8_t *body = r->scratch + KEYED_RECORDS_KEY;
    uint32_t crc;
    memcpy(&crc, body + r->payload_size, CRC);
    if (memcmp(r->scratch, key, KEYED_RECORDS_KEY) || crc != record_crc(r, key, body)) return 0;
    memcpy(payload, body, r->payload_size);
    return 1;
}

int native_keyed_records_append(native_keyed_records *r, const uint8_t *keys, const void *payloads, int n,
                                sdfed_error *err) {
    if (n <= 0) return SDFED_OK;
    size_t bytes = (size_t)n * r->record_size;
    uint8_t *block = malloc(bytes);
    if (!block) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", r->path);
    for (int i = 0; i < n; i++) {
        uint8_t *rec = block + (size_t)i * r->record_size;
        const uint8_t *payload = (const uint8_t *)payloads + (size_t)i * r->payload_size;
        uint32_t crc = record_crc(r, keys + (size_t)i * KEYED_RECORDS_KEY, payload);
        memcpy(rec, keys + (size_t)i * KEYED_RECORDS_KEY, KEYED_RECORDS_KEY);
        memcpy(rec + KEYED_RECORDS_KEY, payload, r->payload_size);
        memcpy(rec + KEYED_RECORDS_KEY + r->payload_size, &crc, CRC);
    }
    int rc = SDFED_OK;
    struct stat st;
    if (lock(r->fd, F_WRLCK) != 0) {
        free(block);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: cannot lock: %s", r->path, strerror(errno));
    }
    /* after the last whole record: a tail torn by a run that died is cut */
    int64_t end = 0;
    if (fstat(r->fd, &st) != 0) {
        rc = sdfed_fail(err, SDFED_ERR_IO, "%s: %s", r->path, strerror(errno));
    } else {
        end = HEADER + (st.st_size - HEADER) / (int64_t)r->record_size * (int64_t)r->record_size;
        if ((end != st.st_size && ftruncate(r->fd, end) != 0) || pwrite(r->fd, block, bytes, end) != (ssize_t)bytes)
            rc = sdfed_fail(err, SDFED_ERR_IO, "%s: write failed: %s", r->path, strerror(errno ? errno : ENOSPC));
    }
    if (rc != SDFED_OK && end > 0 && ftruncate(r->fd, end) != 0) rc = SDFED_ERR_IO; /* no part of the batch stays */
    lock(r->fd, F_UNLCK);
    int64_t first = (end - HEADER) / (int64_t)r->record_size;
    for (int i = 0; i < n && rc == SDFED_OK; i++)
        rc = index_record(r, block + (size_t)i * r->record_size, first + i, err);
    free(block);
    return rc;
}

int native_keyed_records_count(const native_keyed_records *r) { return r->count; }

void native_keyed_records_close(native_keyed_records *r) {
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    free(r->slots);
    free(r->scratch);
    free(r);
}

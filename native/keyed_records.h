/* A file of fixed-size records found by a 32-byte key (a SHA-256): what
 * the host remembers per image, across runs and processes: each image's
 * features under a model (native/feature_cache.h) and whether it decodes
 * (native/image_check.h).
 *
 * Layout: a 16-byte header (8 bytes of magic naming the kind and version,
 * the payload size, 4 reserved bytes), then records of key, payload and
 * the CRC-32 of both. Records are only appended, under an exclusive lock
 * (fcntl), so that parallel runs share one file; a reader sees the records
 * that were whole when it opened the file. A record whose CRC does not
 * match (a run killed while it appended) is not found, and a torn tail is
 * cut off by the next writer. When a key appears twice, the later record
 * is the one found. The file is never compacted: records of images that
 * are gone stay (delete the file to start over). */
#ifndef SDFED_NATIVE_KEYED_RECORDS_H
#define SDFED_NATIVE_KEYED_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define KEYED_RECORDS_KEY 32

typedef struct native_keyed_records native_keyed_records;

/* Opens path, creating it (and its folder) when absent. A file whose header
 * is not this magic and payload size is refused with an error naming it. */
int native_keyed_records_open(native_keyed_records **out, const char *path, const char magic[8], uint32_t payload_size,
                              sdfed_error *err);
/* 1 and the payload copied when key has a whole record, else 0. */
int native_keyed_records_find(native_keyed_records *r, const uint8_t key[KEYED_RECORDS_KEY], void *payload);
/* Appends n records (keys (n, 32), payloads (n, payload_size)) at the end
 * of the file, found by later finds. */
int native_keyed_records_append(native_keyed_records *r, const uint8_t *keys, const void *payloads, int n,
                                sdfed_error *err);
int native_keyed_records_count(const native_keyed_records *r);
void native_keyed_records_close(native_keyed_records *r);

#endif

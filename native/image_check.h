/* Whether a dataset's image files decode, found out once per file content
 * and remembered (native/keyed_records.h, <cache>/images-v1.records), so
 * that a file that does not decode is named and skipped on every run
 * without being decoded again, and a program with no model (the
 * aggregator's demo shards, `sdfed task init`) counts the same images as
 * one that encodes them (`sdfed sim`, `task check`).
 *
 * A file's content key is the SHA-256 of its bytes and of the decoding
 * rules' version (IMAGE_CHECK_VERSION, raised whenever what decodes
 * changes). What is remembered is the decoder's verdict on the content:
 * it decodes, or it does not and why (a bad or truncated file, a format or
 * size it refuses). A file that cannot be read, or a decode that ran out
 * of memory, is the host's trouble of the moment, not the file's: it is
 * not remembered. */
#ifndef SDFED_NATIVE_IMAGE_CHECK_H
#define SDFED_NATIVE_IMAGE_CHECK_H

#include <stdint.h>

#include "base/status.h"
#include "native/image_decode.h"

#define IMAGE_CHECK_VERSION 1
#define IMAGE_CHECK_REASON 240

typedef struct native_image_checks native_image_checks;

int native_image_checks_open(native_image_checks **out, const char *cache_dir, sdfed_error *err);
void native_image_checks_close(native_image_checks *c);

/* The content key of the file at path; SDFED_ERR_IO when it cannot be read. */
int native_image_file_key(const char *path, uint8_t key[32], sdfed_error *err);

/* Decodes path, whose content key is key, unless its content is known not
 * to decode. On success *pixels (free()) holds the image (image_decode.h);
 * when the file does not decode, SDFED_OK with *pixels NULL and the reason
 * (without the path) in reason; any other failure is an error. */
int native_image_checks_decode(native_image_checks *c, const char *path, const uint8_t key[32],
                               const native_image_decode_options *options, uint8_t **pixels, int *width, int *height,
                               int *channels, char reason[IMAGE_CHECK_REASON], sdfed_error *err);
/* Whether the file decodes (*ok), decoding it only when its content was
 * never checked; the reason when it does not. */
int native_image_checks_verdict(native_image_checks *c, const char *path, const uint8_t key[32],
                                const native_image_decode_options *options, int *ok, char reason[IMAGE_CHECK_REASON],
                                sdfed_error *err);

#endif

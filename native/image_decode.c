/* PNG/JPEG decoding on the host: reads a file, recognises the format by its
 * magic bytes and decodes it with libpng or libjpeg into packed 8-bit grey
 * or RGB rows, reporting every library error as a status and a message.
 * See image_decode.h for what matches PIL and what does not. */
#include "native/image_decode.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "clip/image_preprocess.h"

/* A decoded image being built; owned by the function that declares it, so
 * that it survives a longjmp out of the library. */
typedef struct {
    uint8_t *pixels;
    int width, height, channels;
} decoded;

static int check_dims(const char *name, const char *format, unsigned long w, unsigned long h, sdfed_error *err) {
    if (w == 0 || h == 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: %s image has zero size (%lu x %lu)", name, format, w, h);
    if (w > SDFED_IMAGE_MAX_SIDE || h > SDFED_IMAGE_MAX_SIDE)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "%s: %s image of %lu x %lu exceeds the limit of %d per side",
                          name, format, w, h, SDFED_IMAGE_MAX_SIDE);
    return SDFED_OK;
}

/* ---- PNG ---------------------------------------------------------------- */

typedef struct {
    const uint8_t *data;
    size_t size, pos;
    char message[200];
    png_bytep *rows; /* row pointers into the decoded pixels */
} png_source;

static void png_read_memory(png_structp png, png_bytep out, size_t n) {
    png_source *src = png_get_io_ptr(png);
    if (n > src->size - src->pos) png_error(png, "file is truncated");
    memcpy(out, src->data + src->pos, n);
    src->pos += n;
}

static void png_on_error(png_structp png, png_const_charp message) {
    png_source *src = png_get_error_ptr(png);
    snprintf(src->message, sizeof src->message, "%s", message);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message; /* warnings (bad ancillary chunks, ...) are not failures */
}

/* Everything that may longjmp; returns 0, or 1 after a libpng error (the
 * message is in src), or 2 with *dims_rc set for a refused size. */
static int png_decode_inner(png_structp png, png_infop info, png_source *src, decoded *out, int *dims_rc,
                            const char *name, sdfed_error *err) {
    if (setjmp(png_jmpbuf(png))) return 1;
    png_set_read_fn(png, src, png_read_memory);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    *dims_rc = check_dims(name, "PNG", w, h, err);
    if (*dims_rc != SDFED_OK) return 2;

    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_strip_16(png); /* keeps the high byte */
    png_set_strip_alpha(png);               /* like convert("RGB"): dropped, not composited */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    int channels = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if ((channels != 1 && channels != 3) || png_get_bit_depth(png, info) != 8 ||
        rowbytes != (size_t)w * (size_t)channels)
        png_error(png, "unexpected pixel layout after conversion");
    out->width = (int)w;
    out->height = (int)h;
    out->channels = channels;
    out->pixels = malloc(rowbytes * h);
    src->rows = malloc(sizeof(png_bytep) * h);
    if (!out->pixels || !src->rows) png_error(png, "out of memory for the pixels");
    for (png_uint_32 y = 0; y < h; y++) src->rows[y] = out->pixels + (size_t)y * rowbytes;
    png_read_image(png, src->rows);
    /* png_read_end is not called: the pixels are complete here, and what
     * follows the image data (text, IEND) does not change them. */
    return 0;
}

static int decode_png(const uint8_t *data, size_t size, const char *name, decoded *out, sdfed_error *err) {
    png_source src = {.data = data, .size = size};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory starting the PNG decoder", name);
    }
    int dims_rc = SDFED_OK;
    int r = png_decode_inner(png, info, &src, out, &dims_rc, name, err);
    png_destroy_read_struct(&png, &info, NULL);
    free(src.rows);
    if (r == 0) return SDFED_OK;
    free(out->pixels);
    out->pixels = NULL;
    if (r == 2) return dims_rc;
    if (strstr(src.message, "out of memory") || strstr(src.message, "Out of memory"))
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: PNG: %s", name, src.message);
    return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: invalid PNG: %s", name, src.message);
}

/* ---- JPEG --------------------------------------------------------------- */

typedef struct {
    struct jpeg_error_mgr pub; /* first: libjpeg sees a jpeg_error_mgr */
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int truncated;
    JSAMPARRAY row; /* one output row (CMYK needs a conversion buffer) */
} jpeg_errors;

static void jpeg_on_error(j_common_ptr cinfo) {
    jpeg_errors *e = (jpeg_errors *)cinfo->err;
    e->pub.format_message(cinfo, e->message);
    longjmp(e->jump, 1);
}

static void jpeg_on_message(j_common_ptr cinfo, int level) {
    jpeg_errors *e = (jpeg_errors *)cinfo->err;
    if (level >= 0) return; /* trace messages */
    e->pub.num_warnings++;
    if (e->pub.msg_code == JWRN_JPEG_EOF) e->truncated = 1;
}

static void jpeg_no_output(j_common_ptr cinfo) { (void)cinfo; }

/* PIL 9.4's cmyk2rgb on PIL's (non-inverted) CMYK. */
static uint8_t muldiv255(int a, int b) {
    int t = a * b + 128;
    return (uint8_t)(((t >> 8) + t) >> 8);
}

static void cmyk_row_to_rgb(const uint8_t *inverted_cmyk, uint8_t *rgb, int width) {
    for (int x = 0; x < width; x++) {
        const uint8_t *p = inverted_cmyk + 4 * x; /* Adobe CMYK is stored inverted */
        int nk = p[3];                            /* 255 - K */
        for (int c = 0; c < 3; c++) {
            int v = nk - muldiv255(255 - p[c], nk);
            rgb[3 * x + c] = (uint8_t)(v < 0 ? 0 : v);
        }
    }
}

/* Everything that may longjmp; returns 0, 1 after a libjpeg error (message in
 * e), 2 with *other_rc set for failures of our own. */
static int jpeg_decode_inner(struct jpeg_decompress_struct *cinfo, jpeg_errors *e, const uint8_t *data, size_t size,
                             decoded *out, int *other_rc, const char *name, sdfed_error *err) {
    if (setjmp(e->jump)) return 1;
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, data, (unsigned long)size);
    jpeg_read_header(cinfo, TRUE);
    *other_rc = check_dims(name, "JPEG", cinfo->image_width, cinfo->image_height, err);
    if (*other_rc != SDFED_OK) return 2;
    int cmyk = 0;
    switch (cinfo->num_components) { /* as PIL: by component count */
    case 1: cinfo->out_color_space = JCS_GRAYSCALE; break;
    case 3: cinfo->out_color_space = JCS_RGB; break;
    case 4:
        cinfo->out_color_space = JCS_CMYK;
        cmyk = 1;
        break;
    default:
        *other_rc = sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "%s: JPEG with %d components is not supported", name,
                               cinfo->num_components);
        return 2;
    }
    jpeg_start_decompress(cinfo);
    int w = (int)cinfo->output_width, h = (int)cinfo->output_height;
    int channels = cmyk ? 3 : cinfo->output_components;
    if (channels != 1 && channels != 3) {
        *other_rc =
            sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "%s: JPEG decodes to %d components", name, cinfo->output_components);
        return 2;
    }
    out->width = w;
    out->height = h;
    out->channels = channels;
    size_t rowbytes = (size_t)w * channels;
    out->pixels = malloc(rowbytes * h);
    if (!out->pixels) {
        *other_rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory for %d x %d pixels", name, w, h);
        return 2;
    }
    if (cmyk) /* freed with the decompressor */
        e->row = cinfo->mem->alloc_sarray((j_common_ptr)cinfo, JPOOL_IMAGE, (JDIMENSION)w * 4, 1);
    while (cinfo->output_scanline < cinfo->output_height) {
        uint8_t *dst = out->pixels + (size_t)cinfo->output_scanline * rowbytes;
        JSAMPROW row = cmyk ? e->row[0] : dst;
        if (jpeg_read_scanlines(cinfo, &row, 1) != 1) break;
        if (cmyk) cmyk_row_to_rgb(row, dst, w);
        if (e->truncated) break;
    }
    if (e->truncated) return 1;
    jpeg_finish_decompress(cinfo);
    return 0;
}

static int decode_jpeg(const uint8_t *data, size_t size, const char *name, decoded *out, sdfed_error *err) {
    struct jpeg_decompress_struct cinfo;
    jpeg_errors e;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&e, 0, sizeof e);
    cinfo.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jpeg_on_error;
    e.pub.emit_message = jpeg_on_message;
    e.pub.output_message = jpeg_no_output;
    int other_rc = SDFED_OK;
    int r = jpeg_decode_inner(&cinfo, &e, data, size, out, &other_rc, name, err);
    jpeg_destroy_decompress(&cinfo);
    if (r == 0) return SDFED_OK;
    free(out->pixels);
    out->pixels = NULL;
    if (r == 2) return other_rc;
    if (e.truncated) return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: JPEG file is truncated", name);
    return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: invalid JPEG: %s", name, e.message);
}

/* ---- entry points ------------------------------------------------------- */

int sdfed_image_decode_memory(const uint8_t *data, size_t size, const char *name, uint8_t **pixels, int *width,
                              int *height, int *channels, sdfed_error *err) {
    if (!name) name = "image";
    if (!pixels || !width || !height || !channels)
        return sdfed_fail(err, SDFED_ERR_ARG, "%s: NULL output pointer", name);
    *pixels = NULL;
    if (!data && size > 0) return sdfed_fail(err, SDFED_ERR_ARG, "%s: NULL data", name);
    if (size == 0) return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: file is empty", name);
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    decoded out = {0};
    int rc;
    if (size >= 8 && memcmp(data, png_magic, 8) == 0)
        rc = decode_png(data, size, name, &out, err);
    else if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
        rc = decode_jpeg(data, size, name, &out, err);
    else
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "%s: not a PNG or JPEG image", name);
    if (rc != SDFED_OK) return rc;
    *pixels = out.pixels;
    *width = out.width;
    *height = out.height;
    *channels = out.channels;
    return SDFED_OK;
}

/* Reads the whole file into a malloc'ed buffer. */
static int read_file(const char *path, uint8_t **data, size_t *size, sdfed_error *err) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return sdfed_fail(err, SDFED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 0, n = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (n == cap) {
            if (cap >= SDFED_IMAGE_MAX_FILE_BYTES) {
                free(buf);
                fclose(f);
                return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "%s: file is larger than %zu bytes", path,
                                  SDFED_IMAGE_MAX_FILE_BYTES);
            }
            size_t new_cap = cap ? cap * 2 : (size_t)1 << 16;
            uint8_t *p = realloc(buf, new_cap);
            if (!p) {
                free(buf);
                fclose(f);
                return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory reading the file", path);
            }
            buf = p;
            cap = new_cap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int failed = ferror(f), read_errno = errno;
    fclose(f);
    if (failed) {
        free(buf);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: read error: %s", path, strerror(read_errno));
    }
    *data = buf;
    *size = n;
    return SDFED_OK;
}

int sdfed_image_decode_file(const char *path, uint8_t **pixels, int *width, int *height, int *channels,
                            sdfed_error *err) {
    if (pixels) *pixels = NULL;
    if (!path) return sdfed_fail(err, SDFED_ERR_ARG, "image: NULL path");
    uint8_t *data;
    size_t size;
    int rc = read_file(path, &data, &size, err);
    if (rc != SDFED_OK) return rc;
    rc = sdfed_image_decode_memory(data, size, path, pixels, width, height, channels, err);
    free(data);
    return rc;
}

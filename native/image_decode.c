/* PNG/JPEG decoding on the host: reads a file through a stream (or bytes in
 * memory), recognises the format by its magic bytes and decodes it with
 * libpng or libjpeg row by row into packed 8-bit grey or RGB rows:
 * transparency composited, a JPEG's EXIF orientation applied, a very large
 * image reduced on the way; every library error becomes a status and a
 * message. See image_decode.h for what matches PIL and what does not. */
#include "native/image_decode.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "clip/image_composite.h"
#include "clip/image_preprocess.h"
#include "native/image_exif.h"
#include "native/image_reduce.h"

native_image_decode_options native_image_decode_defaults(const uint8_t background[3]) {
    native_image_decode_options o = {.background = {255, 255, 255}, .max_pixels = SDFED_IMAGE_MAX_PIXELS};
    if (background) memcpy(o.background, background, sizeof o.background);
    return o;
}

/* Where the bytes come from: a file (read through its FILE *) or memory. */
typedef struct byte_source {
    FILE *file;
    const uint8_t *data;
    size_t size, pos;
} byte_source;

/* The image being decoded: the reduced rows, placed as the orientation
 * shows them. Owned by the function that declares it, so that it survives a
 * longjmp out of the library. */
typedef struct decoded {
    uint8_t *pixels;
    int width, height, channels;     /* as shown */
    int stored_width, stored_height; /* the rows placed, before turning */
    int orientation;                 /* 1..8 (image_exif.h) */
} decoded;

static int decoded_alloc(decoded *d, int stored_width, int stored_height, int channels, int orientation,
                         const char *name, sdfed_error *err) {
    int turned = orientation >= 5;
    *d = (decoded){
        .width = turned ? stored_height : stored_width,
        .height = turned ? stored_width : stored_height,
        .channels = channels,
        .stored_width = stored_width,
        .stored_height = stored_height,
        .orientation = orientation,
    };
    d->pixels = malloc((size_t)stored_width * (size_t)stored_height * (size_t)channels);
    if (!d->pixels)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory for %d x %d pixels", name, stored_width,
                          stored_height);
    return SDFED_OK;
}

/* An native_image_row_sink: stored row y, where the orientation puts it. */
static void decoded_place_row(void *ctx, int y, const uint8_t *row) {
    decoded *d = ctx;
    size_t ch = (size_t)d->channels;
    if (d->orientation == 1) {
        memcpy(d->pixels + (size_t)y * d->stored_width * ch, row, (size_t)d->stored_width * ch);
        return;
    }
    native_image_row_place place = native_image_exif_row_place(d->orientation, d->stored_width, d->stored_height, y);
    for (int x = 0; x < d->stored_width; x++)
        memcpy(d->pixels + (size_t)(place.first + x * place.step) * ch, row + (size_t)x * ch, ch);
}

/* The reduction factor of an image, or a refusal past SDFED_IMAGE_MAX_FACTOR. */
static int reduction(const char *name, const char *format, unsigned long w, unsigned long h, size_t max_pixels,
                     int *factor, sdfed_error *err) {
    *factor = sdfed_image_reduction_factor(w, h, max_pixels);
    if (*factor > SDFED_IMAGE_MAX_FACTOR)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED,
                          "%s: %s image of %lu x %lu would be reduced by %d for %zu pixels (at most %d)", name, format,
                          w, h, *factor, max_pixels, SDFED_IMAGE_MAX_FACTOR);
    return SDFED_OK;
}

static int too_large(const char *name, const char *format, unsigned long w, unsigned long h, int limit,
                     sdfed_error *err) {
    return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "%s: %s image of %lu x %lu exceeds the limit of %d per side", name,
                      format, w, h, limit);
}

/* ---- PNG ---------------------------------------------------------------- */

typedef struct png_state {
    byte_source *src;
    char message[200];
    png_bytep *rows; /* an interlaced image read whole: row pointers into it */
    uint8_t *row;    /* one row, as libpng gives it */
} png_state;

static void read_png_source(png_structp png, png_bytep out, size_t n) {
    png_state *s = png_get_io_ptr(png);
    byte_source *src = s->src;
    if (src->file) {
        if (fread(out, 1, n, src->file) != n) png_error(png, ferror(src->file) ? "read error" : "file is truncated");
        return;
    }
    if (n > src->size - src->pos) png_error(png, "file is truncated");
    memcpy(out, src->data + src->pos, n);
    src->pos += n;
}

static void png_on_error(png_structp png, png_const_charp message) {
    png_state *s = png_get_error_ptr(png);
    snprintf(s->message, sizeof s->message, "%s", message);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message; /* warnings (bad ancillary chunks, ...) are not failures */
}

/* The rows of an interlaced image that is not reduced, through libpng's
 * own deinterlacing, into out (channels as libpng gives them), then
 * composited in place. */
static void read_png_interlaced(png_structp png, png_state *s, int w, int h, int channels, size_t rowbytes,
                                const uint8_t background[3], decoded *out) {
    size_t pixel = (size_t)(channels > out->channels ? channels : out->channels);
    out->pixels = malloc((size_t)w * (size_t)h * pixel);
    s->rows = malloc(sizeof(png_bytep) * (size_t)h);
    if (!out->pixels || !s->rows) png_error(png, "out of memory for the pixels");
    for (int y = 0; y < h; y++) s->rows[y] = out->pixels + (size_t)y * rowbytes;
    png_read_image(png, s->rows);
    sdfed_composite(out->pixels, channels, (size_t)w * (size_t)h, background, out->pixels);
}

/* Every row in order, or every pass's rows at their places, composited and
 * handed to the reducer. */
static void read_png_rows(png_structp png, png_state *s, int w, int h, int channels, int interlaced,
                          const uint8_t background[3], native_image_reducer *red) {
    if (!interlaced) {
        for (int y = 0; y < h; y++) {
            png_read_row(png, s->row, NULL);
            sdfed_composite(s->row, channels, (size_t)w, background, s->row);
            native_image_reducer_add_row(red, y, s->row);
        }
        return;
    }
    for (int pass = 0; pass < 7; pass++) {
        int pass_w = (int)PNG_PASS_COLS(w, pass), pass_h = (int)PNG_PASS_ROWS(h, pass);
        if (pass_w == 0) continue; /* libpng skips empty passes */
        for (int r = 0; r < pass_h; r++) {
            png_read_row(png, s->row, NULL);
            sdfed_composite(s->row, channels, (size_t)pass_w, background, s->row);
            native_image_reducer_add_pixels(red, (int)PNG_ROW_FROM_PASS_ROW(r, pass), (int)PNG_PASS_START_COL(pass),
                                            (int)PNG_PASS_COL_OFFSET(pass), s->row, pass_w);
        }
    }
    native_image_reducer_finish(red);
}

/* Everything that may longjmp; returns 0, or 1 after a libpng error (the
 * message is in s), or 2 with *other_rc set for failures of our own. */
static int png_decode_inner(png_structp png, png_infop info, png_state *s, const native_image_decode_options *opt,
                            decoded *out, native_image_reducer *red, int *other_rc, const char *name,
                            sdfed_error *err) {
    if (setjmp(png_jmpbuf(png))) return 1;
    png_set_read_fn(png, s, read_png_source);
    png_set_user_limits(png, SDFED_IMAGE_MAX_PNG_SIDE, SDFED_IMAGE_MAX_PNG_SIDE);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int factor;
    if ((*other_rc = reduction(name, "PNG", w, h, opt->max_pixels, &factor, err)) != SDFED_OK) return 2;

    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (depth == 16) png_set_strip_16(png); /* keeps the high byte */
    int interlaced = png_get_interlace_type(png, info) != PNG_INTERLACE_NONE;
    if (interlaced && factor == 1) png_set_interlace_handling(png);
    png_read_update_info(png, info);

    int channels = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (channels < 1 || channels > 4 || png_get_bit_depth(png, info) != 8 || rowbytes != (size_t)w * (size_t)channels)
        png_error(png, "unexpected pixel layout after conversion");
    int out_channels = sdfed_composite_channels(channels, opt->background);
    if (interlaced && factor == 1) {
        *out = (decoded){.width = (int)w, .height = (int)h, .channels = out_channels};
        read_png_interlaced(png, s, (int)w, (int)h, channels, rowbytes, opt->background, out);
        return 0;
    }
    int out_w = (int)((w + factor - 1) / factor), out_h = (int)((h + factor - 1) / factor);
    if ((*other_rc = decoded_alloc(out, out_w, out_h, out_channels, 1, name, err)) != SDFED_OK ||
        (*other_rc = native_image_reducer_init(red, (int)w, (int)h, out_channels, factor, interlaced, decoded_place_row,
                                               out, name, err)) != SDFED_OK)
        return 2;
    /* a row as libpng gives it, then composited in place */
    if (!(s->row = malloc((size_t)w * (size_t)(channels > out_channels ? channels : out_channels))))
        png_error(png, "out of memory for a row");
    read_png_rows(png, s, (int)w, (int)h, channels, interlaced, opt->background, red);
    /* png_read_end is not called: the pixels are complete here, and what
     * follows the image data (text, IEND) does not change them. */
    return 0;
}

/* PNG's IHDR is the first chunk: a refusal of its size names the size
 * (libpng's own limit says only that it is exceeded). */
static int check_png_header(const uint8_t *head, size_t n, const char *name, sdfed_error *err) {
    if (n < 24 || memcmp(head + 12, "IHDR", 4) != 0) return SDFED_OK; /* libpng says what is wrong */
    unsigned long w = png_get_uint_32(head + 16), h = png_get_uint_32(head + 20);
    if (w > SDFED_IMAGE_MAX_PNG_SIDE || h > SDFED_IMAGE_MAX_PNG_SIDE)
        return too_large(name, "PNG", w, h, SDFED_IMAGE_MAX_PNG_SIDE, err);
    return SDFED_OK;
}

static int decode_png(byte_source *src, const uint8_t *head, size_t head_size, const char *name,
                      const native_image_decode_options *opt, decoded *out, sdfed_error *err) {
    int rc = check_png_header(head, head_size, name, err);
    if (rc != SDFED_OK) return rc;
    png_state s = {.src = src};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory starting the PNG decoder", name);
    }
    native_image_reducer red = {0};
    int other_rc = SDFED_OK;
    int r = png_decode_inner(png, info, &s, opt, out, &red, &other_rc, name, err);
    png_destroy_read_struct(&png, &info, NULL);
    native_image_reducer_free(&red);
    free(s.rows);
    free(s.row);
    if (r == 0) return SDFED_OK;
    free(out->pixels);
    out->pixels = NULL;
    if (r == 2) return other_rc;
    if (strstr(s.message, "out of memory") || strstr(s.message, "Out of memory"))
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: PNG: %s", name, s.message);
    return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: invalid PNG: %s", name, s.message);
}

/* ---- JPEG --------------------------------------------------------------- */

typedef struct jpeg_errors {
    struct jpeg_error_mgr pub; /* first: libjpeg sees a jpeg_error_mgr */
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int truncated;
    JSAMPARRAY rows; /* row 0 as decoded, row 1 its CMYK converted to RGB */
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

/* The orientation of the first APP1 "Exif" segment (saved by libjpeg), 1 without one. */
static int jpeg_orientation(j_decompress_ptr cinfo) {
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && memcmp(m->data, "Exif\0\0", 6) == 0)
            return native_image_exif_orientation(m->data, m->data_length);
    return 1;
}

/* Everything that may longjmp; returns 0, 1 after a libjpeg error (message in
 * e), 2 with *other_rc set for failures of our own. */
static int jpeg_decode_inner(struct jpeg_decompress_struct *cinfo, jpeg_errors *e, byte_source *src,
                             const native_image_decode_options *opt, decoded *out, native_image_reducer *red,
                             int *other_rc, const char *name, sdfed_error *err) {
    if (setjmp(e->jump)) return 1;
    jpeg_create_decompress(cinfo);
    if (src->file)
        jpeg_stdio_src(cinfo, src->file);
    else
        jpeg_mem_src(cinfo, src->data, (unsigned long)src->size);
    jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(cinfo, TRUE); /* refuses sides above JPEG_MAX_DIMENSION (65500) */
    int factor;
    *other_rc = reduction(name, "JPEG", cinfo->image_width, cinfo->image_height, opt->max_pixels, &factor, err);
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
    int dct = factor < 8 ? factor : 8; /* libjpeg's scaled decoding does 1/2, 1/4, 1/8 */
    cinfo->scale_num = 1;
    cinfo->scale_denom = (unsigned int)dct;
    jpeg_start_decompress(cinfo);
    int w = (int)cinfo->output_width, h = (int)cinfo->output_height;
    int channels = cmyk ? 3 : cinfo->output_components;
    if (channels != 1 && channels != 3) {
        *other_rc =
            sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "%s: JPEG decodes to %d components", name, cinfo->output_components);
        return 2;
    }
    int rest = factor / dct;
    if ((*other_rc = decoded_alloc(out, (w + rest - 1) / rest, (h + rest - 1) / rest, channels, jpeg_orientation(cinfo),
                                   name, err)) != SDFED_OK ||
        (*other_rc = native_image_reducer_init(red, w, h, channels, rest, 0, decoded_place_row, out, name, err)) !=
            SDFED_OK)
        return 2;
    /* freed with the decompressor */
    e->rows = cinfo->mem->alloc_sarray((j_common_ptr)cinfo, JPOOL_IMAGE, (JDIMENSION)w * 4, 2);
    while (cinfo->output_scanline < cinfo->output_height) {
        int y = (int)cinfo->output_scanline;
        if (jpeg_read_scanlines(cinfo, e->rows, 1) != 1 || e->truncated) break;
        if (cmyk) cmyk_row_to_rgb(e->rows[0], e->rows[1], w);
        native_image_reducer_add_row(red, y, e->rows[cmyk ? 1 : 0]);
    }
    if (e->truncated) return 1;
    jpeg_finish_decompress(cinfo);
    return 0;
}

static int decode_jpeg(byte_source *src, const char *name, const native_image_decode_options *opt, decoded *out,
                       sdfed_error *err) {
    struct jpeg_decompress_struct cinfo;
    jpeg_errors e;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&e, 0, sizeof e);
    cinfo.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jpeg_on_error;
    e.pub.emit_message = jpeg_on_message;
    e.pub.output_message = jpeg_no_output;
    native_image_reducer red = {0};
    int other_rc = SDFED_OK;
    int r = jpeg_decode_inner(&cinfo, &e, src, opt, out, &red, &other_rc, name, err);
    unsigned long w = cinfo.image_width, h = cinfo.image_height;
    jpeg_destroy_decompress(&cinfo);
    native_image_reducer_free(&red);
    if (r == 0) return SDFED_OK;
    free(out->pixels);
    out->pixels = NULL;
    if (r == 2) return other_rc;
    if (e.pub.msg_code == JERR_IMAGE_TOO_BIG) return too_large(name, "JPEG", w, h, SDFED_IMAGE_MAX_JPEG_SIDE, err);
    if (e.truncated) return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: JPEG file is truncated", name);
    if (e.pub.msg_code == JERR_OUT_OF_MEMORY) /* the host's trouble now, not the file's */
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: JPEG: out of memory (%s)", name, e.message);
    return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: invalid JPEG: %s", name, e.message);
}

/* ---- entry points ------------------------------------------------------- */

/* How many bytes the format checks look at: PNG's signature and IHDR size. */
#define HEAD_BYTES 24

/* The options to decode with: the caller's, or the defaults for NULL. */
static int options_of(const native_image_decode_options *options, native_image_decode_options *out, const char *name,
                      sdfed_error *err) {
    *out = options ? *options : native_image_decode_defaults(NULL);
    if (out->max_pixels < 1) return sdfed_fail(err, SDFED_ERR_ARG, "%s: options.max_pixels must be at least 1", name);
    return SDFED_OK;
}

/* head: the first head_size bytes of what src gives (src still at its start). */
static int decode(byte_source *src, const uint8_t *head, size_t head_size, const char *name,
                  const native_image_decode_options *opt, uint8_t **pixels, int *width, int *height, int *channels,
                  sdfed_error *err) {
    if (head_size == 0) return sdfed_fail(err, SDFED_ERR_FORMAT, "%s: file is empty", name);
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    decoded out = {0};
    int rc;
    if (head_size >= 8 && memcmp(head, png_magic, 8) == 0)
        rc = decode_png(src, head, head_size, name, opt, &out, err);
    else if (head_size >= 3 && head[0] == 0xff && head[1] == 0xd8 && head[2] == 0xff)
        rc = decode_jpeg(src, name, opt, &out, err);
    else
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "%s: not a PNG or JPEG image", name);
    if (rc != SDFED_OK) return rc;
    *pixels = out.pixels;
    *width = out.width;
    *height = out.height;
    *channels = out.channels;
    return SDFED_OK;
}

int native_image_decode_memory(const uint8_t *data, size_t size, const char *name,
                               const native_image_decode_options *options, uint8_t **pixels, int *width, int *height,
                               int *channels, sdfed_error *err) {
    if (!name) name = "image";
    if (!pixels || !width || !height || !channels)
        return sdfed_fail(err, SDFED_ERR_ARG, "%s: NULL output pointer", name);
    *pixels = NULL;
    if (!data && size > 0) return sdfed_fail(err, SDFED_ERR_ARG, "%s: NULL data", name);
    native_image_decode_options opt;
    int rc = options_of(options, &opt, name, err);
    if (rc != SDFED_OK) return rc;
    byte_source src = {.data = data, .size = size};
    return decode(&src, data, size < HEAD_BYTES ? size : HEAD_BYTES, name, &opt, pixels, width, height, channels, err);
}

int native_image_decode_file(const char *path, const native_image_decode_options *options, uint8_t **pixels, int *width,
                             int *height, int *channels, sdfed_error *err) {
    if (pixels) *pixels = NULL;
    if (!path) return sdfed_fail(err, SDFED_ERR_ARG, "image: NULL path");
    if (!pixels || !width || !height || !channels)
        return sdfed_fail(err, SDFED_ERR_ARG, "%s: NULL output pointer", path);
    native_image_decode_options opt;
    int rc = options_of(options, &opt, path, err);
    if (rc != SDFED_OK) return rc;
    FILE *f = fopen(path, "rb");
    if (!f) return sdfed_fail(err, SDFED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t head[HEAD_BYTES];
    size_t n = fread(head, 1, sizeof head, f);
    if (ferror(f))
        rc = sdfed_fail(err, SDFED_ERR_IO, "%s: read error: %s", path, strerror(errno));
    else if (fseek(f, 0, SEEK_SET) != 0)
        rc = sdfed_fail(err, SDFED_ERR_IO, "%s: cannot read from the start again: %s", path, strerror(errno));
    else {
        byte_source src = {.file = f};
        rc = decode(&src, head, n, path, &opt, pixels, width, height, channels, err);
    }
    fclose(f);
    return rc;
}

/* Box reduction of decoded pixels, streamed (see image_reduce.h). */
#include "native/image_reduce.h"

#include <stdlib.h>
#include <string.h>

int native_image_reducer_init(native_image_reducer *r, int width, int height, int channels, int factor, int any_order,
                              native_image_row_sink sink, void *sink_ctx, const char *name, sdfed_error *err) {
    *r = (native_image_reducer){
        .width = width,
        .height = height,
        .channels = channels,
        .factor = factor,
        .out_width = (width + factor - 1) / factor,
        .out_height = (height + factor - 1) / factor,
        .any_order = any_order,
        .sink = sink,
        .sink_ctx = sink_ctx,
    };
    if (factor == 1 && !any_order) return SDFED_OK; /* rows go straight through */
    size_t row_values = (size_t)r->out_width * (size_t)channels;
    size_t rows_held = any_order ? (size_t)r->out_height : 1;
    r->sums = calloc(row_values * rows_held, sizeof *r->sums);
    r->row = malloc(row_values);
    if (!r->sums || !r->row) {
        native_image_reducer_free(r);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory for the sums of %d x %d reduced pixels", name,
                          r->out_width, any_order ? r->out_height : 1);
    }
    return SDFED_OK;
}

void native_image_reducer_add_pixels(native_image_reducer *r, int y, int x0, int dx, const uint8_t *pixels, int n) {
    int ch = r->channels, f = r->factor;
    size_t row_values = (size_t)r->out_width * (size_t)ch;
    uint32_t *sums_y = r->sums + (r->any_order ? (size_t)(y / f) * row_values : 0);
    for (int i = 0; i < n; i++) {
        uint32_t *sum = sums_y + (size_t)((x0 + i * dx) / f) * ch;
        const uint8_t *p = pixels + (size_t)i * ch;
        for (int c = 0; c < ch; c++) sum[c] += p[c];
    }
}

/* PIL's division_UINT32(n, 8): 2^32 / (256 n) in float, truncated. */
static uint32_t pil_multiplier(uint32_t n) { return (uint32_t)(4294967296.0f / (float)(256u * n)); }

/* Output row oy from its sums (zeroed for the next block row), handed on. */
static void emit(native_image_reducer *r, int oy, uint32_t *sums) {
    int ch = r->channels, f = r->factor;
    int rows = r->height - oy * f < f ? r->height - oy * f : f;
    int last_cols = r->width - (r->out_width - 1) * f;
    uint32_t full = (uint32_t)(rows * f), edge = (uint32_t)(rows * last_cols);
    uint32_t full_m = pil_multiplier(full), edge_m = pil_multiplier(edge);
    for (int x = 0; x < r->out_width; x++) {
        int is_edge = x == r->out_width - 1;
        uint32_t n = is_edge ? edge : full, m = is_edge ? edge_m : full_m;
        for (int c = 0; c < ch; c++) {
            size_t at = (size_t)x * ch + c;
            r->row[at] = (uint8_t)(((uint64_t)(sums[at] + n / 2) * m) >> 24);
            sums[at] = 0;
        }
    }
    r->sink(r->sink_ctx, oy, r->row);
}

void native_image_reducer_add_row(native_image_reducer *r, int y, const uint8_t *row) {
    if (!r->sums) {
        r->sink(r->sink_ctx, y, row);
        return;
    }
    native_image_reducer_add_pixels(r, y, 0, 1, row, r->width);
    if ((y + 1) % r->factor == 0 || y + 1 == r->height) emit(r, y / r->factor, r->sums);
}

void native_image_reducer_finish(native_image_reducer *r) {
    size_t row_values = (size_t)r->out_width * (size_t)r->channels;
    for (int oy = 0; oy < r->out_height; oy++) emit(r, oy, r->sums + (size_t)oy * row_values);
}

void native_image_reducer_free(native_image_reducer *r) {
    free(r->sums);
    free(r->row);
    r->sums = NULL;
    r->row = NULL;
}

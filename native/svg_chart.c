/* Accuracy charts as SVG text (see svg_chart.h). */
#include "native/svg_chart.h"

#include <stdarg.h>
#include <stdio.h>

typedef struct out {
    sdfed_sink sink;
    int failed;
} out;

static void put(out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(out *o, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof text) {
        o->failed = 1;
        return;
    }
    if (!o->failed && o->sink.write(o->sink.ctx, text, (size_t)n)) o->failed = 1;
}

/* the plot's coordinates of point i and of value v */
static double x_of(const svg_chart *c, int i) {
    double pw = c->width - c->left - c->right;
    return c->left + (c->n > 1 ? pw * i / (c->n - 1) : pw / 2);
}

static double y_of(const svg_chart *c, double v) {
    double ph = c->height - c->top - c->bottom;
    return c->top + ph * (1.0 - v);
}

int svg_chart_write(sdfed_buffer *b, const svg_chart *c, sdfed_error *err) {
    out o = {.sink = sdfed_buffer_sink(b), .failed = 0};
    double pw = c->width - c->left - c->right;
    if (c->standalone)
        put(&o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
            "font-size=\"%d\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            c->width, c->height, c->font_size);
    else
        put(&o, "<svg width=\"%g\" height=\"%g\" font-size=\"%d\">\n", c->width, c->height, c->font_size);
    if (c->title) put(&o, "<text x=\"%g\" y=\"22\" font-size=\"14\">%s</text>\n", c->left, c->title);
    for (int p = 0; p <= 100; p += 20) {
        put(&o, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>", c->left, y_of(c, p / 100.0),
            c->width - c->right, y_of(c, p / 100.0));
        put(&o, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%d%%</text>\n", c->left - 6, y_of(c, p / 100.0) + 4, p);
    }
    if (c->x_label)
        put(&o, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", c->left + pw / 2, c->height - 12,
            c->x_label);
    if (c->band_low && c->band_high) {
        put(&o, "<polygon fill=\"#9ecae1\" fill-opacity=\"0.5\" points=\"");
        for (int i = 0; i < c->n; i++) put(&o, "%.1f,%.1f ", x_of(c, i), y_of(c, c->band_high[i]));
        for (int i = c->n - 1; i >= 0; i--) put(&o, "%.1f,%.1f ", x_of(c, i), y_of(c, c->band_low[i]));
        put(&o, "\"/>\n");
    }
    put(&o, "<polyline fill=\"none\" stroke=\"#08519c\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < c->n; i++) put(&o, "%.1f,%.1f ", x_of(c, i), y_of(c, c->line[i]));
    put(&o, "\"/>\n");
    if (c->legend)
        put(&o, "<text x=\"%g\" y=\"%g\" fill=\"#08519c\">%s</text>\n", c->left + 8, c->top + 14, c->legend);
    put(&o, "</svg>\n");
    return o.failed ? sdfed_fail(err, SDFED_ERR_NOMEM, "chart: out of memory") : SDFED_OK;
}

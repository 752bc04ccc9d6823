/* Accuracy charts as SVG text (see svg_chart.h). */
#include "native/svg_chart.h"

/* the plot's coordinates of point i and of value v */
static double x_of(const native_svg_chart *c, int i) {
    double pw = c->width - c->left - c->right;
    return c->left + (c->n > 1 ? pw * i / (c->n - 1) : pw / 2);
}

static double y_of(const native_svg_chart *c, double v) {
    double ph = c->height - c->top - c->bottom;
    return c->top + ph * (1.0 - v / (c->y_max > 0 ? c->y_max : 1.0));
}

int native_svg_chart_write(sdfed_buffer *b, const native_svg_chart *c, sdfed_error *err) {
    sdfed_sink sink = sdfed_buffer_sink(b);
    int failed = 0;
    double pw = c->width - c->left - c->right;
    if (c->standalone)
        failed |= sdfed_sink_printf(
            sink,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
            "font-size=\"%d\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            c->width, c->height, c->font_size);
    else
        failed |= sdfed_sink_printf(sink, "<svg viewBox=\"0 0 %g %g\" width=\"%g\" height=\"%g\" font-size=\"%d\">\n",
                                    c->width, c->height, c->width, c->height, c->font_size);
    if (c->title)
        failed |= sdfed_sink_printf(sink, "<text x=\"%g\" y=\"22\" font-size=\"14\">%s</text>\n", c->left, c->title);
    double top = c->y_max > 0 ? c->y_max : 1.0;
    for (int p = 0; p <= 100; p += 20) {
        double v = top * p / 100.0;
        failed |= sdfed_sink_printf(sink, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>", c->left,
                                    y_of(c, v), c->width - c->right, y_of(c, v));
        if (c->y_max > 0)
            failed |= sdfed_sink_printf(sink, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%g</text>\n", c->left - 6,
                                        y_of(c, v) + 4, v);
        else
            failed |= sdfed_sink_printf(sink, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%d%%</text>\n", c->left - 6,
                                        y_of(c, v) + 4, p);
    }
    if (c->x_label)
        failed |= sdfed_sink_printf(sink, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n",
                                    c->left + pw / 2, c->height - 12, c->x_label);
    if (c->band_low && c->band_high) {
        failed |= sdfed_sink_printf(sink, "<polygon fill=\"#9ecae1\" fill-opacity=\"0.5\" points=\"");
        for (int i = 0; i < c->n; i++)
            failed |= sdfed_sink_printf(sink, "%.1f,%.1f ", x_of(c, i), y_of(c, c->band_high[i]));
        for (int i = c->n - 1; i >= 0; i--)
            failed |= sdfed_sink_printf(sink, "%.1f,%.1f ", x_of(c, i), y_of(c, c->band_low[i]));
        failed |= sdfed_sink_printf(sink, "\"/>\n");
    }
    failed |= sdfed_sink_printf(sink, "<polyline fill=\"none\" stroke=\"#08519c\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < c->n; i++) failed |= sdfed_sink_printf(sink, "%.1f,%.1f ", x_of(c, i), y_of(c, c->line[i]));
    failed |= sdfed_sink_printf(sink, "\"/>\n");
    if (c->legend)
        failed |= sdfed_sink_printf(sink, "<text x=\"%g\" y=\"%g\" fill=\"#08519c\">%s</text>\n", c->left + 8,
                                    c->top + 14, c->legend);
    failed |= sdfed_sink_printf(sink, "</svg>\n");
    return failed ? sdfed_fail(err, SDFED_ERR_NOMEM, "chart: out of memory") : SDFED_OK;
}

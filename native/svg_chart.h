/* The one SVG chart writer of native programs: accuracy (0..1) over rounds
 * as a line, optionally with a band (worst to best client), on a 0..100%
 * grid; or any values from 0 to y_max (the grid labelled in their unit).
 * The simulator's accuracy.svg and the aggregator's /status.html (accuracy,
 * and the devices' step time against local prompt length) use it. */
#ifndef SDFED_NATIVE_SVG_CHART_H
#define SDFED_NATIVE_SVG_CHART_H

#include "base/io.h"
#include "base/status.h"

typedef struct native_svg_chart {
    double width, height;               /* of the whole picture */
    double left, right, top, bottom;    /* margins around the plot */
    int font_size;                      /* of the labels; the title is 14 */
    int standalone;                     /* 1: a file (xmlns, white background, sans-serif); 0: inline in HTML
                                           (with a viewBox, so that CSS can scale it to a narrow screen) */
    const char *title;                  /* above the plot, or NULL (text, escaped by the caller) */
    const char *x_label;                /* under the plot, or NULL */
    const char *legend;                 /* inside the plot's top left, in the line's colour, or NULL */
    int n;                              /* points */
    const double *line;                 /* (n) values in 0..1 */
    const double *band_low, *band_high; /* (n) each, or both NULL */
    double y_max; /* 0: the values are fractions, the grid 0..100%; else 0..y_max, unlabelled units */
} native_svg_chart;

/* Appends the chart to b; SDFED_ERR_NOMEM (b may then hold part of it, which
 * the caller discards) when the buffer cannot grow. */
int native_svg_chart_write(sdfed_buffer *b, const native_svg_chart *c, sdfed_error *err);

#endif

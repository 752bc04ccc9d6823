/* Alpha composited onto a background colour, in integers (see
 * image_composite.h for the formula and the layouts). */
#include "clip/image_composite.h"

#include <assert.h>
#include <string.h>

/* One colour sample c of alpha a over the background's sample bg. */
static uint8_t over(int c, int a, int bg) { return (uint8_t)((c * a + bg * (255 - a) + 127) / 255); }

static int grey_background(const uint8_t background[3]) {
    return background[0] == background[1] && background[1] == background[2];
}

int sdfed_composite_channels(int channels, const uint8_t background[3]) {
    assert(channels >= 1 && channels <= 4);
    if (channels == 2) return grey_background(background) ? 1 : 3;
    return channels == 1 ? 1 : 3;
}

void sdfed_composite(const uint8_t *in, int channels, size_t n, const uint8_t background[3], uint8_t *out) {
    int out_channels = sdfed_composite_channels(channels, background);
    if (channels == 1 || channels == 3) { /* nothing to blend */
        if (out != in) memcpy(out, in, n * (size_t)channels);
        return;
    }
    /* pixel i is read whole before out's pixel i is written; in place,
     * narrower pixels are written from the first on and wider ones (grey+
     * alpha to RGB) from the last, so that no pixel is overwritten before
     * it is read */
    int backwards = out_channels > channels;
    for (size_t k = 0; k < n; k++) {
        size_t i = backwards ? n - 1 - k : k;
        const uint8_t *p = in + i * (size_t)channels;
        uint8_t *q = out + i * (size_t)out_channels;
        int a = p[channels - 1];
        int r = p[0], g = channels == 4 ? p[1] : p[0], b = channels == 4 ? p[2] : p[0];
        if (out_channels == 1) {
            q[0] = over(r, a, background[0]);
        } else {
            q[0] = over(r, a, background[0]);
            q[1] = over(g, a, background[1]);
            q[2] = over(b, a, background[2]);
        }
    }
}

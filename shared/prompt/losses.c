/* Forward and backward passes of the objective pieces. */
#include "prompt/losses.h"

#include <math.h>
#include <stddef.h>

void sdfed_logits_forward(float *logits, const float *img, const float *f, int B, int C, int D, float scale) {
    for (int b = 0; b < B; b++) {
        const float *x = img + (size_t)b * D;
        for (int c = 0; c < C; c++) {
            const float *w = f + (size_t)c * D;
            float sum = 0.0f;
            for (int d = 0; d < D; d++) sum += x[d] * w[d];
            logits[(size_t)b * C + c] = scale * sum;
        }
    }
}

void sdfed_logits_backward(float *d_f, const float *d_logits, const float *img, int B, int C, int D, float scale) {
    for (int b = 0; b < B; b++) {
        const float *x = img + (size_t)b * D;
        for (int c = 0; c < C; c++) {
            float g = scale * d_logits[(size_t)b * C + c];
            float *w = d_f + (size_t)c * D;
            for (int d = 0; d < D; d++) w[d] += g * x[d];
        }
    }
}

int sdfed_softmax_forward(float *p, const float *z, int C, double *sum) {
    int best = 0;
    for (int c = 1; c < C; c++)
        if (z[c] > z[best]) best = c;
    double s = 0.0;
    for (int c = 0; c < C; c++) s += exp((double)z[c] - z[best]);
    for (int c = 0; c < C; c++) p[c] = (float)(exp((double)z[c] - z[best]) / s);
    if (sum) *sum = s;
    return best;
}

double sdfed_cross_entropy_forward(float *probs, const float *logits, const int32_t *labels, int B, int C,
                                   int *correct) {
    double loss = 0.0;
    int right = 0;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * C;
        double sum;
        int best = sdfed_softmax_forward(probs + (size_t)b * C, z, C, &sum);
        /* -log softmax(z)[label] = log(sum) + z[best] - z[label] */
        loss += log(sum) + z[best] - z[labels[b]];
        right += best == labels[b];
    }
    if (correct) *correct = right;
    return loss / B;
}

void sdfed_cross_entropy_backward(float *d_logits, const float *probs, const int32_t *labels, int B, int C,
                                  float weight) {
    float w = weight / (float)B;
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            d_logits[(size_t)b * C + c] = w * (probs[(size_t)b * C + c] - (c == labels[b] ? 1.0f : 0.0f));
}

double sdfed_stretch_forward(const float *a, const float *target, int n, int sum) {
    double total = 0.0;
    for (int i = 0; i < n; i++) total += ((double)a[i] - target[i]) * ((double)a[i] - target[i]);
    return sum ? total : total / n;
}

void sdfed_stretch_backward(float *d_a, const float *a, const float *target, int n, int sum, float weight) {
    float w = sum ? 2.0f * weight : 2.0f * weight / (float)n;
    for (int i = 0; i < n; i++) d_a[i] += w * (a[i] - target[i]);
}

double sdfed_separation_forward(float *dist, const float *a, const float *b, int C, int D, float gamma) {
    double sum = 0.0;
    for (int k = 0; k < C; k++) {
        double ss = 0.0;
        for (int d = 0; d < D; d++) {
            double diff = (double)a[(size_t)k * D + d] - b[(size_t)k * D + d];
            ss += diff * diff;
        }
        dist[k] = (float)sqrt(ss);
        if (gamma > dist[k]) sum += gamma - sqrt(ss);
    }
    return sum / C;
}

void sdfed_separation_backward(float *d_a, float *d_b, const float *a, const float *b, const float *dist, int C, int D,
                               float gamma, float weight) {
    // d/da relu(gamma - ||a - b||) = -(a - b) / ||a - b|| inside the hinge
    for (int k = 0; k < C; k++) {
        if (!(gamma > dist[k]) || dist[k] == 0.0f) continue;
        float g = weight / ((float)C * dist[k]);
        for (int d = 0; d < D; d++) {
            float diff = a[(size_t)k * D + d] - b[(size_t)k * D + d];
            if (d_a) d_a[(size_t)k * D + d] -= g * diff;
            if (d_b) d_b[(size_t)k * D + d] += g * diff;
        }
    }
}

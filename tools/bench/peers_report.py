#!/usr/bin/python3
"""docs/performance.md's table and chart from peers.sh's lines ("bench
image-features MODEL WEIGHTS THREADS: sdfed X img/s, PEER Y img/s, ratio R;
minimal harness Z img/s, ..." (Z: ONNX Runtime's own check, absent from older
logs; its median over the runs that have it),
and "bench q8_0-activations MODEL THREADS PLACE: f32 A img/s, int8 B img/s,
ratio B/A" for sdfed's Q8_0 on f32 activations), one or more logs of runs:
each figure's median over the runs (of X, of Y, and of the ratio, each on
its own). Prints the markdown table; writes the SVG chart (images per second
on a log scale, sdfed next to ONNX Runtime for each model, place, weights
and thread count, and sdfed's Q8_0 on f32 activations beside Q8_0 / int8).

  peers_report.py --svg OUT.svg LOG [LOG...]
"""
import argparse
import math
import re
import statistics

LINE = re.compile(r"^bench image-features (\S+) (\S+) (\d+): sdfed ([\d.]+) img/s, (onnxruntime-\w+) ([\d.]+) img/s, "
                  r"ratio ([\d.]+)(?:; minimal harness ([\d.]+) img/s)?")
ACTIVATIONS = re.compile(r"^bench q8_0-activations (\S+) (\d+) (native|chromium): f32 ([\d.]+) img/s, int8 ([\d.]+) "
                         r"img/s, ratio ([\d.]+)")
PEER = {"native": "onnxruntime-node", "chromium": "onnxruntime-web"}
PLACE = {"onnxruntime-web": "Chromium", "onnxruntime-node": "native"}


def read(logs):
    """{(model, place, weights, threads, peer): [x, y, ratio, runs, f32 activations, int8 / them, minimal]} (None,
    None for the two activations' without a q8_0-activations line; minimal None without a minimal harness figure)"""
    runs, activations, minimal = {}, {}, {}
    for log in logs:
        with open(log, encoding="utf-8") as f:
            for line in f:
                if m := LINE.match(line):
                    model, weights, threads, x, peer, y, r, z = m.groups()
                    key = (model, PLACE[peer], weights, int(threads), peer)
                    runs.setdefault(key, []).append((float(x), float(y), float(r)))
                    if z:
                        minimal.setdefault(key, []).append(float(z))
                elif m := ACTIVATIONS.match(line):
                    model, threads, place, a, _, r = m.groups()
                    peer = PEER[place]
                    activations.setdefault((model, PLACE[peer], "q8_0/int8", int(threads), peer), []).append(
                        (float(a), float(r)))
    order = lambda k: (k[0] != "tiny", k[1] != "Chromium", k[2] != "f32", k[3])  # noqa: E731
    median = lambda v, i: statistics.median(x[i] for x in v)  # noqa: E731
    return {k: [median(runs[k], i) for i in range(3)] + [len(runs[k])] +
            ([median(activations[k], 0), median(activations[k], 1)] if k in activations else [None, None]) +
            [statistics.median(minimal[k]) if k in minimal else None]
            for k in sorted(runs, key=order)}


def chart(path, rows):
    W, H, left, right, top, bottom = 960, 470, 60, 110, 40, 160
    lo, hi = 0.1, 10000.0
    n = len(rows)
    pw, ph = W - left - right, H - top - bottom
    y = lambda v: top + ph * (1 - (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))  # noqa
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
             f'font-size="11">', '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{left}" y="22" font-size="14">Images per second, one at a time (log scale): sdfed (dark), '
             f'ONNX Runtime (light), sdfed Q8_0 on f32 activations (grey)</text>']
    for e in range(-1, 5):
        parts.append(f'<line x1="{left}" y1="{y(10 ** e):.1f}" x2="{W - right}" y2="{y(10 ** e):.1f}" '
                     f'stroke="#ddd"/><text x="{left - 6}" y="{y(10 ** e) + 4:.1f}" text-anchor="end">'
                     f'{10 ** e:g}</text>')
    slot = pw / max(n, 1)
    for i, ((model, place, weights, threads, _), (x, yv, r, _, act, _, _)) in enumerate(rows.items()):
        x0 = left + i * slot + slot * 0.1
        bw = slot * 0.27
        bars = ((x, "#08519c"), (yv, "#9ecae1")) + (((act, "#bdbdbd"),) if act else ())
        for j, (v, colour) in enumerate(bars):
            parts.append(f'<rect x="{x0 + j * bw:.1f}" y="{y(v):.1f}" width="{bw:.1f}" '
                         f'height="{top + ph - y(v):.1f}" fill="{colour}"/>')
        cx = x0 + bw
        parts.append(f'<text x="{cx:.1f}" y="{y(max(x, yv)) - 4:.1f}" text-anchor="middle" font-size="10">'
                     f'{r:.2f}x</text>')
        label = f"{model} {place} {'f32' if weights == 'f32' else 'Q8_0/int8'} {threads}t"
        parts.append(f'<text transform="translate({cx:.1f},{top + ph + 8}) rotate(40)" font-size="10">{label}</text>')
    parts.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--svg", required=True)
    p.add_argument("logs", nargs="+")
    a = p.parse_args()
    rows = read(a.logs)
    chart(a.svg, rows)
    print("| model | where | weights | threads | sdfed img/s | ONNX Runtime img/s | sdfed / ORT | runs "
          "| sdfed Q8_0 on f32 activations img/s (integer / it) | ORT's minimal harness img/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rate = lambda v: f"{v:.0f}" if v >= 100 else f"{v:.3g}"  # noqa: E731
    for (model, place, weights, threads, peer), (x, y, r, runs, act, gain, z) in rows.items():
        act = f"{rate(act)} ({gain:.2f}x)" if act else ""
        print(f"| {model} | {place} ({peer}) | {weights} | {threads} | {rate(x)} | {rate(y)} | {r:.2f} | {runs} "
              f"| {act} | {rate(z) if z else ''} |")


if __name__ == "__main__":
    main()

"""numpy's side of the aggregation benchmark (tools/bench/aggregate.sh).

Reads the updates, weights and previous global that build/bench_aggregate
wrote into DIR, times numpy doing each rule on them (median of REPEATS, one
untimed warm-up), and compares numpy's result with sdfed's (out_RULE.f32):
    aggregate_numpy.py DIR N P [REPEATS]
One line per rule: "rule=NAME numpy_ms=MS max_diff=D" (D: the largest
|numpy - sdfed| over the coordinates; "-" for the rule with noise, whose draws
differ). The numpy forms, each the fastest of the usual ways to say it:
  mean             w @ rows with w the normalised float32 weights (BLAS sgemv),
                   or np.average(rows, axis=0, weights=w), whichever is faster
  median           np.median(rows, axis=0) (introselect per column)
  trimmed_mean     np.partition at the two cut ranks, then the middle's mean
  mean_clip        each change's norm, rows scaled toward previous, then the mean
  mean_clip_noise  the same plus Gaussian noise of sd clip / n
"""
import argparse
import time

import numpy as np

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("dir", metavar="DIR", help="what build/bench_aggregate wrote")
parser.add_argument("n", metavar="N", type=int, help="the updates")
parser.add_argument("size", metavar="P", type=int, help="the values of an update")
parser.add_argument("repeats", metavar="REPEATS", type=int, nargs="?", default=5, help="timed runs of each rule")
args = parser.parse_args()
directory, n, size, repeats = args.dir, args.n, args.size, args.repeats
rows = np.fromfile(f"{directory}/updates.f32", dtype="<f4").reshape(n, size)
weights = np.fromfile(f"{directory}/weights.f64", dtype="<f8")
previous = np.fromfile(f"{directory}/previous.f32", dtype="<f4")
clip_norm = float(open(f"{directory}/clip_norm.txt").read())
w32 = (weights / weights.sum()).astype(np.float32)
cut = int(np.floor(0.1 * n))
rng = np.random.default_rng(7)


def mean_gemv(r):
    return w32 @ r


def mean_average(r):
    return np.average(r, axis=0, weights=w32)


def median(r):
    return np.median(r, axis=0)


def trimmed_mean(r):
    if cut == 0:
        return r.mean(axis=0, dtype=np.float64).astype(np.float32)
    middle = np.partition(r, (cut, n - cut - 1), axis=0)[cut : n - cut]
    return middle.mean(axis=0, dtype=np.float64).astype(np.float32)


def clipped(r):
    change = r - previous
    norms = np.sqrt(np.einsum("ij,ij->i", change, change, dtype=np.float64))
    scale = np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300)).astype(np.float32)
    return previous + change * scale[:, None]


def mean_clip(r):
    return w32 @ clipped(r)


def mean_clip_noise(r):
    return mean_clip(r) + (clip_norm / n) * rng.standard_normal(size, dtype=np.float32)


def timed(fn):
    fn(rows)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn(rows)
        times.append(time.perf_counter() - t)
    return 1e3 * sorted(times)[len(times) // 2], result


rules = {
    "mean": (mean_gemv, mean_average),
    "median": (median,),
    "trimmed_mean": (trimmed_mean,),
    "mean_clip": (mean_clip,),
    "mean_clip_noise": (mean_clip_noise,),
}
for name, forms in rules.items():
    ms, result = min((timed(fn) for fn in forms), key=lambda t: t[0])
    ours = np.fromfile(f"{directory}/out_{name}.f32", dtype="<f4")
    diff = "-" if name == "mean_clip_noise" else f"{float(np.max(np.abs(result - ours))):.3g}"
    print(f"rule={name} numpy_ms={ms:.3f} max_diff={diff}", flush=True)

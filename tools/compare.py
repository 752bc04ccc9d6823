#!/usr/bin/python3
"""Runs every method of a setting over several seeds with `sdfed sim` and
writes the comparison: a markdown table of the final accuracy (mean ± std
over seeds, the form of the papers' tables) and a chart of every method's
mean accuracy over rounds.

  tools/compare.py --task tasks/fmnist-pathological.json [--seeds 5]
                   [--methods zeroshot,coop,...] [--jobs 2] [--out DIR]

Runs go two at a time by default (this machine has 2 cores), each with one
OpenBLAS thread. The first run fills the feature cache before the others
start. Outputs in DIR (default build/compare/<task name>): one folder per
run (results.json, accuracy.svg), table.md, accuracy.svg.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import time

METHODS = ["zeroshot", "coop", "promptfl", "promptfolio", "fedpha", "fedot", "sdfed"]
ABLATIONS = ["sdfed", "sdfed-nofilter", "sdfed-nostretch", "sdfed-noseparation"]
COLOURS = ["#636363", "#e6550d", "#fdae6b", "#31a354", "#756bb1", "#9e9ac8", "#08519c", "#3182bd", "#6baed6",
           "#c6dbef"]


def run(sdfed, task, method, seed, out, env):
    folder = os.path.join(out, f"{method}-seed{seed}")
    cmd = [sdfed, "sim", "--task", task, "--method", method, "--seed", str(seed), "--out", folder]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    with open(os.path.join(out, f"{method}-seed{seed}.log"), "w") as log:
        log.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}")
    with open(os.path.join(folder, "results.json")) as f:
        return method, seed, json.load(f), time.time() - started


def chart(path, title, curves):
    """curves: [(name, [accuracy per round])], accuracies in [0, 1]."""
    W, H, left, right, top, bottom = 720, 440, 60, 170, 40, 50
    pw, ph = W - left - right, H - top - bottom
    n = max(len(c) for _, c in curves)
    x = lambda i: left + (pw * i / (n - 1) if n > 1 else pw / 2)
    y = lambda a: top + ph * (1 - a)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
             f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
             f'<text x="{left}" y="22" font-size="14">{title}</text>']
    for p in range(0, 101, 20):
        parts.append(f'<line x1="{left}" y1="{y(p / 100):.1f}" x2="{W - right}" y2="{y(p / 100):.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 6}" y="{y(p / 100) + 4:.1f}" text-anchor="end">{p}%</text>')
    parts.append(f'<text x="{left + pw / 2}" y="{H - 12}" text-anchor="middle">round (1..{n})</text>')
    for i, (name, acc) in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        points = " ".join(f"{x(r):.1f},{y(a):.1f}" for r, a in enumerate(acc))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        parts.append(f'<line x1="{W - right + 12}" y1="{top + 18 * i + 6}" x2="{W - right + 32}" '
                     f'y2="{top + 18 * i + 6}" stroke="{colour}" stroke-width="3"/>'
                     f'<text x="{W - right + 38}" y="{top + 18 * i + 10}">{name}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated, or 'ablation'")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--sdfed", default="build/sdfed")
    a = ap.parse_args()
    methods = ABLATIONS if a.methods == "ablation" else a.methods.split(",")
    name = os.path.splitext(os.path.basename(a.task))[0]
    out = a.out or os.path.join("build", "compare", name + ("-ablation" if a.methods == "ablation" else ""))
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    jobs = [(m, s) for m in methods for s in range(1, a.seeds + 1)]
    started = time.time()
    results = {}
    # the first run alone: it fills the feature cache the others read
    first = run(a.sdfed, a.task, *jobs[0], out, env)
    results[jobs[0]] = first
    print(f"[1/{len(jobs)}] {jobs[0][0]} seed {jobs[0][1]}: {100 * first[2]['final_accuracy']:.2f}%", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(run, a.sdfed, a.task, m, s, out, env): (m, s) for m, s in jobs[1:]}
        for done, fut in enumerate(concurrent.futures.as_completed(futures), start=2):
            m, s, res, secs = fut.result()
            results[(m, s)] = (m, s, res, secs)
            print(f"[{done}/{len(jobs)}] {m} seed {s}: {100 * res['final_accuracy']:.2f}% ({secs:.0f} s)", flush=True)
    elapsed = time.time() - started

    lines = [f"| method | final accuracy (mean ± std over {a.seeds} seeds) | per seed |", "|---|---|---|"]
    curves = []
    for m in methods:
        finals = [100 * results[(m, s)][2]["final_accuracy"] for s in range(1, a.seeds + 1)]
        std = statistics.stdev(finals) if len(finals) > 1 else 0.0
        lines.append(f"| {m} | {statistics.mean(finals):.2f} ± {std:.2f} | "
                     + ", ".join(f"{v:.2f}" for v in finals) + " |")
        rounds = [[r["accuracy"] for r in results[(m, s)][2]["rounds"]] for s in range(1, a.seeds + 1)]
        curves.append((m, [statistics.mean(col) for col in zip(*rounds)]))
    table = "\n".join(lines)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table + "\n")
    chart(os.path.join(out, "accuracy.svg"), f"{name}: mean accuracy over {a.seeds} seeds", curves)
    print(table)
    print(f"{len(jobs)} runs in {elapsed / 60:.1f} min; outputs in {out}")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Runs every method of a setting over several seeds with `sdfed sim` and
writes the comparison: a markdown table of the final accuracy (mean ± std
over seeds, the form of the papers' tables; the mean over seeds of the
worst tenth of the clients, which is what personalisation is for; how much
the curve still rose over the last third of the rounds, which shows whether
it flattened; and, when sdfed is among the methods, each one's difference
from sdfed seed by seed, which removes the spread the seeds' partitions
share) and a chart of every method's mean accuracy over rounds.

  tools/compare.py --task tasks/fmnist-pathological.json [--seeds 5]
                   [--methods "zeroshot coop ..." | ablation | lambda | gamma | longer | secure | devices]
                   [--population tasks/devices.json] [--budget SECONDS]
                   [--lrs 0.001,0.003,...] [--model OTHER.gguf]
                   [--jobs 2] [--out DIR] [--f32-images]

With --lrs each method's learning rate is chosen first: one run per rate
(seed 1, `sdfed sim --validation`: every client tested on a fifth of its
training images held out, never on the test split), the rate with the best
final validation accuracy kept (of equals, the one nearest the task's own
rate: a rate replaces it only on evidence), then the seeds run with it on
the test split; the chosen rates are kept in DIR/lrs.json. Without --lrs
each method (a variant: its method's; an ablation or a sweep: sdfed's)
runs at the rate the comparison of the same task chose, when it has run
(else at the task's). --methods longer runs again, with 3 times the task's
rounds, each method that comparison left rising (by more than 0.3 points
over the last third of its rounds, over its seeds), to show where its
curve flattens. --methods secure runs sdfed plain, with secure aggregation
(the task's secure_aggregation, else the defaults) and with distributed
differential privacy at epsilon 8 and 3 over the run (each client's change
clipped to an L2 norm of 0.2, every client weighing the same): what
quantisation and the noise cost, seed by seed against plain sdfed. A
variant's keys may name a key inside an object with dots
("sdfed:secure_aggregation.noise.epsilon=8"). --methods devices runs,
under the device population of --population (a file of task keys merged
into the task: its devices and local_prompt; tasks/devices.json by
default) with local_prompt.budget_s set by --budget, sdfed with the
adaptive, random and fixed rules and PromptFL, CoOp and FedPHA at the fixed
length; a table of runs with devices adds the mean clients a round that
missed its deadline, the simulated wall-clock of the whole run, and the
simulated time until a round first reached 90% of the final accuracy.
--model runs the
task with another CLIP (a converted ViT-B/16, say); --f32-images runs sim
with a Q8_0 image tower on f32 activations (docs/results.md's features). Runs go two at a time
by default (this machine has 2 cores); the
first run fills the feature cache before the others start. A run whose
results.json is already in DIR is not run again, so an interrupted
comparison resumes. Outputs in DIR (default build/compare/<task
name>[-<model>][-ablation|-lambda|-gamma|-longer]): one folder per run
(results.json, accuracy.svg), table.md, accuracy.svg, and for a sweep
sweep.svg (the final accuracy against the swept value, a line per series).

--archive DIR keeps every finished run's results outside the build folder,
as DIR/<the outputs' folder name>/<run>.json.gz (the results, the sim
flags they were made with and, for the record, the sdfed program's sha256
and the commit checked out), and takes a run from there instead of running
it when the archived one was made by the same task (every key the task file
sets, the model by its sha256, the run's method, seed and lr) with the same
flags; one that differs is run again and replaced. `make compare-paper`
archives into docs/results/runs, so that the runs behind docs/results.md
are kept with it, and a comparison too long for one sitting goes on from
what earlier ones archived.
"""
import argparse
import concurrent.futures
import functools
import gzip
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

METHODS = ["zeroshot", "coop", "promptfl", "promptfolio", "fedpha", "fedot", "fedotp", "sdfed"]
# a method, or a method with task keys set: "sdfed:stretch=sum,lambda=0.4" (values as JSON, else strings)
ABLATIONS = ["sdfed", "sdfed-nofilter", "sdfed-nostretch", "sdfed-noseparation", "sdfed:projector=paper",
             "sdfed:projector=rowspace", "sdfed:stretch=sum"]
# a sweep: the key, its values, and one series per variant prefix (each a line of sweep.svg). lambda has no
# series for the default `complement` projector: it removes min(floor(lambda m), rank G_s) directions, and
# rank G_s <= the global prompt's length (8) < floor(0.2 m) for any text width m >= 45, so every lambda of the
# sweep runs the same bits (docs/results.md shows it on pathological)
# plain, secure, and secure with distributed DP at epsilon 8 and 3 over the run: each client's change clipped to an
# L2 norm of 0.2 (a round's change on the shipped Fashion-MNIST tasks is about 0.1 to 0.9), every client weighing the
# same (max_weight 1: the weights' sum then says only how many inputs there were); docs/secure-aggregation.md
SECURE_DP = "secure_aggregation.l2_clip=0.2,secure_aggregation.max_weight=1,secure_aggregation.noise.epsilon="
SECURE = ["sdfed", "sdfed:secure_aggregation={}", f"sdfed:{SECURE_DP}8", f"sdfed:{SECURE_DP}3"]
# how the table and the charts name a variant, when its name is too long to read
LABELS = {"sdfed:secure_aggregation={}": "sdfed, secure", f"sdfed:{SECURE_DP}8": "sdfed, secure, DP epsilon 8",
          f"sdfed:{SECURE_DP}3": "sdfed, secure, DP epsilon 3"}
# under a device population (--population, --budget): the local prompt rules, and the baselines at the fixed length
DEVICES = ["sdfed:local_prompt.rule=adaptive", "sdfed:local_prompt.rule=random", "sdfed:local_prompt.rule=fixed",
           "promptfl:local_prompt.rule=fixed", "coop:local_prompt.rule=fixed", "fedpha:local_prompt.rule=fixed"]
SWEEPS = {"lambda": ("lambda", (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
                     {"paper": "sdfed:projector=paper,", "rowspace": "sdfed:projector=rowspace,"}),
          "gamma": ("gamma", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2), {"sdfed": "sdfed:"})}


def sweep_variants(name):
    key, values, series = SWEEPS[name]
    return [f"{prefix}{key}={v}" for prefix in series.values() for v in values]


COLOURS = ["#636363", "#e6550d", "#fdae6b", "#31a354", "#756bb1", "#9e9ac8", "#08519c", "#3182bd", "#6baed6",
           "#c6dbef"]


NO_LR = ["zeroshot"]  # methods that train nothing
# --methods longer: a method whose curve rose by more than RISING points over the last third of the rounds runs
# again with LONGER times the rounds, to show where it flattens
RISING = 0.3
LONGER = 3
DEFAULT_MODEL = "models/fmnist-tiny-clip.q8_0.gguf"  # a task's model when it names none


def label(variant):
    return LABELS.get(variant, variant)


def set_key(t, key, value):
    """t[key] = value, where a dotted key names a key inside an object (made when missing); a setting of a key
    that is an object already, itself an object, is merged into it."""
    *path, last = key.split(".")
    for part in path:
        if not isinstance(t.get(part), dict):
            t[part] = {}
        t = t[part]
    if isinstance(value, dict) and isinstance(t.get(last), dict):
        t[last].update(value)
    else:
        t[last] = value


def derived_task(task, settings, path):
    """Writes to path a copy of the task file with the keys of settings set (its paths made absolute); returns path."""
    with open(task) as f:
        t = json.load(f)
    here = os.path.dirname(os.path.abspath(task))
    near = lambda p: p if os.path.isabs(p) or not os.path.exists(os.path.join(here, p)) else os.path.join(here, p)
    t["model"] = os.path.abspath(near(t.get("model", DEFAULT_MODEL)))
    if isinstance(t.get("dataset"), dict):
        t["dataset"] = {k: os.path.join(here, v) if isinstance(v, str) else v for k, v in t["dataset"].items()}
    for key, value in settings.items():
        set_key(t, key, value)
    if "local_prompt" in t:  # it replaces local_prompt_length (a task may have one of them)
        t.pop("local_prompt_length", None)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # whole or not at all: the runs of one variant on several seeds write it at once while others read it
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), suffix=".part", delete=False) as f:
        json.dump(t, f)
    os.replace(f.name, path)
    return path


def variant_task(task, variant, out):
    """The task file a variant runs: the task itself, or for "method:key=value,..." a copy with those keys set in
    out/tasks/ (values as JSON, else strings)."""
    if ":" not in variant:
        return task
    settings = {}
    for setting in variant.split(":", 1)[1].split(","):
        key, value = setting.split("=", 1)
        try:
            settings[key] = json.loads(value)
        except json.JSONDecodeError:
            settings[key] = value
    name = variant.replace(":", "-").replace(",", "-") + ".json"
    return derived_task(task, settings, os.path.join(out, "tasks", name))


def same_setting(asked, made):
    """Whether the task keys asked for (a task file's values) are what a run was made with (its results.json's
    task, where sdfed wrote every key, its numbers as float32 and its paths as given)."""
    if isinstance(asked, dict):
        return isinstance(made, dict) and all(k in made and same_setting(v, made[k]) for k, v in asked.items())
    if isinstance(asked, bool) or not isinstance(asked, (int, float)):
        return asked == made or (isinstance(asked, str) and isinstance(made, str) and os.path.isabs(asked)
                                 and os.path.basename(asked) == os.path.basename(made))
    return isinstance(made, (int, float)) and abs(asked - made) <= 1e-6 * max(abs(asked), abs(made), 1e-30)


@functools.lru_cache(maxsize=None)
def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@functools.lru_cache(maxsize=None)
def made_by(sdfed):
    """What made a run, for the record (an archived run is matched by its task and flags, not by this): the sdfed
    program's sha256 and the commit checked out here (which the program may predate)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
        commit = head.stdout.strip() if head.returncode == 0 else None
    except FileNotFoundError:  # no git here
        commit = None
    return {"sdfed_sha256": file_sha256(sdfed), "commit": commit}


_stdout = threading.Lock()


def say(line):
    """Prints one whole line, flushed. The runs' worker threads print too: print() writes its text and its newline
    apart, and another thread's line fell between them (two of compare.py's lines on one)."""
    with _stdout:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def archived(path, sim, task, method, seed, lr):
    """The results archived at path if they were made by this task with these flags and this method, seed and lr
    (None: the task's), else None (saying why when there is an archived run)."""
    if not os.path.exists(path):
        return None
    with gzip.open(path, "rt") as f:
        entry = json.load(f)
    with open(task) as f:
        asked = json.load(f)
    model = asked.pop("model", DEFAULT_MODEL)
    asked.update({"method": method, "seed": seed}, **({"lr": lr} if lr is not None else {}))
    res = entry["results"]
    if entry["sim"] != sim[2:] or res["model_sha256"] != file_sha256(model) or not same_setting(asked, res["task"]):
        say(f"{path} was made by another task, model or flags: running it again")
        return None
    return res


def lr_of(task):
    """The task file's lr (sim's default where it has none)."""
    with open(task) as f:
        return json.load(f).get("lr", 0.01)


def main_folder(out):
    """The folder name of the comparison an ablation, a sweep or a longer run belongs to (paper-dirichlet for
    build/compare/paper-dirichlet-ablation)."""
    folder = os.path.basename(os.path.normpath(out))
    for mode in ["ablation", "longer", "secure", *SWEEPS]:
        folder = folder.removesuffix("-" + mode)
    return folder


def run(sim, task, job, out, archive):
    """sim: the command's start (sdfed sim [flags]); job: (variant, seed, lr or None, validation); archive: the
    folder of archived runs, or None; returns (job, results, seconds)."""
    variant, seed, lr, validation = job
    method = variant.split(":")[0]
    task = variant_task(task, variant, out)
    stem = f"{variant.replace(':', '-').replace(',', '-')}-seed{seed}"
    name = stem + (f"-lr{lr:g}" if lr is not None else "") + ("-validation" if validation else "")
    folder = os.path.join(out, name)
    kept = os.path.join(archive, os.path.basename(os.path.normpath(out)), name + ".json.gz") if archive else None
    started = time.time()
    res = archived(kept, sim, task, method, seed, lr) if kept else None
    comparison = main_folder(out)
    if res is None and kept and ":" not in variant and comparison != os.path.basename(os.path.normpath(out)):
        # sdfed of an ablation is the comparison's own run, which names its lr even where it is the task's
        for main_name in dict.fromkeys([name, f"{stem}-lr{lr if lr is not None else lr_of(task):g}"]):
            res = res or archived(os.path.join(archive, comparison, main_name + ".json.gz"), sim, task, method, seed, lr)
    in_archive = res is not None
    if in_archive and not os.path.exists(os.path.join(folder, "results.json")):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "results.json"), "w") as f:
            json.dump(res, f)
    if not os.path.exists(os.path.join(folder, "results.json")):  # else a finished run of an earlier call
        cmd = sim + ["--task", task, "--method", method, "--seed", str(seed), "--out", folder + ".part"]
        cmd += (["--lr", f"{lr:g}"] if lr is not None else []) + (["--validation"] if validation else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        with open(os.path.join(out, f"{name}.log"), "w") as log:
            log.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}")
        if os.path.exists(folder):
            shutil.rmtree(folder)
        os.rename(folder + ".part", folder)
    with open(os.path.join(folder, "results.json")) as f:
        res = json.load(f)
    if kept and not in_archive:
        os.makedirs(os.path.dirname(kept), exist_ok=True)
        with gzip.open(kept + ".part", "wt") as f:
            json.dump({"sim": sim[2:], "made_by": made_by(sim[0]), "results": res}, f, separators=(",", ":"))
        os.replace(kept + ".part", kept)
    return job, res, time.time() - started


def run_all(sim, task, jobs, out, workers, what, archive):
    """Runs the jobs (the first alone: it fills the feature cache), printing progress; {job: results}."""
    results = {}
    job, res, secs = run(sim, task, jobs[0], out, archive)
    results[job] = res
    say(f"{what} [1/{len(jobs)}] {describe(job)}: {100 * res['final_accuracy']:.2f}% ({secs:.0f} s)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run, sim, task, j, out, archive) for j in jobs[1:]]
        for done, fut in enumerate(concurrent.futures.as_completed(futures), start=2):
            job, res, secs = fut.result()
            results[job] = res
            say(f"{what} [{done}/{len(jobs)}] {describe(job)}: {100 * res['final_accuracy']:.2f}% ({secs:.0f} s)")
    return results


def describe(job):
    method, seed, lr, validation = job
    return f"{method} seed {seed}" + (f" lr {lr:g}" if lr is not None else "") + (" (validation)" if validation else "")


def longer_variants(task, main_out, lrs_chosen):
    """The trained methods whose curves the comparison in main_out left rising (a mean rise over the last third
    above RISING, over its seeds), each as a variant with LONGER times the task's rounds and its chosen lr."""
    if not lrs_chosen:
        raise SystemExit(f"compare.py: --methods longer needs the comparison of the same task first "
                         f"({main_out}/lrs.json is missing)")
    with open(task) as f:
        rounds = json.load(f).get("rounds")
    variants = []
    for m in METHODS:
        if m in NO_LR or lrs_chosen.get(m) is None:
            continue
        rises, seed = [], 1
        while os.path.exists(path := os.path.join(main_out, f"{m}-seed{seed}-lr{lrs_chosen[m]:g}", "results.json")):
            with open(path) as f:
                rises.append(100 * rise_over_last_third(json.load(f)))
            seed += 1
        if not rises:
            raise SystemExit(f"compare.py: --methods longer: no test run of {m} in {main_out}")
        if statistics.mean(rises) > RISING:
            print(f"{m} rose by {statistics.mean(rises):+.2f} over the last third: {LONGER * rounds} rounds")
            variants.append(f"{m}:rounds={LONGER * rounds},lr={lrs_chosen[m]:g}")
    return variants


def worst_decile(res):
    """Mean final accuracy of the worst tenth of the clients (at least one): each client's accuracy averaged over
    the rounds the final accuracy averages (the last min(10, rounds)); a client without test images has none."""
    last = res["rounds"][-min(10, len(res["rounds"])):]
    tested = [c for c, client in enumerate(res["clients"]) if client["test"] > 0]
    per_client = sorted(statistics.mean(r["client_accuracy"][c] for r in last) for c in tested)
    return statistics.mean(per_client[:max(1, len(per_client) // 10)])


def device_columns(runs):
    """With devices: the mean clients a round that missed its deadline, the simulated wall-clock of the run, and
    the simulated time until a round's accuracy first reached 90% of the final accuracy (means over the runs)."""
    def to_90(res):
        spent = 0.0
        for r in res["rounds"]:
            spent += r["sim_seconds"]
            if r["accuracy"] >= 0.9 * res["final_accuracy"]:
                return spent
        return spent
    missed = statistics.mean(statistics.mean(r["missed"] for r in res["rounds"]) for res in runs)
    total = statistics.mean(sum(r["sim_seconds"] for r in res["rounds"]) for res in runs)
    return f" {missed:.2f} | {total:.1f} | {statistics.mean(to_90(res) for res in runs):.1f} |"


def mean_std(values):
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values) if len(values) > 1 else 0.0:.2f}"


def signed(value):
    """+0.12, -0.12, and +0.00 for what rounds to zero (never -0.00)."""
    return f"{round(value, 2) + 0.0:+.2f}"


def window_accuracy(res, end):
    """Mean accuracy of the min(10, rounds) rounds that end at round `end`: the final accuracy's window."""
    rounds = res["rounds"][max(0, end - min(10, len(res["rounds"]))):end]
    return statistics.mean(r["accuracy"] for r in rounds)


def rise_over_last_third(res):
    """How much the curve still rose in the last third of the rounds: the final accuracy less the same window's
    accuracy two thirds of the way (near 0 when the curve has flattened)."""
    n = len(res["rounds"])
    return window_accuracy(res, n) - window_accuracy(res, max(1, 2 * n // 3))


def accuracy_axis(curves, spreads):
    """The accuracy axis (low, high, step, in points) that holds every curve and its spread with a few gridlines:
    a close view for a sweep whose points differ by tenths."""
    values = [100 * (a + sign * d) for (_, c), sd in zip(curves, spreads) for a, d in zip(c, sd) for sign in (-1, 1)]
    spread = max(max(values) - min(values), 0.1)
    step = next(s for s in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if spread / s <= 6)
    low = max(0.0, math.floor(min(values) / step - 1) * step)
    return low, min(100.0, max(low + step, math.ceil(max(values) / step + 1) * step)), step


def chart(path, title, curves, xlabel=None, xticks=None, spreads=None):
    """curves: [(name, [accuracy per point])], accuracies in [0, 1]; the points are rounds 0..n-1 unless xticks names
    them (xlabel: what they are). With spreads (per curve, the std over seeds per point) each curve is drawn in a
    band of ± its spread and the accuracy axis is a close view (accuracy_axis); else it is 0..100%."""
    W, H, left, right, top, bottom = 720, 440, 60, 170, 40, 50
    pw, ph = W - left - right, H - top - bottom
    n = max(len(c) for _, c in curves)
    low, high, step = accuracy_axis(curves, spreads) if spreads else (0.0, 100.0, 20)
    x = lambda i: left + (pw * i / (n - 1) if n > 1 else pw / 2)
    y = lambda a: top + ph * (1 - (100 * a - low) / (high - low))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
             f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
             f'<text x="{left}" y="22" font-size="14">{title}</text>']
    for i in range(round((high - low) / step) + 1):
        p = low + i * step
        parts.append(f'<line x1="{left}" y1="{y(p / 100):.1f}" x2="{W - right}" y2="{y(p / 100):.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 6}" y="{y(p / 100) + 4:.1f}" text-anchor="end">{p:g}%</text>')
    parts.append(f'<text x="{left + pw / 2}" y="{H - 12}" text-anchor="middle">{xlabel or f"round (0..{n - 1})"}</text>')
    for i, tick in enumerate(xticks or []):
        parts.append(f'<text x="{x(i):.1f}" y="{H - bottom + 16}" text-anchor="middle">{tick}</text>')
    for i, (name, acc) in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        if spreads:
            band = [(r, a + spreads[i][r]) for r, a in enumerate(acc)] + \
                   [(r, a - spreads[i][r]) for r, a in reversed(list(enumerate(acc)))]
            parts.append(f'<polygon fill="{colour}" fill-opacity="0.15" stroke="none" points="'
                         + " ".join(f"{x(r):.1f},{y(a):.1f}" for r, a in band) + '"/>')
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
    ap.add_argument("--methods", default=" ".join(METHODS),
                    help="space-separated methods or variants (sdfed:stretch=sum), or 'ablation', 'lambda', "
                         "'gamma', 'longer' (the methods the comparison left rising, with 3 times the rounds), "
                         "'secure' (sdfed plain, secure, and secure with DP at epsilon 8 and 3)")
    ap.add_argument("--lrs", help="comma-separated learning rates to choose each method's from (validation)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--model", help="another CLIP GGUF to run the task with (outputs named after it)")
    ap.add_argument("--sdfed", default="build/sdfed")
    ap.add_argument("--f32-images", action="store_true",
                    help="sim --f32-images: a Q8_0 image tower on f32 activations (the features docs/results.md used)")
    ap.add_argument("--archive", help="a folder that keeps every finished run and gives it back to a later call")
    ap.add_argument("--population", help="task keys (devices, local_prompt) merged into the task (--methods devices: "
                                         "tasks/devices.json)")
    ap.add_argument("--budget", type=float, help="local_prompt.budget_s: a round's seconds of local work")
    a = ap.parse_args()
    named = dict({k: sweep_variants(k) for k in SWEEPS}, ablation=ABLATIONS, longer=[], secure=SECURE,
                 devices=DEVICES)
    methods = named[a.methods] if a.methods in named else a.methods.split()
    name = os.path.splitext(os.path.basename(a.task))[0]
    if a.model:  # the task with that model, as a task file of its own
        name += "-" + os.path.splitext(os.path.basename(a.model))[0]
        a.task = derived_task(a.task, {"model": os.path.abspath(a.model)},
                              os.path.join("build", "compare", "tasks", name + ".json"))
    if a.methods == "devices" and not a.population:
        a.population = "tasks/devices.json"
    if a.population or a.budget is not None:  # the task under that device population and budget
        with open(a.population or os.devnull) as f:
            keys = json.load(f) if a.population else {}
        if a.budget is not None:
            set_key(keys, "local_prompt.budget_s", a.budget)
        name += (f"-{os.path.splitext(os.path.basename(a.population))[0]}" if a.population else "") + \
            (f"-budget{a.budget:g}" if a.budget is not None else "")
        a.task = derived_task(a.task, keys, os.path.join("build", "compare", "tasks", name + ".json"))
    out = a.out or os.path.join("build", "compare", name + (f"-{a.methods}" if a.methods in named else ""))
    os.makedirs(out, exist_ok=True)
    sim = [a.sdfed, "sim"] + (["--f32-images"] if a.f32_images else [])
    started = time.time()
    task_lr = lr_of(a.task)
    main_out = os.path.join("build", "compare", name)
    main_lrs = os.path.join(main_out, "lrs.json")
    lrs_chosen = {}
    if not a.lrs and os.path.exists(main_lrs):  # at the rates the comparison of the same task chose
        with open(main_lrs) as f:
            lrs_chosen = json.load(f)
        print(f"at the rates the comparison chose ({main_lrs})")
    if a.methods == "longer":
        if a.lrs:
            raise SystemExit("compare.py: --methods longer runs at the rates the comparison chose: no --lrs")
        methods = longer_variants(a.task, main_out, lrs_chosen)
        if not methods:
            print("every method's curve has flattened: nothing to run longer")
            return 0
    chosen = {}  # None: the task's lr
    for m in methods:  # a variant at its method's rate (sdfed-nofilter, sdfed:lambda=0.4: sdfed's), unless it sets lr
        lr = lrs_chosen.get(m.split(":")[0], lrs_chosen.get(m.split(":")[0].split("-")[0]))
        sets_lr = ":" in m and any(kv.startswith("lr=") for kv in m.split(":", 1)[1].split(","))
        chosen[m] = lr if lr is not None and lr != task_lr and not sets_lr else None
    n_runs = 0
    if a.lrs:
        lrs = sorted(float(v) for v in a.lrs.split(","))
        sweep = [(m, 1, lr, True) for m in methods if m.split(":")[0] not in NO_LR for lr in lrs]
        found = run_all(sim, a.task, sweep, out, a.jobs, "choosing lr", a.archive)
        n_runs += len(sweep)
        for m in methods:  # the best validation accuracy; of equals, the rate nearest the task's
            if m.split(":")[0] not in NO_LR:
                chosen[m] = max(lrs, key=lambda lr: (found[(m, 1, lr, True)]["final_accuracy"],
                                                     -abs(math.log(lr / task_lr))))
        with open(os.path.join(out, "lrs.json"), "w") as f:
            json.dump(chosen, f, indent=1)
    jobs = [(m, s, chosen[m], False) for m in methods for s in range(1, a.seeds + 1)]
    results = run_all(sim, a.task, jobs, out, a.jobs, "testing", a.archive)
    n_runs += len(jobs)
    elapsed = time.time() - started

    finals = {m: [100 * results[(m, s, chosen[m], False)]["final_accuracy"] for s in range(1, a.seeds + 1)]
              for m in methods}
    paired = "sdfed" in methods and len(methods) > 1 and a.seeds > 1  # variants against sdfed, seed by seed
    devices = all("sim_seconds" in res["rounds"][0] for res in results.values())
    lines = [f"| method |{' lr (chosen) |' if a.lrs else ''} final accuracy (mean ± std over {a.seeds} "
             f"seed{'s' if a.seeds > 1 else ''}) | "
             f"worst tenth of clients | rise over the last third |{' against sdfed, seed by seed |' if paired else ''} "
             + ("missed a round | simulated time (s) | simulated time to 90% (s) | " if devices else "") +
             f"per seed |", "|---|---|---|---|---|" + ("---|" if a.lrs else "") + ("---|" if paired else "") +
             ("---|---|---|" if devices else "")]
    curves = []
    for m in methods:
        runs = [results[(m, s, chosen[m], False)] for s in range(1, a.seeds + 1)]
        lr = (f" {chosen[m]:g} |" if chosen[m] is not None else " – |") if a.lrs else ""
        versus = ""
        if paired:
            diffs = [v - b for v, b in zip(finals[m], finals["sdfed"])]
            versus = (f" {signed(statistics.mean(diffs))} ± {statistics.stdev(diffs):.2f} "
                      f"({sum(d < 0 for d in diffs)} of {len(diffs)} lower) |" if m != "sdfed" else " – |")
        lines.append(f"| {label(m)} |{lr} {mean_std(finals[m])} | "
                     f"{100 * statistics.mean(worst_decile(r) for r in runs):.2f} | "
                     f"{signed(100 * statistics.mean(rise_over_last_third(r) for r in runs))} |{versus}"
                     + (device_columns(runs) if devices else "") + " "
                     + ", ".join(f"{v:.2f}" for v in finals[m]) + " |")
        rounds = [[r["accuracy"] for r in res["rounds"]] for res in runs]
        curves.append((label(m), [statistics.mean(col) for col in zip(*rounds)]))
    table = "\n".join(lines)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table + "\n")
    chart(os.path.join(out, "accuracy.svg"), f"{name}: mean accuracy over {a.seeds} seeds", curves)
    if a.methods in SWEEPS:  # the final accuracy against the swept value, a line per series
        key, values, series = SWEEPS[a.methods]
        finals_of = lambda m: [results[(m, s, chosen[m], False)]["final_accuracy"] for s in range(1, a.seeds + 1)]
        spread = lambda m: statistics.stdev(finals_of(m)) if a.seeds > 1 else 0.0
        chart(os.path.join(out, "sweep.svg"), f"{name}: SDFed's final accuracy against {key} (± std over seeds)",
              [(label, [statistics.mean(finals_of(f"{prefix}{key}={v}")) for v in values])
               for label, prefix in series.items()],
              xlabel=key, xticks=[str(v) for v in values],
              spreads=[[spread(f"{prefix}{key}={v}") for v in values] for prefix in series.values()])
    print(table)
    print(f"{n_runs} runs in {elapsed / 60:.1f} min; outputs in {out}")


if __name__ == "__main__":
    sys.exit(main())

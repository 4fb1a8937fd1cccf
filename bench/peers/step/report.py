"""The step workload's figures, tables and plot, for bench/peers/report.py.

Figures: per model, the slowest rank's mean time per training step in each trial, then the median
over trials, in ms; the same of the CPU time per step (every thread of a rank's process: the
framework's own threads included), which a machine shared with other work changes far less. Each system is compared with the peers on the same torch: Cohort with Horovod
on Debian's torch 1.13, Cohort (torch 2) with DDP and TorchFT on the peers' torch 2.x.
"""

import statistics
import sys
from collections import defaultdict

import report
from report import LABELS

# Per torch: Cohort on it, then its peers ("best peer / Cohort" is taken within each).
TORCHES = [("torch 1.13", "cohort", ["horovod"]), ("torch 2.x", "cohort2", ["torch", "torchft"])]
MODEL_ORDER = ["digits", "mlp25m", "tf50m"]


def medians(results, field):
    """{(system, np): {model: median over trials of the largest value of field among the ranks}}."""
    per_trial = defaultdict(lambda: defaultdict(dict))
    for f in results:
        if field in f:
            key, trial = (f["system"], int(f["np"])), int(f["trial"])
            slowest = per_trial[key][f["model"]]
            slowest[trial] = max(slowest.get(trial, 0.0), float(f[field]))
    return {key: {m: statistics.median(t.values()) for m, t in by_model.items()}
            for key, by_model in per_trial.items()}


def figures(results):
    """{"ms": medians of ms, "cpu": medians of cpu_ms, "models": {model: (params, batch, steps)}};
    {} without results."""
    if not results:
        return {}
    models = {f["model"]: (int(f["params"]), int(f["batch"]), int(f["steps"])) for f in results}
    return {"ms": medians(results, "ms"), "cpu": medians(results, "cpu_ms"), "models": models}


def columns(systems, shown):
    """(header, function of {system: ms} -> cell) per column, grouped by torch."""
    cols = []
    for _, cohort, peers in TORCHES:
        group = [s for s in [cohort] + peers if s in systems and s in shown]
        cols += [(f"{LABELS[s]} ms", lambda ms, s=s: f"{ms[s]:.1f}" if ms.get(s) else "-")
                 for s in group]
        present = [p for p in peers if p in group]
        if cohort in group and present:
            name = LABELS[present[0]] if len(present) == 1 else \
                "best of " + ", ".join(LABELS[p] for p in present)
            cols.append((f"{name} / {LABELS[cohort]}",
                         lambda ms, c=cohort, ps=present: ratio(ms, c, ps)))
    return cols


def ratio(ms, cohort, peers):
    best = min((ms[p] for p in peers if ms.get(p)), default=None)
    return f"{best / ms[cohort]:.2f}" if best and ms.get(cohort) else "-"


def table(by_key, systems, model, nps, first="ranks"):
    """One table of by_key ({(system, np): {model: ms}}) for model: a row per rank count."""
    shown = {s for (s, np), by_model in by_key.items() if model in by_model}
    cols = columns(systems, shown)
    lines = [f"| {first} | " + " | ".join(h for h, _ in cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for np in nps:
        ms = {s: by_key.get((s, np), {}).get(model) for s in shown}
        lines.append(f"| {np} | " + " | ".join(cell(ms) for _, cell in cols) + " |")
    return lines


def ordered(models):
    return sorted(models, key=lambda m: (MODEL_ORDER + [m]).index(m))


def body(figs, systems, nps):
    if not figs:
        return ["", "No figures: no run succeeded."]
    lines = ["", "ms per training step: median over trials of the slowest rank's mean over the "
             "timed steps; below it, the CPU time per step (all threads of a rank's process, the "
             "busiest rank). A ratio above 1: Cohort is faster, or uses less CPU, than the best "
             "peer on the same torch."]
    for model in ordered(figs["models"]):
        params, batch, steps = figs["models"][model]
        lines += ["", f"**{model}** ({params:,} parameters, batch {batch} per rank, {steps} timed "
                  "steps)", ""] + table(figs["ms"], systems, model, nps)
        if any(model in by_model for by_model in figs["cpu"].values()):
            lines += [""] + table(figs["cpu"], systems, model, nps, first="ranks (CPU)")
    return lines


def plot(figs, nps, svg):
    """ms per step, one cluster of bars per model and rank count, one bar per system."""
    by_torch = [s for _, cohort, peers in TORCHES for s in [cohort] + peers]  # side by side
    systems = sorted({s for s, _ in figs["ms"]}, key=(by_torch + list(LABELS)).index)
    clusters = {f"{m}, {np} ranks": (m, np) for m in ordered(figs["models"]) for np in nps}
    report.bars(svg, "training step, SGD with momentum, one torch thread per rank, one host",
                "ms per training step (log scale)", list(clusters),
                [(s, LABELS[s]) for s in systems],
                lambda c, s: figs["ms"].get((s, clusters[c][1]), {}).get(clusters[c][0]))


def parse(md):
    """{(label, np): {model: ms}} read back from the written tables of ms per step (not the
    tables of CPU time, whose first column is 'ranks (CPU)')."""
    got = defaultdict(dict)
    for model, head, cells in report.table_rows(md, r"\*\*(\w+)\*\* \("):
        if head[0] != "ranks":
            continue
        for name, value in zip(head[1:], cells[1:]):
            if name.endswith(" ms") and value != "-":
                got[(name[:-3], int(cells[0]))][model] = float(value)
    return got


def check_read_back(md, figs):
    back = parse(md)
    for (system, np), by_model in (figs or {}).get("ms", {}).items():
        if set(back[(LABELS[system], np)]) != set(by_model):
            sys.exit(f"report.py: {md} does not read back {system} at {np} ranks")

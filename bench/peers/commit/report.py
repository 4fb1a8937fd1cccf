"""The commit workload's figures and tables, for bench/peers/report.py.

Figures: in each trial, the slowest rank's median (over its --commits rounds) of each phase; then
the median over trials. commit: what a system pays to keep its recovery state (TorchFT: nothing
per step); restore: getting it back (a restore in place, a load from the file, TorchFT's transfer
to a healing replica group); memcpy: the same bytes copied into a touched buffer, in the same
process at the same time on every rank, the bound; clone: into fresh memory. GB/s: the state's
bytes (per rank) over the time, in 1e9 B/s. Systems are grouped by the torch they run on.
"""

import re
import statistics
import sys
from collections import defaultdict

import report
from report import LABELS

GROUPS = [("1.13 (Debian)", ["cohort", "horovod"]), ("2.x (PyPI)", ["cohort2", "torch", "torchft"])]
PHASES = ["memcpy", "clone", "commit", "commit_fsync", "restore", "first_commit", "send"]
HOW = {"TorchState.commit": "TorchState commit / restore",
       "torch.save": "torchrun's checkpoint: torch.save to /tmp / torch.load",
       "torch.save+fsync": "torchrun's checkpoint: torch.save + fsync / torch.load",
       "HTTPTransport": "none kept / HTTPTransport transfer + load_state_dict"}


def figures(results):
    """{(model, system, np): {phase: median over trials of the slowest rank, plus facts}}."""
    trials = defaultdict(lambda: defaultdict(dict))
    facts = {}
    for f in results:
        key = (f["model"], f["system"], int(f["np"]))
        facts[key] = dict(how=f["how"], state_bytes=int(f["state_bytes"]), params=int(f["params"]))
        slowest = trials[key][int(f["trial"])]
        for phase in PHASES:
            if f"{phase}_s" in f:
                slowest[phase] = max(slowest.get(phase, 0.0), float(f[f"{phase}_s"]))
    out = {}
    for key, by_trial in trials.items():
        phases = {p for t in by_trial.values() for p in t}
        out[key] = dict(facts[key], trials=len(by_trial))
        for p in phases:
            out[key][p] = statistics.median(t[p] for t in by_trial.values() if p in t)
    return out


def rows(key, fig):
    """The table rows of one (model, system, np): torch's fsync variant is a row of its own."""
    model, system, np = key
    variants = [(fig["how"], fig.get("commit"))]
    if "commit_fsync" in fig:
        variants.append((fig["how"] + "+fsync", fig["commit_fsync"]))
    lines = []
    for how, commit in variants:
        cells = [LABELS.get(system, system), str(np), HOW.get(how, how), f"{fig['memcpy']:.3f}",
                 f"{fig['clone']:.3f}" if "clone" in fig else "-"]
        cells += ratio_cells(commit, fig) if commit is not None else ["0 (none)", "-", "-"]
        cells += ratio_cells(fig.get("restore"), fig)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def ratio_cells(seconds, fig):
    """seconds, GB/s of the state, × the memcpy; dashes where there is no figure."""
    if seconds is None:
        return ["-", "-", "-"]
    return [f"{seconds:.3f}", f"{fig['state_bytes'] / seconds / 1e9:.2f}",
            f"{seconds / fig['memcpy']:.2f}"]


HEAD = ["system", "ranks", "commit / restore", "memcpy s", "clone s", "commit s", "commit GB/s",
        "commit ×memcpy", "restore s", "restore GB/s", "restore ×memcpy"]


def body(figures, systems, nps):
    lines = []
    for model in sorted({m for m, _, _ in figures}):
        some = next(f for (m, _, _), f in figures.items() if m == model)
        lines += ["", f"**{model}** ({some['params'] / 1e6:.1f}M parameters: "
                  f"{some['state_bytes'] / 1e6:.0f} MB of parameters and momentum per rank; seconds"
                  " are medians over trials of the slowest rank's median)"]
        for torch, members in GROUPS:
            keys = sorted((k for k in figures
                           if k[0] == model and k[1] in members and k[1] in systems),
                          key=lambda k: (k[2], members.index(k[1])))
            if keys:
                lines += ["", f"torch {torch}:", "", "| " + " | ".join(HEAD) + " |",
                          "|" + "---|" * len(HEAD)]
                lines += [row for k in keys for row in rows(k, figures[k])]
    return lines


def parse(md):
    """{(label, np): {"<model> <commit / restore> <column>": seconds}} read back from a table."""
    got = defaultdict(dict)
    for model, head, row in report.table_rows(md, r"\*\*(\w+)\*\* \("):
        cells = dict(zip(head, row))
        for column in ("memcpy s", "commit s", "restore s"):
            if re.fullmatch(r"[0-9.]+", cells.get(column, "")):
                key = (cells["system"], int(cells["ranks"]))
                got[key][f"{model} {cells['commit / restore']} {column}"] = float(cells[column])
    return got


def check_read_back(md, figures):
    back = parse(md)
    for (model, system, np), fig in figures.items():
        mine = {k: v for k, v in back[(LABELS[system], np)].items() if k.startswith(model + " ")}
        if not mine or abs(mine[f"{model} {HOW.get(fig['how'], fig['how'])} memcpy s"]
                           - fig["memcpy"]) > 5e-4:
            sys.exit(f"report.py: {md} does not read back {system} at {np} ranks for {model}")


def plot(figures, nps, svg):
    """Commit and restore time against the memcpy of the same bytes, one cluster per model, ranks
    and phase, one bar per system (log scale: TorchFT's per-step commit, none, has no bar)."""
    systems = [s for _, members in GROUPS for s in members if any(k[1] == s for k in figures)]
    keys = sorted({(m, np) for m, s, np in figures if s != "torchft"})
    clusters = {f"{m}, {np} rank{'s' if np > 1 else ''}, {phase}": (m, np, phase)
                for m, np in keys for phase in ("commit", "restore")}

    def ratio(cluster, system):
        model, np, phase = clusters[cluster]
        fig = figures.get((model, system, np)) or figures.get((model, system, 2 if np == 1 else np))
        if fig is None or fig.get(phase) is None or fig["memcpy"] <= 0 or fig[phase] <= 0:
            return None
        return fig[phase] / fig["memcpy"]

    report.bars(svg, "keeping and getting back the recovery state, against a memcpy of it",
                "time / memcpy of the same bytes (log scale)", list(clusters),
                [(s, LABELS[s]) for s in systems], ratio)


"""The recovery workload's figures and table, for bench/peers/report.py.

Figures per (system, kind): the median over trials of recovery_s (kill or removal to the next
completed step; for a removal, the next step at one worker fewer), full_size_s (kill to the first
step at full size again, after a replacement joined) and the lost and duplicated samples of the
committed history (summed over epochs). A run that gave no figure is a row with its reason.
"""

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import report

LABELS = dict(report.LABELS, horovod_cooldown="Horovod, --blacklist-cooldown-range 1 1")

KINDS = {"kill": "SIGKILL of one worker, then a replacement",
         "remove": "one worker removed cleanly"}
COLUMNS = ["next step (s)", "full size (s)", "lost", "duplicated", "samples", "runs"]
# What a system cannot do, shown instead of figures.
CANNOT = {("torch", "remove"): "n/a: torchrun has no way for one worker of a running job to leave"}


def figures(results):
    """{(system, kind): {column: median text}} over the trials' RESULT lines."""
    runs = defaultdict(list)
    for f in results:
        runs[(f["system"], f["kind"])].append(f)
    out = {}
    for key, rows in runs.items():
        out[key] = {"runs": str(len(rows))}
        for column, field in zip(COLUMNS[:5], ("recovery_s", "full_size_s", "lost", "duplicated",
                                              "samples")):
            values = [float(r[field]) for r in rows if r[field] != "-"]
            out[key][column] = f"{statistics.median(values):g}" if values else "-"
    return out


def failures(out_dir):
    """{(system, kind): [reasons]} of the FAILED runs, from their .reason files."""
    got = defaultdict(list)
    results = Path(out_dir) / "results.txt"
    for line in results.read_text().splitlines() if results.exists() else []:
        if line.startswith("FAILED ") and "workload=recovery" in line:
            f = dict(kv.split("=", 1) for kv in line.split()[1:])
            reason = Path(f["log"] + ".reason")
            text = reason.read_text().strip() if reason.exists() else f"exit status {f['rc']}"
            got[(f["system"], f["kind"])].append(f"{text} (log {Path(f['log']).name})")
    return got


out_dir = None  # set by bench/peers/report.py


def body(figures, systems, nps):
    failed = failures(out_dir) if out_dir else {}
    lines = []
    systems = [v for s in systems for v in ([s, "horovod_cooldown"] if s == "horovod" else [s])]
    for kind, title in KINDS.items():
        lines += ["", f"**{title}** (medians over trials; times from the event, in seconds)", "",
                  "| system | " + " | ".join(COLUMNS) + " |", "|" + "---|" * (len(COLUMNS) + 1)]
        for s in systems:
            if (s, kind) in figures:
                cells = [figures[(s, kind)][c] for c in COLUMNS]
            elif (s, kind) in CANNOT or (s, kind) in failed:
                text = CANNOT.get((s, kind)) or "not measured: " + "; ".join(failed[(s, kind)])
                cells = [text] + ["-"] * (len(COLUMNS) - 1)
            else:
                continue
            lines.append(f"| {LABELS.get(s, s)} | " + " | ".join(cells) + " |")
    return lines


def parse(md):
    """{(label, kind): {column: text}} read back from a written table."""
    got = {}
    for title, _, cells in report.table_rows(md, r"\*\*(.*)\*\* \(medians"):
        if re.match(r"^[0-9.]+$", cells[1]):
            kind = next(k for k, t in KINDS.items() if t == title)
            got[(cells[0], kind)] = dict(zip(COLUMNS, cells[1:]))
    return got


def check_read_back(md, figures):
    back = parse(md)
    for (system, kind), row in figures.items():
        if back.get((LABELS.get(system, system), kind)) != row:
            sys.exit(f"report.py: {md} does not read back {system} ({kind})")


def plot(figures, nps, svg):
    """Seconds from the event to the next step and to full size again, per system and kind."""
    systems = [s for s in LABELS if any(k[0] == s for k in figures)]
    clusters = {f"{KINDS[kind].split(',')[0]}: {column[:-4]}": (kind, column)
                for kind in KINDS for column in COLUMNS[:2]
                if any(figures[k][column] != "-" for k in figures if k[1] == kind)}

    def seconds(cluster, system):
        kind, column = clusters[cluster]
        text = figures.get((system, kind), {}).get(column, "-")
        return None if text == "-" or float(text) <= 0 else float(text)

    report.bars(svg, "recovery, 4 workers on one host", "seconds (log scale)", list(clusters),
                [(s, LABELS[s]) for s in systems], seconds)


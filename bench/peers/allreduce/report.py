"""The allreduce workload's figures, table and plot, for bench/peers/report.py.

Figures: per size, the slowest rank's mean time per operation in each trial, then the median over
trials; algbw = bytes / time and busbw = algbw * 2(n-1)/n (nccl-tests), in GB/s (1e9 B/s).
"""

import statistics
import subprocess
import sys
from collections import defaultdict

import report
from report import LABELS

UNITS = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B")]


def size_text(nbytes):
    for scale, unit in UNITS:
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def size_bytes(text):
    number, unit = text.split()
    return int(number) * dict((u, s) for s, u in UNITS)[unit]


def figures(results):
    """{(system, np): {bytes: median over trials of the slowest rank's µs}}."""
    per_trial = defaultdict(lambda: defaultdict(dict))
    for f in results:
        key, trial, nbytes = (f["system"], int(f["np"])), int(f["trial"]), int(f["bytes"])
        slowest = per_trial[key][nbytes]
        slowest[trial] = max(slowest.get(trial, 0.0), float(f["us"]))
    return {key: {b: statistics.median(t.values()) for b, t in by_size.items()}
            for key, by_size in per_trial.items()}


def busbw(nbytes, us, np):
    return nbytes / (us * 1e3) * 2 * (np - 1) / np


def table(figures, systems, np):
    """The markdown table for np ranks: µs and busbw per system, and the best peer against Cohort."""
    shown = [s for s in systems if (s, np) in figures]
    peers = [s for s in shown if not s.startswith("cohort")]
    head = ["size"] + [f"{LABELS[s]} µs" for s in shown] + [f"{LABELS[s]} busbw" for s in shown]
    if "cohort" in shown and peers:
        head.append("best peer µs / Cohort µs")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sizes = sorted(set().union(*(figures[(s, np)] for s in shown)))
    for nbytes in sizes:
        us = {s: figures[(s, np)].get(nbytes) for s in shown}
        row = [size_text(nbytes)] + [f"{us[s]:.1f}" if us[s] else "-" for s in shown]
        row += [f"{busbw(nbytes, us[s], np):.3f}" if us[s] else "-" for s in shown]
        if len(head) > len(row):
            best = min((us[s] for s in peers if us[s]), default=None)
            row.append(f"{best / us['cohort']:.2f}" if best and us["cohort"] else "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def body(figures, systems, nps):
    lines = []
    for np in nps:
        lines += ["", f"**{np} ranks** (µs: median over trials of the slowest rank's mean time per"
                  " allreduce; busbw in GB/s)", ""] + table(figures, systems, np)
    return lines


def plot(figures, nps, svg):
    """busbw against size: one colour per system, solid at the fewest ranks, dashed above (gnuplot)."""
    dat = svg.with_suffix(".dat")
    blocks, styles = [], []
    systems = sorted({s for s, _ in figures}, key=list(LABELS).index)
    for (system, np), by_size in sorted(figures.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        blocks.append("\n".join(f"{b} {busbw(b, us, np):.6f}" for b, us in sorted(by_size.items())))
        styles.append(f"lc {systems.index(system) + 1} dt {nps.index(np) + 1} pt {nps.index(np) + 6}"
                      f" title '{LABELS.get(system, system)}, {np} ranks'")
    dat.write_text("\n\n\n".join(blocks) + "\n")
    plots = ", ".join(f"'{dat}' index {i} with linespoints {st}" for i, st in enumerate(styles))
    script = (f"set terminal svg size 900,520 dynamic; set output '{svg}'; set logscale x 2;"
              " set format x '%.0b %BB'; set xtics 32; set grid;"
              " set xlabel 'message size'; set ylabel 'busbw (GB/s)'; set key top left;"
              f" set title 'allreduce, float32 sum, torch tensors, one host'; plot {plots}")
    subprocess.run(["gnuplot", "-e", script], check=True)


def parse(md):
    """{(label, np): {bytes: µs}} read back from a written table."""
    got = defaultdict(dict)
    for np, head, cells in report.table_rows(md, r"\*\*(\d+) ranks\*\*"):
        for name, cell in zip(head[1:], cells[1:]):
            if name.endswith(" µs") and "/" not in name and cell != "-":
                got[(name[:-3], int(np))][size_bytes(cells[0])] = float(cell)
    return got


def check_read_back(md, figures):
    back = parse(md)
    for (system, np), by_size in figures.items():
        if set(back[(LABELS[system], np)]) != set(by_size):
            sys.exit(f"report.py: {md} does not read back {system} at {np} ranks")

"""Turns bench/peers/run.sh's RESULT lines into a markdown table and a gnuplot SVG per workload,
and regenerates the measured section of docs/comparison.md (between its bench/peers markers).

  report.py --workload allreduce --out OUT --systems cohort,horovod,... --command CMD [--doc FILE]
  report.py --parse OUT/allreduce.md [--expect cohort:2]   check a written table reads back

Figures: per size, the slowest rank's mean time per operation in each trial, then the median over
trials; algbw = bytes / time and busbw = algbw * 2(n-1)/n (nccl-tests), in GB/s (1e9 B/s).
Standard library only: run by /usr/bin/python3.
"""

import argparse
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

LABELS = {"cohort": "Cohort", "horovod": "Horovod", "torch": "torch.distributed gloo",
          "torchft": "TorchFT"}
LAUNCHERS = {"cohort": "`cohortrun -np N` (cohort.torch, Debian's torch 1.13)",
             "horovod": "`horovodrun --gloo -np N -H localhost:N` (horovod.torch)",
             "torch": "`torchrun --standalone --nproc-per-node N` (`dist.all_reduce`)",
             "torchft": "`torchft_lighthouse` + one `torchrun` replica group per rank "
                        "(`Manager.allreduce`)"}
UNITS = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B")]


def size_text(nbytes):
    for scale, unit in UNITS:
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def size_bytes(text):
    number, unit = text.split()
    return int(number) * dict((u, s) for s, u in UNITS)[unit]


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:])


def medians(results_file, workload):
    """{(system, np): {bytes: median over trials of the slowest rank's µs}}; and FAILED lines."""
    per_trial = defaultdict(lambda: defaultdict(dict))
    failed = []
    for line in Path(results_file).read_text().splitlines():
        if line.startswith("FAILED") and fields(line).get("workload") == workload:
            failed.append(fields(line))
        if not line.startswith("RESULT") or fields(line).get("workload") != workload:
            continue
        f = fields(line)
        key, trial, nbytes = (f["system"], int(f["np"])), int(f["trial"]), int(f["bytes"])
        slowest = per_trial[key][nbytes]
        slowest[trial] = max(slowest.get(trial, 0.0), float(f["us"]))
    return ({key: {b: statistics.median(t.values()) for b, t in by_size.items()}
             for key, by_size in per_trial.items()}, failed)


def busbw(nbytes, us, np):
    return nbytes / (us * 1e3) * 2 * (np - 1) / np


def table(figures, systems, np):
    """The markdown table for np ranks: µs and busbw per system, and the best peer against Cohort."""
    shown = [s for s in systems if (s, np) in figures]
    peers = [s for s in shown if s != "cohort"]
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


def markdown(args, figures, failed, nps):
    out = Path(args.out)
    systems = args.systems.split(",")
    missing = dict(line.split(": ", 1) for line in (out / "missing.txt").read_text().splitlines()
                   if ": " in line)
    lines = [f"Command: `{args.command}`; versions and machine:", ""]
    lines += ["```", (out / "versions.txt").read_text().rstrip(), "```", "",
              "| system | launched by | status |", "|---|---|---|"]
    for s in systems:
        lines.append(f"| {LABELS.get(s, s)} | {LAUNCHERS.get(s, '')} | {missing.get(s, 'measured')} |")
    for f in failed:
        lines.append(f"\nFAILED: {LABELS.get(f['system'], f['system'])} at {f['np']} ranks, trial "
                     f"{f['trial']} (exit {f['rc']}): no figure from that run.")
    for np in nps:
        lines += ["", f"**{np} ranks** (µs: median over trials of the slowest rank's mean time per"
                  " allreduce; busbw in GB/s)", ""] + table(figures, systems, np)
    return "\n".join(lines) + "\n"


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


def regenerate_doc(doc, workload, body, svg):
    """Replaces the text between the doc's bench/peers markers for workload; copies the plot."""
    doc = Path(doc)
    begin, end = f"<!-- bench/peers {workload}: begin -->", f"<!-- bench/peers {workload}: end -->"
    text = doc.read_text()
    if begin not in text or end not in text:
        sys.exit(f"report.py: {doc} has no '{begin}' ... '{end}' markers to regenerate")
    image = doc.parent / "img" / f"peers-{workload}.svg"
    shutil.copyfile(svg, image)
    body += f"\n![{workload}: busbw against message size, every system]({image.relative_to(doc.parent)})\n"
    head, rest = text.split(begin, 1)
    doc.write_text(head + begin + "\n" + body + end + rest.split(end, 1)[1])


def parse(md):
    """{(label, np): {bytes: µs}} read back from a written table."""
    got, np, head = defaultdict(dict), None, None
    for line in Path(md).read_text().splitlines():
        m = re.match(r"\*\*(\d+) ranks\*\*", line)
        if m:
            np, head = int(m.group(1)), None
        elif np and line.startswith("| size"):
            head = [c.strip() for c in line.strip("|").split("|")]
        elif np and head and line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            for name, cell in zip(head[1:], cells[1:]):
                if name.endswith(" µs") and "/" not in name and cell != "-":
                    got[(name[:-3], np)][size_bytes(cells[0])] = float(cell)
    return got


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", default="allreduce")
    p.add_argument("--out")
    p.add_argument("--systems", default=",".join(LABELS))
    p.add_argument("--command", default="bench/peers/run.sh BUILD_DIR")
    p.add_argument("--doc")
    p.add_argument("--parse", help="a written table to read back")
    p.add_argument("--expect", default="", help="system:np pairs that must have figures")
    args = p.parse_args()
    if args.parse:
        got = parse(args.parse)
        for pair in filter(None, args.expect.split(",")):
            system, np = pair.split(":")
            if not got.get((LABELS[system], int(np))):
                sys.exit(f"report.py: {args.parse} has no figures for {system} at {np} ranks")
        print(f"report.py: {args.parse}: {sum(len(v) for v in got.values())} figures")
        return
    figures, failed = medians(Path(args.out) / "results.txt", args.workload)
    nps = sorted({np for _, np in figures})
    md = Path(args.out) / f"{args.workload}.md"
    md.write_text(markdown(args, figures, failed, nps))
    back = parse(md)  # what others will read must parse back to the same figures
    for (system, np), by_size in figures.items():
        if set(back[(LABELS[system], np)]) != set(by_size):
            sys.exit(f"report.py: {md} does not read back {system} at {np} ranks")
    svg = Path(args.out) / f"{args.workload}.svg"
    if figures:
        plot(figures, nps, svg)
    if args.doc:
        regenerate_doc(args.doc, args.workload, md.read_text(), svg)
    print(f"report.py: wrote {md}" + (f" and {svg}" if figures else ""))


if __name__ == "__main__":
    main()

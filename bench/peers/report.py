"""Turns bench/peers/run.sh's RESULT lines into one markdown table (and a plot, where the workload
draws one) per workload, and regenerates that workload's section of docs/comparison.md (between
its bench/peers markers). The parts every workload shares live here: the RESULT/FAILED line
format, the header (command, versions, which systems ran and why the others did not) and the doc
regeneration. What a workload's figures are and how they are tabulated lives in its own folder,
<workload>/report.py, which provides:

  figures(results)  -> the workload's figures from the parsed RESULT lines (a falsy value: none)
  body(figures, systems, nps) -> markdown lines
  plot(figures, nps, svg)     -> draws svg (optional)
  parse(md)         -> {(label, np): {key: value}} read back from a written table (optional)

  report.py --workload allreduce --out OUT --systems cohort,horovod,... --command CMD [--doc FILE]
  report.py --workload allreduce --parse OUT/allreduce.md [--expect cohort:2]

Standard library only: run by /usr/bin/python3.
"""

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = {"cohort": "Cohort", "cohort2": "Cohort (torch 2)", "horovod": "Horovod",
          "torch": "PyTorch (torchrun, gloo)", "torchft": "TorchFT"}
LAUNCHERS = {"cohort": "`cohortrun -np N` (cohort.torch on Debian's torch 1.13)",
             "cohort2": "`cohortrun -np N` (cohort.torch pip-installed into the peers' torch 2.x venv)",
             "horovod": "`horovodrun --gloo -np N -H localhost:N` (horovod.torch)",
             "torch": "`torchrun --standalone --nproc-per-node N`",
             "torchft": "`torchft_lighthouse` + one `torchrun` replica group per rank"}


def fields(line):
    """The key=value pairs of a RESULT or FAILED line."""
    return dict(kv.split("=", 1) for kv in line.split()[1:])


def results(results_file, workload):
    """(RESULT lines' fields, FAILED lines' fields) of one workload."""
    got, failed = [], []
    for line in Path(results_file).read_text().splitlines():
        kind = line.split(" ", 1)[0]
        if kind in ("RESULT", "FAILED") and fields(line).get("workload") == workload:
            (got if kind == "RESULT" else failed).append(fields(line))
    return got, failed


def header(args, failed):
    """The command, versions, and each system's status (measured, or why not): never a silent gap."""
    out = Path(args.out)
    missing = dict(line.split(": ", 1) for line in (out / "missing.txt").read_text().splitlines()
                   if ": " in line)
    lines = [f"Command: `{args.command}`; versions and machine:", ""]
    lines += ["```", (out / "versions.txt").read_text().rstrip(), "```", "",
              "| system | launched by | status |", "|---|---|---|"]
    for s in args.systems.split(","):
        lines.append(f"| {LABELS.get(s, s)} | {LAUNCHERS.get(s, '')} | {missing.get(s, 'measured')} |")
    for f in failed:
        lines.append(f"\nFAILED: {LABELS.get(f['system'], f['system'])} at {f['np']} ranks, trial "
                     f"{f['trial']} (exit {f['rc']}): no figure from that run (log: "
                     f"{Path(f['log']).name}).")
    return lines


def bars(svg, title, ylabel, clusters, series, value, log=True):
    """A clustered bar chart (gnuplot SVG): one cluster per name in clusters, one bar per (key,
    label) in series, of height value(cluster, key); a None value leaves the bar out."""
    dat = svg.with_suffix(".dat")
    rows = []
    for cluster in clusters:
        cells = [value(cluster, key) for key, _ in series]
        rows.append(f'"{cluster}" ' + " ".join("-" if v is None else f"{v:.6g}" for v in cells))
    dat.write_text("\n".join(rows) + "\n")
    plots = ", ".join(f"'{dat}' using {i + 2}:xtic(1) title '{label}'"
                      for i, (_, label) in enumerate(series))
    script = (f"set terminal svg size 900,520 dynamic; set output '{svg}'; set datafile missing '-';"
              " set style data histogram; set style histogram clustered gap 1;"
              " set style fill solid 0.8 border -1; set grid ytics; set key top left;"
              f" set xtics rotate by -20; {'set logscale y;' if log else 'set yrange [0:*];'}"
              f" set ylabel '{ylabel}'; set title '{title}'; plot {plots}")
    subprocess.run(["gnuplot", "-e", script], check=True)


def regenerate_doc(doc, workload, body, svg):
    """Replaces the text between the doc's bench/peers markers for workload; copies the plot."""
    doc = Path(doc)
    begin, end = f"<!-- bench/peers {workload}: begin -->", f"<!-- bench/peers {workload}: end -->"
    text = doc.read_text()
    if begin not in text or end not in text:
        sys.exit(f"report.py: {doc} has no '{begin}' ... '{end}' markers to regenerate")
    if svg.exists():
        image = doc.parent / "img" / f"peers-{workload}.svg"
        shutil.copyfile(svg, image)
        body += f"\n![{workload}, every system]({image.relative_to(doc.parent)})\n"
    head, rest = text.split(begin, 1)
    doc.write_text(head + begin + "\n" + body + end + rest.split(end, 1)[1])


def table_rows(md, section):
    """(section, head, cells) for every body row of the markdown tables in md that follow a line
    matching the regex `section` (its first group names the section, e.g. the model or the rank
    count); head is the cells of that table's header row. What each workload's parse() reads."""
    current, head = None, None
    for line in Path(md).read_text().splitlines():
        m = re.match(section, line)
        if m:
            current, head = m.group(1), None
        elif not line.startswith("|"):
            head = None  # a table ends at the first line that is not a row
        elif current is not None and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if head is None:
                head = cells
            else:
                yield current, head, cells


def load(workload):
    """The module <workload>/report.py."""
    path = HERE / workload / "report.py"
    if not path.exists():
        sys.exit(f"report.py: no workload '{workload}' ({path} is missing)")
    spec = importlib.util.spec_from_file_location(f"report_{workload}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_parse(module, md, expect):
    """Reads a written table back; every system:np pair in expect must have figures."""
    got = module.parse(md)
    for pair in filter(None, expect.split(",")):
        system, np = pair.split(":")
        if not got.get((LABELS[system], int(np))):
            sys.exit(f"report.py: {md} has no figures for {system} at {np} ranks")
    print(f"report.py: {md}: {sum(len(v) for v in got.values())} figures")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", required=True)
    p.add_argument("--out")
    p.add_argument("--systems", default=",".join(LABELS))
    p.add_argument("--command", default="bench/peers/run.sh BUILD_DIR")
    p.add_argument("--doc")
    p.add_argument("--parse", help="a written table to read back")
    p.add_argument("--expect", default="", help="system:np pairs that must have figures")
    args = p.parse_args()
    module = load(args.workload)
    if args.parse:
        return check_parse(module, args.parse, args.expect)
    got, failed = results(Path(args.out) / "results.txt", args.workload)
    module.out_dir = Path(args.out)  # for a workload whose table reads its run logs (recovery)
    figures = module.figures(got)
    nps = sorted({int(r["np"]) for r in got})
    md = Path(args.out) / f"{args.workload}.md"
    md.write_text("\n".join(header(args, failed) + module.body(figures, args.systems.split(","), nps))
                  + "\n")
    if hasattr(module, "parse"):  # what others will read must parse back to the same figures
        module.check_read_back(md, figures)
    svg = Path(args.out) / f"{args.workload}.svg"
    if figures and hasattr(module, "plot"):
        module.plot(figures, nps, svg)
    if args.doc:
        regenerate_doc(args.doc, args.workload, md.read_text(), svg)
    print(f"report.py: wrote {md}" + (f" and {svg}" if svg.exists() else ""))


if __name__ == "__main__":
    main()

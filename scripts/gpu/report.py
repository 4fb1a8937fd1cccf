"""Writes the device check's report (markdown, to stdout) from what scripts/gpu/check.sh left in
its work folder WORK (<build>/gpu-check): steps.tsv, environment.md, logs/tests.log, the build's
Testing/Temporary/LastTest.log, bench/results.tsv and bench/NAME.md.
  report.py WORK"""
import os
import sys
from pathlib import Path

import ctest_log

FAILED_TAIL = 30  # lines of a failing test's output in the report


def read(path, default=""):
    p = Path(path)
    return p.read_text(errors="replace") if p.exists() else default


def steps_section(work):
    rows = [line.split("\t") for line in read(work / "steps.tsv").splitlines() if line]
    out = ["## Steps", "", "| Step | Result | Seconds | Note |", "|---|---|---|---|"]
    out += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3] if len(r) > 3 else ''} |" for r in rows]
    return out, rows


def tests_section(work):
    results = ctest_log.results(work / "logs" / "tests.log")
    outputs = ctest_log.outputs(work.parent / "Testing" / "Temporary" / "LastTest.log")
    out = ["## Tests (ctest -L gpu)", ""]
    if not results:
        return out + ["No test result: the tests step was not reached, or no test is labelled "
                      "`gpu` (logs/tests.log)."]
    out += ["| Test | Result | Seconds | Last line of output |", "|---|---|---|---|"]
    for name, status, secs in results:
        last = ctest_log.telling_line(outputs.get(name, ""), status).replace("|", "\\|")[:160]
        out.append(f"| {name} | {status} | {secs:.1f} | {last} |")
    for name, status, _ in results:
        if status not in ("Passed", "Skipped"):
            out += ["", f"### {name}: {status} (last {FAILED_TAIL} lines)", "", "```",
                    ctest_log.tail(outputs.get(name, "(no output recorded)"), FAILED_TAIL), "```"]
    return out


def bench_section(work):
    rows = [line.split("\t") for line in read(work / "bench" / "results.tsv").splitlines() if line]
    out = ["## Benchmarks (bench/gpu)", ""]
    if not rows:
        return out + ["No benchmark ran (the bench step was not reached, or bench/gpu has none)."]
    for name, rc, secs in rows:
        status = {"0": "ok", "77": "skipped (no GPU)", "not reached": "not reached"}.get(
            rc, f"exit {rc} (124: its time ran out)")
        out += [f"### {name}: {status}, {secs} s", ""]
        table = read(work / "bench" / f"{name}.md").strip()
        out.append(table if table else "(no table)")
        if rc not in ("0", "77", "not reached"):
            out += ["", "```", ctest_log.tail(read(work / "bench" / f"{name}.log"), 20), "```"]
        out.append("")
    return out


def main(argv):
    work = Path(argv[1])
    elapsed = os.environ.get("COHORT_CHECK_ELAPSED", "?")
    deadline = os.environ.get("COHORT_CHECK_DEADLINE", "?")
    steps, rows = steps_section(work)
    out = ["# Cohort device check", "",
           f"{elapsed} s of the {deadline} s deadline. Logs: logs.tar.gz (gpu-check/logs).", "",
           "## Environment", "", read(work / "environment.md", "(not recorded)").strip(), ""]
    out += steps + [""] + tests_section(work) + [""] + bench_section(work)
    unreached = [r[0] if r[1] == "not reached" else f"{r[0]} ({r[1]})"
                 for r in rows if r[1] in ("not reached", "timed out")]
    unreached += [f"bench {r[0]}" for r in (line.split("\t") for line in
                  read(work / "bench" / "results.tsv").splitlines() if line)
                  if r[1] == "not reached"]
    out += ["", "## Not reached", ""]
    out += [f"- {u}" for u in unreached] if unreached else ["Nothing: every step ran."]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

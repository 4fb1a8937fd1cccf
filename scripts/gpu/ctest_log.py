"""Reads what ctest wrote: the result lines of its console log and each test's output in
Testing/Temporary/LastTest.log. Shared by gpu_targets.py (the verdict) and report.py."""
import re
from pathlib import Path

_RESULT = re.compile(r"Test\s+#\d+: (\S+) \.*\s*(?:\*+)?(.+?)\s+([\d.]+) sec\s*$")


def results(console_log):
    """[(name, status, seconds)] in run order; status as ctest prints it: Passed, Failed, Skipped,
    Timeout, 'Not Run', 'Exception: ...'."""
    path = Path(console_log)
    if not path.exists():
        return []
    found = []
    for line in path.read_text(errors="replace").splitlines():
        m = _RESULT.search(line)
        if m:
            found.append((m.group(1), m.group(2).strip(), float(m.group(3))))
    return found


def outputs(last_test_log):
    """{name: output} from LastTest.log."""
    path = Path(last_test_log)
    if not path.exists():
        return {}
    text = path.read_text(errors="replace")
    found = {}
    for block in re.split(r"\n(?=\d+/\d+ Testing: )", text):
        m = re.match(r"\d+/\d+ Testing: (\S+)", block)
        out = re.search(r"\nOutput:\n-+\n(.*?)<end of output>", block, re.S)
        if m and out:
            found[m.group(1)] = out.group(1)
    return found


def tail(text, lines):
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def telling_line(text, status):
    """The line that says most about a result: for a skip, the last that says why (mentions a
    skip or a GPU); else the last with a letter or digit (not mpirun's rule of dashes)."""
    lines = [line for line in text.splitlines() if re.search(r"[A-Za-z0-9]", line)]
    if status == "Skipped":
        why = [line for line in lines if re.search(r"skip|gpu|cuda", line, re.I)]
        lines = why or lines
    return lines[-1].strip() if lines else ""

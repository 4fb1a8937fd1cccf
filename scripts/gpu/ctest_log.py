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

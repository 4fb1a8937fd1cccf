#!/usr/bin/env python3
"""Refuses, in every shell script that sets pipefail, a pipe into a reader that may stop before
its writer is done (`grep -q`, `grep -m N`, `head`): once the reader exits, the writer's next
write dies of SIGPIPE and pipefail turns a match into a failure, now and then. CI's gpu_check.gather
failed so once (`ldd | grep -q` under pipefail). Read the whole output first (`x=$(cmd)` then
`grep -q ... <<<"$x"`), use a reader that reads to the end (`sed -n 1p`, awk without exit), or a
process substitution (`grep -q ... < <(cmd)`), which pipefail does not see.
  check_pipefail_readers.py SOURCE_DIR"""
import pathlib
import re
import sys

# A single `|` (not `||`), then a reader that may stop early.
EARLY_READER = re.compile(r"(?<!\|)\|(?!\|)\s*(head\b|grep\s+(-\w*[qm]\w*|--quiet|--max-count)\b)")
FOLDERS = ("scripts", "test", "bench", "examples", ".ci")


def code_of(line):
    """The line without a trailing comment (a `#` after whitespace, outside quotes: good enough)."""
    return re.split(r"\s#", line, maxsplit=1)[0] if not line.lstrip().startswith("#") else ""


def scripts(root):
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and (path.suffix == ".sh" or path.name == "run"):
                yield path


def main():
    root = pathlib.Path(sys.argv[1])
    found, checked = [], 0
    for path in scripts(root):
        text = path.read_text(errors="replace")
        if "pipefail" not in text:
            continue
        checked += 1
        for number, line in enumerate(text.splitlines(), 1):
            if EARLY_READER.search(code_of(line)):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    if found:
        print("pipes into a reader that may stop early, in scripts that set pipefail:")
        print("\n".join(found))
        print(__doc__.split("  check_")[0])
        return 1
    if checked < 20:
        print(f"FAIL: only {checked} scripts set pipefail: is {root} the source folder?")
        return 1
    print(f"PASS: {checked} scripts that set pipefail pipe into no early-stopping reader")
    return 0


if __name__ == "__main__":
    sys.exit(main())

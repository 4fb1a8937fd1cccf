#!/usr/bin/env python3
"""Checks docs/cohortrun.md against `cohortrun --help`, both ways.

The launcher's long options are read from its --help output (the first field of each option line,
e.g. `-H,--hosts`). The documented ones are the `--option`s written in backquotes in the first
column of every table of docs/cohortrun.md whose first header cell is "Flag":

    | Flag | Default | Meaning |
    |---|---|---|
    | `--min-np N` | `1` | ... |

Every long option of --help (but --help itself) must be in such a table, and every option in such
a table must be accepted by cohortrun. Flags that are planned but not implemented belong in a
table with another first header (e.g. "Planned flag"), which this check ignores.

Usage: check_cohortrun_doc.py COHORTRUN DOC. Exits 1 naming every difference.
"""
import re
import subprocess
import sys

LONG_OPTION = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
DOC_OPTION = re.compile(r"`(--[a-z0-9][a-z0-9-]*)")


def help_options(cohortrun):
    result = subprocess.run([cohortrun, "--help"], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        sys.exit(f"{cohortrun} --help exited with {result.returncode}: {result.stderr}")
    options = set()
    for line in result.stdout.splitlines():
        if not line.startswith("  -"):
            continue
        for name in line.split()[0].split(","):
            if LONG_OPTION.match(name):
                options.add(name)
    options.discard("--help")
    return options


def doc_options(doc):
    """Returns {option: line} for the options in the first column of the doc's Flag tables."""
    found = {}
    in_flag_table = False
    with open(doc, encoding="utf-8") as f:
        previous_was_table = False
        for n, line in enumerate(f, 1):
            if not line.startswith("|"):
                previous_was_table = False
                continue
            first_cell = line.strip().strip("|").split("|")[0].strip()
            if not previous_was_table:
                in_flag_table = first_cell == "Flag"
            previous_was_table = True
            if in_flag_table:
                for name in DOC_OPTION.findall(first_cell):
                    found.setdefault(name, n)
    return found


def main():
    cohortrun, doc = sys.argv[1], sys.argv[2]
    in_help = help_options(cohortrun)
    in_doc = doc_options(doc)
    problems = []
    for name in sorted(in_help - set(in_doc)):
        problems.append(f"{doc}: {name} is an option of cohortrun (--help) but is not in the first "
                        "column of a | Flag | table")
    for name in sorted(set(in_doc) - in_help):
        problems.append(f"{doc}:{in_doc[name]}: {name} is documented but cohortrun --help does not "
                        "list it")
    if not in_help or not in_doc:
        problems.append(f"found {len(in_help)} options in --help and {len(in_doc)} in the doc: "
                        "the check is looking in the wrong place")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"{doc} documents all {len(in_help)} long options of cohortrun --help")
    return 0


if __name__ == "__main__":
    sys.exit(main())

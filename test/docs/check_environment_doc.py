#!/usr/bin/env python3
"""Checks docs/environment.md against the code, both ways.

The code's variables are the string literals "COHORT_..." in the C++ sources of the library, the
launcher and the examples (not the tests, which only set them). The doc's variables are the
backquoted `COHORT_...` names in the first column of its tables. Every variable of the code must
be in the doc, every variable of the doc must be in the code, and a table with a Default column
must give each of its variables a default. Tables without one (the variables cohortrun sets for its
workers) need none.

Usage: check_environment_doc.py SOURCE_DIR. Exits 1 naming every difference.
"""
import pathlib
import re
import sys

SOURCE_DIRS = ["base", "core", "ops", "discovery", "state", "elastic", "include", "examples"]
CODE_NAME = re.compile(r'"(COHORT_[A-Z0-9_]+)"')
DOC_NAME = re.compile(r"`(COHORT_[A-Z0-9_]+)`")


def code_variables(root):
    found = {}
    for d in SOURCE_DIRS:
        for path in sorted((root / d).rglob("*")):
            if path.suffix not in (".cc", ".h") or not path.is_file():
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for name in CODE_NAME.findall(line):
                    found.setdefault(name, f"{path.relative_to(root)}:{n}")
    return found


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def doc_variables(doc):
    """Returns {name: line} and a list of problems (rows without a default)."""
    found, problems = {}, []
    header = None
    for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        row = cells(line)
        if header is None:
            header = [c.lower() for c in row]
            continue
        if all(set(c) <= set("-: ") for c in row):
            continue  # the |---| line under the header
        names = DOC_NAME.findall(row[0])
        for name in names:
            found.setdefault(name, n)
        if names and "default" in header:
            default = row[header.index("default")] if len(row) > header.index("default") else ""
            if not default:
                problems.append(f"docs/environment.md:{n}: {', '.join(names)} has no default")
    return found, problems


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    in_code = code_variables(root)
    in_doc, problems = doc_variables(root / "docs" / "environment.md")
    for name in sorted(set(in_code) - set(in_doc)):
        problems.append(f"{in_code[name]}: {name} is read here but not documented in "
                        "docs/environment.md (add a row: | `NAME` | default | meaning |)")
    for name in sorted(set(in_doc) - set(in_code)):
        problems.append(f"docs/environment.md:{in_doc[name]}: {name} is documented but no source "
                        f"file in {', '.join(SOURCE_DIRS)} names it")
    if not in_code or not in_doc:
        problems.append(f"found {len(in_code)} variables in the code and {len(in_doc)} in the doc: "
                        "the check is looking in the wrong place")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"docs/environment.md documents all {len(in_code)} COHORT_* variables of the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())

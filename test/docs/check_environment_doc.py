#!/usr/bin/env python3
"""Checks docs/environment.md against the code, both ways.

Config's settings are the rows of its table (core/config_table.h), as `cohort_env_table` prints
them: NAME<TAB>DEFAULT<TAB>DOC. Each must be in the doc, in a table with a Default column whose
cell starts with the row's default (`30`, or unset). Every variable of the doc must be one of those
rows or one of the variables that are not Config's settings: the launch environment's names
(base/launch_env.h), which the runtime reads together rather than through the table.

The code's variables are the string literals "COHORT_..." in the C++ sources of the library, the
launcher, the examples and the benchmarks (not the tests, which only set them). The doc's variables
are the backquoted `COHORT_...` names in the first column of its tables. Every variable of the code
must be in the doc, every variable of the doc must be in the code, and a table with a Default column
must give each of its variables a default. Tables without one (the variables cohortrun sets for its
workers) need none.

Usage: check_environment_doc.py SOURCE_DIR ENV_TABLE. Exits 1 naming every difference.
"""
import pathlib
import re
import subprocess
import sys

SOURCE_DIRS = ["base", "core", "ops", "rendezvous", "discovery", "state", "elastic", "include",
               "examples", "bench"]
CODE_NAME = re.compile(r'"(COHORT_[A-Z0-9_]+)"')
DOC_NAME = re.compile(r"`(COHORT_[A-Z0-9_]+)`")
# Where the variables that are not Config's settings are named.
OTHER_VARIABLES = ["base/launch_env.h"]


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
    """Returns {name: line}, {name: its Default cell, None in a table without one} and a list of
    problems (rows without a default)."""
    found, defaults, problems = {}, {}, []
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
        default = None
        if "default" in header:
            default = row[header.index("default")] if len(row) > header.index("default") else ""
            if names and not default:
                problems.append(f"docs/environment.md:{n}: {', '.join(names)} has no default")
        for name in names:
            found.setdefault(name, n)
            defaults.setdefault(name, default)
    return found, defaults, problems


def table_rows(env_table):
    """Config's settings as cohort_env_table prints them: {name: default}, and problems."""
    out = subprocess.run([env_table], check=True, capture_output=True, text=True).stdout
    rows, problems = {}, []
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) != 3 or not all(fields):
            problems.append(f"{env_table}: not NAME<TAB>DEFAULT<TAB>DOC: {line!r}")
            continue
        name, default, _ = fields
        if name in rows:
            problems.append(f"core/config_table.cc: {name} has two rows")
        rows[name] = default
    return rows, problems


def other_variables(root):
    """The variables that are not Config's settings: {name: where it is named}."""
    found = {}
    for file in OTHER_VARIABLES:
        for n, line in enumerate((root / file).read_text(encoding="utf-8").splitlines(), 1):
            for name in CODE_NAME.findall(line):
                found.setdefault(name, f"{file}:{n}")
    return found


def check_table(rows, others, in_doc, doc_defaults):
    """Every row documented with its default; every variable of the doc a row or another's."""
    problems = []
    for name, default in rows.items():
        if name not in in_doc:
            problems.append(f"core/config_table.cc: {name} (default {default}) is not documented "
                            "in docs/environment.md (add a row: | `NAME` | default | meaning |)")
            continue
        cell = doc_defaults[name]
        expected = "unset" if default == "unset" else f"`{default}`"
        if cell is None or not cell.startswith(expected):
            problems.append(f"docs/environment.md:{in_doc[name]}: {name}'s default is {default} "
                            f"(core/config_table.cc), but the doc gives {cell!r}")
    for name in sorted(set(rows) & set(others)):
        problems.append(f"{others[name]}: {name} is also a row of core/config_table.cc")
    for name in sorted(set(in_doc) - set(rows) - set(others)):
        problems.append(f"docs/environment.md:{in_doc[name]}: {name} is documented but is neither "
                        f"a row of core/config_table.cc nor named in {', '.join(OTHER_VARIABLES)}")
    return problems


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    rows, problems = table_rows(sys.argv[2])
    in_code = code_variables(root)
    in_doc, doc_defaults, doc_problems = doc_variables(root / "docs" / "environment.md")
    problems += doc_problems
    problems += check_table(rows, other_variables(root), in_doc, doc_defaults)
    for name in sorted(set(in_code) - set(in_doc)):
        problems.append(f"{in_code[name]}: {name} is read here but not documented in "
                        "docs/environment.md (add a row: | `NAME` | default | meaning |)")
    for name in sorted(set(in_doc) - set(in_code)):
        problems.append(f"docs/environment.md:{in_doc[name]}: {name} is documented but no source "
                        f"file in {', '.join(SOURCE_DIRS)} names it")
    if not in_code or not in_doc or not rows:
        problems.append(f"found {len(in_code)} variables in the code, {len(rows)} rows in the table "
                        f"and {len(in_doc)} variables in the doc: the check is looking in the wrong "
                        "place")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"docs/environment.md documents all {len(in_code)} COHORT_* variables of the code, "
          f"the {len(rows)} settings of Config's table with their defaults")
    return 0


if __name__ == "__main__":
    sys.exit(main())

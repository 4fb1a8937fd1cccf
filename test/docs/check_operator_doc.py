#!/usr/bin/env python3
"""Checks the Kubernetes operators' variables against the code, both ways.

The code's variables are the string literals of cohortrun/operator_env.cc in capitals with an
underscore (PET_NNODES, OMPI_MCA_orte_default_hostfile, ...) and the pod's MASTER_ADDR, RANK,
... . The docs' are the backquoted names in the first column of the tables of docs/kubernetes.md
and docs/cohortrun.md headed "| Variable | Set by |" or "| Variable | Flag |". Each doc must list every variable of the code
and nothing else.

Usage: check_operator_doc.py SOURCE_DIR. Exits 1 naming every difference.
"""
import pathlib
import re
import sys

CODE_NAME = re.compile(r'"((?:PET|OMPI_MCA|MASTER)_[A-Za-z_]+|WORLD_SIZE|RANK)"')
DOC_NAME = re.compile(r"`([A-Z][A-Za-z0-9_]+)`")


def doc_variables(path):
    names, in_table = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(("| Variable | Flag |", "| Variable | Set by |")):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("|---"):
            names |= set(DOC_NAME.findall(line.split("|")[1]))
    return names


def main():
    root = pathlib.Path(sys.argv[1])
    code = set(CODE_NAME.findall((root / "cohortrun/operator_env.cc").read_text()))
    problems = []
    for doc in ["docs/kubernetes.md", "docs/cohortrun.md"]:
        documented = doc_variables(root / doc)
        problems += [f"{doc}: {n} is read by cohortrun but not listed" for n in code - documented]
        problems += [f"{doc}: {n} is listed but cohortrun does not read it" for n in documented - code]
    print("\n".join(problems) or f"{len(code)} variables, documented in both")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

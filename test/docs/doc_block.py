#!/usr/bin/env python3
"""Prints the fenced block that follows the line "<!-- MARKER ..." in a doc, for the tests that
run what docs/kubernetes.md shows (test/scenarios/agent_k8s.sh, test/remote/ssh_netns_test.sh).

With --env, every line must be NAME=VALUE followed by whitespace and a '#' comment; it prints
NAME=VALUE. Without, it prints the block's lines as they are.

Usage: doc_block.py DOC MARKER [--env]. Exits 1 when the marker, the block or a line is wrong.
"""
import re
import sys


def main():
    doc, marker, env = sys.argv[1], sys.argv[2], sys.argv[3:] == ["--env"]
    lines = open(doc, encoding="utf-8").read().splitlines()
    starts = [i for i, line in enumerate(lines)
              if re.match("<!-- " + re.escape(marker) + "[: ]", line)]
    if len(starts) != 1 or not lines[starts[0] + 1].startswith("```"):
        sys.exit(f"{doc}: no single '<!-- {marker}' line followed by a fenced block")
    for line in lines[starts[0] + 2:]:
        if line.startswith("```"):
            return 0
        if env:
            m = re.fullmatch(r"([A-Za-z_][A-Za-z_0-9]*)=(.*?)\s+#.*", line)
            if not m:
                sys.exit(f"{doc}: '{line}' is not NAME=VALUE  # comment")
            line = f"{m.group(1)}={m.group(2)}"
        print(line)
    sys.exit(f"{doc}: the block after '{marker}' does not end")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for Cohort's public headers (see docs/Doxyfile).

The headers are commented in the project's plain style (`//`, as in LevelDB and Gloo), which
Doxygen does not read. This filter shows Doxygen the same text as documentation, line for line,
so that its warnings point at the real lines:

- the comment block at the top of a header (what the file is for) becomes the file's page;
- a comment on its own line documents the declaration that follows it;
- a comment after a declaration on the same line (an enum value, a member) documents that line;
- comment lines indented by three spaces or more are example code, shown as code.

Comments after a closing brace (`}  // namespace cohort`) and inside preprocessor lines are left
alone. The header files themselves are never changed.
"""
import re
import sys

OWN_LINE = re.compile(r"^(\s*)//(?!/)(.*)$")
TRAILING = re.compile(r"^(\s*[^\s/}#].*?;|\s*[^\s/}#].*?,|\s*[A-Za-z_]\w*)(\s+)//(?![/<])(.*)$")


def comment_text(text):
    # A line indented by three spaces or more is example code (the headers' convention); Markdown
    # needs four more than the prose around it to show it as code.
    return "    " + text if text.startswith("   ") else text


def filter_lines(lines):
    out = []
    in_file_block = True  # still inside the comment block that opens the file
    for line in lines:
        own = OWN_LINE.match(line)
        if in_file_block and own and not own.group(1):
            out.append("///" + comment_text(own.group(2)) + "\n")
            continue
        if in_file_block and out:
            # The block that opens the file describes the file: \file, with no name, says so.
            out[-1] = out[-1].rstrip("\n") + " \\file\n"
        in_file_block = False
        if own:
            out.append(own.group(1) + "///" + comment_text(own.group(2)) + "\n")
            continue
        trailing = TRAILING.match(line)
        if trailing:
            out.append(trailing.group(1) + trailing.group(2) + "///<" + trailing.group(3) + "\n")
            continue
        out.append(line)
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write("".join(filter_lines(f.readlines())))


if __name__ == "__main__":
    main()

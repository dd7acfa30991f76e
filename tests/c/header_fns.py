#!/usr/bin/env python3
"""Prints the functions a C header declares, one name per line, sorted.

Usage: header_fns.py HEADER [CC]

The header is run through the C preprocessor (CC, default `cc`) first, so
names in comments, in `#if 0` blocks or in the C++-only parts never count;
of the preprocessed text only the lines that come from HEADER itself are
read (not the system headers it includes). A declaration is a file-scope
statement whose first parenthesis follows the function's name: a name in
a function-pointer typedef (`(*conch_chunk_cb)`) or a struct field is not
a function of the header.
"""

import os
import re
import subprocess
import sys

LINEMARKER = re.compile(r'^# \d+ "(.*)"')
# A statement that starts without parentheses, then the name and its "(".
DECLARATION = re.compile(r"^[^(){}]*?\b(conch_[A-Za-z0-9_]+)\s*\(", re.S)


def own_text(header: str, cc: str) -> str:
    out = subprocess.run([cc, "-E", "-x", "c", header], check=True, capture_output=True, text=True)
    target = os.path.realpath(header)
    keep, lines = False, []
    for line in out.stdout.splitlines():
        marker = LINEMARKER.match(line)
        if marker:
            keep = os.path.realpath(marker.group(1)) == target
        elif keep:
            lines.append(line)
    return "\n".join(lines)


def declared(text: str) -> set:
    names, depth, statement = set(), 0, []
    # Split the text into file-scope statements: a ';' outside braces ends
    # one, and whatever is inside braces (struct fields, enumerators) is
    # dropped from it.
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0 and ch == ";":
            match = DECLARATION.match("".join(statement))
            if match:
                names.add(match.group(1))
            statement = []
        elif depth == 0:
            statement.append(ch)
    return names


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    cc = sys.argv[2] if len(sys.argv) == 3 else "cc"
    names = declared(own_text(sys.argv[1], cc))
    if not names:
        sys.exit(f"{sys.argv[1]}: no function declarations found")
    print("\n".join(sorted(names)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks the repository's Markdown: README.md stays a page (at most 10 KB),
and every relative link in README.md and docs/ resolves to a file or folder
of the checkout, and its #anchor (when it has one) to a heading of that file.

A stale link is how a reader learns the docs are not kept; the test command
runs this so none lands. Links to the web are not fetched (no network here).
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_LIMIT = 10 * 1024
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def prose(text):
    """The text outside fenced code blocks (a link there is an example)."""
    inside = False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            inside = not inside
        elif not inside:
            yield line


def anchors(path):
    """GitHub's anchors for the headings of a Markdown file."""
    found = set()
    for line in prose(path.read_text(encoding="utf-8")):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            title = re.sub(r"[^\w\- ]", "", title)
            found.add(title.replace(" ", "-"))
    return found


def broken_links(path):
    for number, line in enumerate(prose(path.read_text(encoding="utf-8")), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                yield f"{path.relative_to(ROOT)}: {target}: no such file"
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                yield f"{path.relative_to(ROOT)}: {target}: no such heading"


def main():
    problems = []
    size = (ROOT / "README.md").stat().st_size
    if size > README_LIMIT:
        problems.append(f"README.md is {size} bytes, more than {README_LIMIT}")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        problems.extend(broken_links(path))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

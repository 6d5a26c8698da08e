#!/usr/bin/env python3
"""Checks the snippet markers that the documentation quotes code through.

The guide quotes live sources between markers: a comment, in the file's
own comment syntax, holding the scissors ``--8<--`` then ``[start:NAME]``,
and another holding them then ``[end:NAME]``. A page quotes the section
with a line of the scissors then ``"PATH:NAME"`` in docs/**/*.md. ``mkdocs build
--strict`` (pymdown-extensions' snippets with ``check_paths``) fails on a
missing file or section; this script fails on what the build accepts:

* a start without its end, an end without its start, a name used twice in
  one file, or sections that overlap without nesting;
* a marker that no page quotes (stale: the text around it drifts unseen);
* a marker in a generated file (``@generated`` at its top): the next
  ``accgen generate`` would drop it;
* a marker in a file whose bytes a check depends on (see NO_MARKERS):
  quote such a file whole instead;
* a page that quotes a section or a file that does not exist, or quotes
  lines by number (``PATH:10:20``), which drift with every edit.

Usage: python3 scripts/check_doc_markers.py   (from anywhere; exit 1 on errors)
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Spelt in two pieces so that this file holds no marker itself.
SCISSORS = "--8" + "<--"
MARKER = re.compile(
    r"(?<!;)" + re.escape(SCISSORS)
    + r"[ \t]+\[[ \t]*(start|end)[ \t]*:[ \t]*([a-z][-_0-9a-z]*)[ \t]*\]",
    re.IGNORECASE,
)
INCLUDE = re.compile(r"^[ \t]*" + re.escape(SCISSORS) + r"[ \t]+\"([^\"]+)\"")
# Files whose exact bytes something checks, so that a marker line would
# break it: accgen's input fingerprint (Note [Input fingerprint] in
# generator/cli/generate.cpp) covers the spec directory, the templates and
# the user kernels in kernels/, and `accgen generate --check` compares the
# fingerprint the manifest records; golden and error cases compare output
# and line:column positions.
NO_MARKERS = [
    (re.compile(r"^specs/"), "specs/ is part of accgen generate's input "
     "fingerprint: `accgen generate --check` would fail"),
    (re.compile(r"^templates/"), "templates/ is part of accgen generate's "
     "input fingerprint: `accgen generate --check` would fail"),
    (re.compile(r"^generated_example/kernels/[^/]+$"), "the user kernels are "
     "part of accgen generate's input fingerprint: `accgen generate "
     "--check` would fail"),
    (re.compile(r"^tests/(golden|errors)/"), "golden and error cases "
     "compare exact output and line:column positions"),
]
LINE_RANGE = re.compile(r":-?[0-9]")
SECTION = re.compile(r"^(.*?):([a-z][-_0-9a-z]*)$", re.IGNORECASE)


def source_files():
    """Files of the checkout (tracked, or new and not ignored), docs aside."""
    listed = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "--cached", "--others",
         "--exclude-standard", "-z"],
        check=True, capture_output=True, text=True).stdout
    for path in sorted(set(filter(None, listed.split("\0")))):
        if path.startswith(("docs/", "site/")) or path == "mkdocs.yml":
            continue
        if os.path.isfile(os.path.join(ROOT, path)):
            yield path


def read(path):
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None


def scan_markers(errors):
    """{path: {name: start line}} of every balanced section."""
    sections = {}
    for path in source_files():
        text = read(path)
        if text is None or SCISSORS not in text:
            continue
        found = {}
        open_names = []
        for number, line in enumerate(text.splitlines(), 1):
            match = MARKER.search(line)
            if not match:
                continue
            kind, name = match.group(1).lower(), match.group(2)
            where = f"{path}:{number}"
            if kind == "start":
                if name in found or name in open_names:
                    errors.append(f"{where}: section '{name}' starts twice")
                    continue
                open_names.append(name)
                found[name] = number
            elif name not in open_names:
                errors.append(f"{where}: end of section '{name}', "
                              "which is not open")
            else:
                if open_names[-1] != name:
                    errors.append(f"{where}: section '{name}' ends inside "
                                  f"section '{open_names[-1]}'")
                open_names.remove(name)
        for name in open_names:
            errors.append(f"{path}:{found[name]}: section '{name}' "
                          "never ends")
        for pattern, reason in NO_MARKERS:
            if found and pattern.search(path):
                errors.append(f"{path}: no markers here: {reason} (quote "
                              "the file whole)")
        head = "\n".join(text.splitlines()[:3])
        if found and "@generated" in head:
            errors.append(f"{path}: markers in a generated file; accgen "
                          "generate rewrites it (quote it whole, or quote "
                          "a hand-written file)")
        if found:
            sections[path] = found
    return sections


def scan_pages(errors):
    """{(path, section or None)} that the pages quote."""
    quoted = set()
    docs = os.path.join(ROOT, "docs")
    for folder, _, names in sorted(os.walk(docs)):
        for name in sorted(names):
            if not name.endswith(".md"):
                continue
            page = os.path.relpath(os.path.join(folder, name), ROOT)
            with open(os.path.join(ROOT, page), encoding="utf-8") as f:
                lines = f.read().splitlines()
            for number, line in enumerate(lines, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1)
                section = SECTION.match(target)
                if section:
                    path, name = section.group(1), section.group(2)
                elif LINE_RANGE.search(target):
                    errors.append(f"{page}:{number}: '{target}' quotes lines "
                                  "by number; put markers in the source")
                    continue
                else:
                    path, name = target, None
                if not os.path.isfile(os.path.join(ROOT, path)):
                    errors.append(f"{page}:{number}: no file '{path}'")
                    continue
                quoted.add((path, name, page, number))
    return quoted


def main():
    errors = []
    sections = scan_markers(errors)
    quoted = scan_pages(errors)
    used = set()
    for path, name, page, number in sorted(quoted, key=str):
        if name is None:
            continue
        if name not in sections.get(path, {}):
            errors.append(f"{page}:{number}: no section '{name}' in {path}")
        used.add((path, name))
    for path, found in sorted(sections.items()):
        for name, number in sorted(found.items(), key=lambda item: item[1]):
            if (path, name) not in used:
                errors.append(f"{path}:{number}: section '{name}' is quoted "
                              "by no page in docs/ (stale marker)")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    count = sum(len(found) for found in sections.values())
    if errors:
        print(f"check_doc_markers: {len(errors)} error(s)", file=sys.stderr)
        return 1
    print(f"check_doc_markers: {count} sections in {len(sections)} files, "
          f"{len(quoted)} quotes, all balanced and quoted")
    return 0


if __name__ == "__main__":
    sys.exit(main())

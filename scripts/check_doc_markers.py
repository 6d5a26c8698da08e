#!/usr/bin/env python3
"""Checks what ties the documentation to the code: snippet markers, Notes,
and the present tense of docs/.

Snippet markers. The guide quotes live sources between markers: a comment,
in the file's own comment syntax, holding the scissors ``--8<--`` then
``[start:NAME]``, and another holding them then ``[end:NAME]``. A page
quotes the section with a line of the scissors then ``"PATH:NAME"`` in
docs/**/*.md. ``mkdocs build --strict`` (pymdown-extensions' snippets with
``check_paths``) fails on a missing file or section; this script fails on
what the build accepts:

* a start without its end, an end without its start, a name used twice in
  one file, or sections that overlap without nesting;
* a marker that no page quotes (stale: the text around it drifts unseen);
* a marker in a generated file (``@generated`` at its top): the next
  ``accgen generate`` would drop it;
* a marker in a file whose bytes a check depends on (see NO_MARKERS):
  quote such a file whole instead;
* a page that quotes a section or a file that does not exist, or quotes
  lines by number (``PATH:10:20``), which drift with every edit.

Notes. Longer rationale is a Note, defined once, in a comment of the code
that implements it, and cited by its title everywhere else (PyTorch's
convention). A definition is a comment line that holds nothing but the
word Note and the title in square brackets, followed at once by a comment
line of at least four tildes (``~~~~``), in the file's comment syntax
(``//``, ``///``, ``#``, or none inside a Python docstring). Any other
mention of a Note, in any file of the checkout (code, docs, templates,
tests, generated files; a title may wrap onto the next comment line), is a
citation. A page of docs/ shows a Note by quoting its definition through
snippet markers. The script fails, naming file:line, on:

* a Note cited where no definition exists (a line that names a Note alone,
  without tildes under it, is a citation too: the message says so);
* a Note defined more than once;
* a Note defined in a Markdown file: a definition as above, or a heading
  that starts with a Note.

Present tense. docs/ states what is true of the code, not how it came to
be: a page that holds a phrase of a work log (PHRASES: "tried and left",
"when last measured", ...) fails, naming file:line.

Usage: python3 scripts/check_doc_markers.py [--root DIR]
(from anywhere; DIR defaults to this checkout; exit 1 on errors)
"""

import argparse
import bisect
import os
import re
import subprocess
import sys

# Spelt in pieces so that this file holds no marker and cites no Note.
SCISSORS = "--8" + "<--"
NOTE_WORD = "No" + "te"
MARKER = re.compile(
    r"(?<!;)" + re.escape(SCISSORS)
    + r"[ \t]+\[[ \t]*(start|end)[ \t]*:[ \t]*([a-z][-_0-9a-z]*)[ \t]*\]",
    re.IGNORECASE,
)
INCLUDE = re.compile(r"^[ \t]*" + re.escape(SCISSORS) + r"[ \t]+\"([^\"]+)\"")
# Files whose exact bytes something checks, so that a marker line would
# break it: accgen's input fingerprint (Note [Input fingerprint] in
# generator/write/writer.h) covers the spec directory, the templates and
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

# A Note's title: anything but brackets, at most this long once a wrapped
# title's line break is a space.
TITLE = r"[^\[\]\s](?:[^\[\]]{0,118}[^\[\]\s])?"
# Where a Note is mentioned, in the text of a file whose lines were joined
# with their comment leaders taken off (titles wrap across lines).
MENTION = re.compile(r"\b" + NOTE_WORD + r"\s+\[(" + TITLE + r")\]")
# The comment leader of a line: what is taken off before lines are joined
# or a definition is recognised.
LEADER = re.compile(r"^[ \t]*(?:///?|//!|/\*+|\*|#+|--|;+)?[ \t]*")
DEFINITION = re.compile(r"^" + NOTE_WORD + r" \[(" + TITLE + r")\][ \t]*$")
TILDES = re.compile(r"^~{4,}[ \t]*$")
HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+" + NOTE_WORD + r"\s*\[")

# Phrases of a work log, which docs/ does not hold: each dates a statement
# (a run, a change, a session) instead of stating what is true.
PHRASES = [
    "tried and left",
    "one run each after",
    "not met in this run",
    "when last measured",
    "in this run",
    "in these runs",
    "before this change",
    "after this change",
    "after the change",
    "before these changes",
    "after these changes",
    "this session",
    "went from",
    "fell from",
    "the previous commit",
    "later the same day",
]
PHRASE = re.compile(
    r"\b(" + "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in PHRASES)
    + r")\b", re.IGNORECASE)


def note(title):
    return NOTE_WORD + " [" + title + "]"


def checkout_files(root):
    """Files of the checkout (tracked, or new and not ignored), site/ aside;
    every file under `root` when it is not a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "-C", root, "ls-files", "--cached", "--others",
             "--exclude-standard", "-z"],
            check=True, capture_output=True, text=True).stdout
        paths = set(filter(None, listed.split("\0")))
    except (OSError, subprocess.CalledProcessError):
        paths = set()
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d not in (".git", "site")]
            for name in names:
                paths.add(os.path.relpath(os.path.join(folder, name), root))
    for path in sorted(paths):
        if path.startswith("site/"):
            continue
        if os.path.isfile(os.path.join(root, path)):
            yield path


def is_page(path):
    return path.startswith("docs/") or path == "mkdocs.yml"


def read(root, path):
    try:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None


def scan_markers(root, files, errors):
    """{path: {name: start line}} of every balanced section."""
    sections = {}
    for path, text in files.items():
        if is_page(path) or SCISSORS not in text:
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


def scan_pages(root, files, errors):
    """{(path, section or None, page, line)} that the pages quote."""
    quoted = set()
    for page, text in files.items():
        if not (page.startswith("docs/") and page.endswith(".md")):
            continue
        for number, line in enumerate(text.splitlines(), 1):
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
            if not os.path.isfile(os.path.join(root, path)):
                errors.append(f"{page}:{number}: no file '{path}'")
                continue
            quoted.add((path, name, page, number))
    return quoted


def check_markers(root, files, errors):
    """The snippet markers; returns (sections, files with them, quotes)."""
    sections = scan_markers(root, files, errors)
    quoted = scan_pages(root, files, errors)
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
    return sum(len(found) for found in sections.values()), len(sections), \
        len(quoted)


def joined(text):
    """The lines of `text` without their comment leaders, joined by
    spaces, and the offset where each line starts in the result."""
    bodies = [LEADER.sub("", line, count=1) for line in text.splitlines()]
    starts = []
    offset = 0
    for body in bodies:
        starts.append(offset)
        offset += len(body) + 1
    return " ".join(bodies), starts, bodies


def check_notes(files, errors):
    """Every Note cited is defined once, in code; returns (definitions,
    citations)."""
    defined = {}  # title -> [(path, line)]
    cited = []  # (title, path, line, alone on its line)
    for path, text in files.items():
        if NOTE_WORD not in text:
            continue
        flat, starts, bodies = joined(text)
        definitions = set()
        for index, body in enumerate(bodies):
            match = DEFINITION.match(body)
            if match and index + 1 < len(bodies) and \
                    TILDES.match(bodies[index + 1]):
                definitions.add(index + 1)
                defined.setdefault(match.group(1), []).append(
                    (path, index + 1))
        for match in MENTION.finditer(flat):
            number = bisect.bisect_right(starts, match.start())
            if number in definitions:
                continue
            title = " ".join(match.group(1).split())
            alone = DEFINITION.match(bodies[number - 1]) is not None
            cited.append((title, path, number, alone))
        if path.endswith(".md"):
            for index, line in enumerate(text.splitlines(), 1):
                if HEADING.match(line):
                    errors.append(f"{path}:{index}: a heading defines a Note "
                                  "in Markdown; define it in a comment of "
                                  "the code that implements it and quote it "
                                  "here through snippet markers")
    for title, places in sorted(defined.items()):
        for path, number in places:
            if path.endswith(".md"):
                errors.append(f"{path}:{number}: {note(title)} is defined in "
                              "Markdown; define it in a comment of the code "
                              "that implements it and quote it here through "
                              "snippet markers")
        first_path, first_number = places[0]
        for path, number in places[1:]:
            errors.append(f"{path}:{number}: {note(title)} is defined again "
                          f"(first at {first_path}:{first_number}); define "
                          "it once and cite it elsewhere")
    for title, path, number, alone in sorted(cited, key=lambda c: c[1:3]):
        if title in defined:
            continue
        hint = (" (a definition has a line of tildes under the title)"
                if alone else "")
        errors.append(f"{path}:{number}: {note(title)} is cited but defined "
                      f"nowhere{hint}")
    return sum(len(p) for p in defined.values()), len(cited)


def check_tense(files, errors):
    """docs/ holds no phrase of a work log."""
    for path, text in files.items():
        if not (path.startswith("docs/") and path.endswith(".md")):
            continue
        flat = " ".join(text.splitlines())
        starts = []
        offset = 0
        for line in text.splitlines():
            starts.append(offset)
            offset += len(line) + 1
        for match in PHRASE.finditer(flat):
            number = bisect.bisect_right(starts, match.start())
            errors.append(f"{path}:{number}: '{' '.join(match.group(1).split())}'"
                          " dates the text (a work log's phrase); state "
                          "what is true of the code now")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--root", default=os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))),
        help="the checkout to check (default: this script's)")
    root = os.path.abspath(parser.parse_args(argv).root)
    files = {}
    for path in checkout_files(root):
        text = read(root, path)
        if text is not None:
            files[path] = text
    errors = []
    sections, marked, quotes = check_markers(root, files, errors)
    definitions, citations = check_notes(files, errors)
    check_tense(files, errors)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    if errors:
        print(f"check_doc_markers: {len(errors)} error(s)", file=sys.stderr)
        return 1
    print(f"check_doc_markers: {sections} sections in {marked} files, "
          f"{quotes} quotes, all balanced and quoted; {definitions} Notes, "
          f"each defined once in code, {citations} citations, all defined; "
          "docs/ in the present tense")
    return 0


if __name__ == "__main__":
    sys.exit(main())

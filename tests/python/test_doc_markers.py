"""scripts/check_doc_markers.py: snippet markers, Notes and the present
tense of docs/, checked on tiny trees built in a temporary directory
(`--root`), and on this checkout. Needs neither torch nor a backend:
`python3 -m pytest -p no:cacheprovider --noconftest
tests/python/test_doc_markers.py` runs it alone.

The Notes and markers this file plants are spelt in pieces, so that the
checkout itself cites no Note and holds no marker.
"""

import pathlib
import subprocess
import sys
import textwrap

_REPO = pathlib.Path(__file__).resolve().parents[2]
_SCRIPT = _REPO / "scripts" / "check_doc_markers.py"
N = "No" + "te"
CUT = "--8" + "<--"


def _tree(root, files):
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def _check(root):
    return subprocess.run(
        [sys.executable, str(_SCRIPT), "--root", str(root)],
        capture_output=True, text=True, timeout=120)


def _good():
    """A tree that passes: one Note defined in code, cited from code (over
    a line break) and quoted by a page."""
    return {
        "src/engine.cpp": f"""
            // The engine.
            //
            // {CUT} [start:rule-note]
            // {N} [How it runs]
            // ~~~~~~~~~~~~~~~~~
            // Every call runs by one rule.
            // {CUT} [end:rule-note]
            int run();
            """,
        "src/caller.cpp": f"""
            // Calls the engine, which runs by its rule (see {N} [How
            // it runs] in engine.cpp).
            int call() {{ return run(); }}
            """,
        "docs/engine.md": f"""
            # The engine

            ```c++
            {CUT} "src/engine.cpp:rule-note"
            ```
            """,
    }


def test_a_tree_that_keeps_the_rules_passes(tmp_path):
    _tree(tmp_path, _good())
    done = _check(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 Notes" in done.stdout and "1 citations" in done.stdout


def test_a_note_cited_but_defined_nowhere_fails(tmp_path):
    files = _good()
    files["src/other.cpp"] = f"""
        int a;
        int b;
        // Why b follows a: {N} [Order of
        // things].
        """
    files["src/alone.py"] = f"""
        def f():
            # {N} [Without tildes]
            # Text that was meant as a definition.
            return 1
        """
    _tree(tmp_path, files)
    done = _check(tmp_path)
    assert done.returncode == 1
    assert (f"src/other.cpp:3: {N} [Order of things] is cited but defined "
            "nowhere") in done.stderr
    assert f"src/alone.py:2: {N} [Without tildes] is cited" in done.stderr
    assert "a line of tildes under the title" in done.stderr


def test_a_note_defined_twice_fails(tmp_path):
    files = _good()
    files["src/copy.cpp"] = f"""
        // A second copy.
        // {N} [How it runs]
        // ~~~~~~~~~~~~~~~~~
        // Every call runs by one rule, again.
        """
    _tree(tmp_path, files)
    done = _check(tmp_path)
    assert done.returncode == 1
    assert f"{N} [How it runs] is defined again" in done.stderr
    # Files are read in order: engine.cpp's definition comes second.
    assert "src/engine.cpp:4:" in done.stderr
    assert "first at src/copy.cpp:2" in done.stderr


def test_a_note_defined_in_docs_fails(tmp_path):
    files = _good()
    files["docs/rationale.md"] = f"""
        # Rationale

        ### {N} [Heading of a page]

        Text.

        {N} [Underlined on a page]
        ~~~~~~~~~~~~~~~~~~~~~~~~~~
        Text.
        """
    _tree(tmp_path, files)
    done = _check(tmp_path)
    assert done.returncode == 1
    assert "docs/rationale.md:3: a heading defines a Note" in done.stderr
    assert (f"docs/rationale.md:7: {N} [Underlined on a page] is defined in "
            "Markdown") in done.stderr


def test_a_work_log_phrase_in_docs_fails(tmp_path):
    files = _good()
    files["docs/figures.md"] = """
        # Figures

        The small step is 1.10 the CPU's. Packed host memory was tried
        and left, and the ratio went from 1.2 to 1.1.
        """
    _tree(tmp_path, files)
    done = _check(tmp_path)
    assert done.returncode == 1
    assert "docs/figures.md:3: 'tried and left' dates the text" in done.stderr
    assert "docs/figures.md:4: 'went from' dates the text" in done.stderr


def test_a_marker_no_page_quotes_fails(tmp_path):
    files = _good()
    files["docs/engine.md"] = "# The engine\n"
    _tree(tmp_path, files)
    done = _check(tmp_path)
    assert done.returncode == 1
    assert ("src/engine.cpp:3: section 'rule-note' is quoted by no page"
            in done.stderr)


def test_this_checkout_passes():
    done = _check(_REPO)
    assert done.returncode == 0, done.stderr

"""scripts/interface_diff.py: the torch interfaces the runtime implements,
diffed between two torches.

Most tests run the command on two fake torches built in a temporary
directory (a `torch` package on PYTHONPATH with a few modules and headers)
and a tiny fake runtime beside them; one runs it on the installed torch
against itself. Needs libclang (`pip install libclang`, in
scripts/bootstrap.sh); no backend.
"""

import importlib.util
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip(
    "clang.cindex",
    reason="libclang is not installed (python3 -m pip install libclang)")

_REPO = pathlib.Path(__file__).resolve().parents[2]
_SCRIPT = _REPO / "scripts" / "interface_diff.py"


def _tool():
    spec = importlib.util.spec_from_file_location("interface_diff", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*arguments, cwd=None):
    return subprocess.run([sys.executable, str(_SCRIPT), *map(str, arguments)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


# ------------------------------------------------------ the fake torches

_RUNTIME = {
    "src/Guard.cpp": """
        // A runtime class deriving from two interfaces of the fake torch.
        #include <fake/Guard.h>
        namespace rt {
        struct Guard final : public fake::GuardInterface {
          int getDevice() const override { return 0; }
        };
        class Quiet final : public fake::Stable {};
        // class Commented : public fake::NotAnInterface {};
        }  // namespace rt
        """,
    "include/accgen/runtime/Api.h": """
        #pragma once
        namespace rt {
        class Hooks : public fake::Hooks {};
        }  // namespace rt
        """,
    "python/rt_module.py": """
        import torch
        from torch.fake.api import register, removed_fn
        from torch.fake import codegen as cg


        class Mine(cg.Base):
            def hook(self, x):
                return x


        def setup():
            register("dev")
            removed_fn()
            torch.fake.api.stable_fn(1)
            return Mine().helper
        """,
}

_OLD = {
    "torch/__init__.py": '__version__ = "1.0.0+cpu"\n',
    "torch/fake/__init__.py": "",
    "torch/fake/api.py": """
        def register(device):
            pass


        def removed_fn():
            pass


        def stable_fn(a, b=2):
            pass
        """,
    "torch/fake/codegen.py": """
        class Root:
            def helper(self):
                pass


        class Base(Root):
            def hook(self, x):
                pass

            def unused(self):
                pass
        """,
    "torch/include/fake/Guard.h": """
        #pragma once
        namespace fake {
        class Base0 {
         public:
          virtual ~Base0() = default;
          virtual void root() = 0;
        };
        struct GuardInterface : public Base0 {
          virtual ~GuardInterface() = default;
          virtual int getDevice() const = 0;
          virtual void setDevice(int index) = 0;
          virtual void removed() {}
          virtual void overloaded(int) {}
          virtual void overloaded(double) {}
          void notVirtual();
        };
        struct Stable {
          virtual ~Stable() = default;
          virtual long same(long value) const noexcept { return value; }
        };
        }  // namespace fake
        """,
    "torch/include/fake/Hooks.h": """
        #pragma once
        namespace fake {
        struct Hooks {
          virtual ~Hooks() = default;
          virtual bool isAvailable() const { return false; }
        };
        }  // namespace fake
        """,
}

_NEW = dict(_OLD)
_NEW.update({
    "torch/__init__.py": '__version__ = "1.1.0"\n',
    "torch/fake/api.py": """
        def register(device, *, priority=0):
            pass


        def stable_fn(a, b=2):
            pass
        """,
    "torch/fake/codegen.py": """
        class Root:
            def helper(self):
                pass


        class Base(Root):
            def hook(self, x, y=None):
                pass

            def unused(self, changed_but_unused):
                pass
        """,
    "torch/include/fake/Guard.h": """
        #pragma once
        namespace fake {
        class Base0 {
         public:
          virtual ~Base0() = default;
          virtual void root() = 0;
        };
        struct GuardInterface : public Base0 {
          virtual ~GuardInterface() = default;
          virtual int getDevice() const = 0;
          virtual void setDevice(long index) = 0;
          virtual void overloaded(int) {}
          virtual void overloaded(double) {}
          virtual void added(float) = 0;
          virtual void notVirtual();
        };
        struct Stable {
          virtual ~Stable() = default;
          virtual long same(long other_name) const noexcept { return other_name; }
        };
        }  // namespace fake
        """,
})
del _NEW["torch/include/fake/Hooks.h"]

_EXPECTED = """\
# Interfaces: torch 1.0.0 → 1.1.0

Summary: C++: 5 interfaces, 2 changed (2 appeared, 1 changed, 4 disappeared); Python: 6 interfaces, 3 changed (0 appeared, 2 changed, 1 disappeared).

## C++

### `fake::GuardInterface`

- appeared: `void added(float) = 0`
- appeared: `void notVirtual()` (was not virtual)
- disappeared: `void removed()`
- changed: `void setDevice(int) = 0` → `void setDevice(long) = 0`

### `fake::Hooks`

- disappeared: `class fake::Hooks`
- disappeared: `bases: (none)`
- disappeared: `bool isAvailable() const`

Unchanged: `fake::Base0`, `fake::Stable`.

In neither torch: `at::GraphImplInterface`.

## Python

### `torch.fake.api.register`

- changed: `register(device)` → `register(device, *, priority=0)`

### `torch.fake.api.removed_fn`

- disappeared: `removed_fn()`

### `torch.fake.codegen.Base`

- changed: `hook(self, x)` → `hook(self, x, y=None)`

Unchanged: `torch`, `torch.fake.api.stable_fn`, `torch.fake.codegen`.
"""


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """Paths of the fake runtime and the two fake torches."""
    root = tmp_path_factory.mktemp("interface_diff")
    for name, files in (("runtime", _RUNTIME), ("old", _OLD), ("new", _NEW)):
        _write(root / name, files)
    return root


def _fake_run(fake, *extra, old="old", new="new"):
    return _run(sys.executable, sys.executable, "--runtime", fake / "runtime",
                "--old-path", fake / old, "--new-path", fake / new, *extra)


def test_fake_torches_report_every_kind_of_change(fake):
    result = _fake_run(fake)
    assert result.returncode == 0, result.stderr
    assert result.stdout == _EXPECTED


def test_report_is_byte_stable(fake, tmp_path):
    first, second = tmp_path / "first.md", tmp_path / "second.md"
    assert _fake_run(fake, "--out", first).returncode == 0
    assert _fake_run(fake, "--out", second).returncode == 0
    assert first.read_bytes() == second.read_bytes() == _EXPECTED.encode()
    assert str(fake) not in _EXPECTED


def test_dump_lists_every_member(fake, tmp_path):
    dump = tmp_path / "dump.md"
    result = _fake_run(fake, "--dump", dump)
    assert result.returncode == 0, result.stderr
    text = dump.read_text()
    assert text.startswith("# Interfaces of torch 1.1.0\n")
    # Transitive bases, overloads, pure virtuals; no destructor, nothing
    # non-virtual; a class's members are those the runtime uses.
    section = text.split("### `fake::GuardInterface`")[1].split("###")[0]
    assert section.splitlines()[2:] == [
        "- `class fake::GuardInterface`",
        "- `bases: public fake::Base0`",
        "- `void added(float) = 0`",
        "- `int getDevice() const = 0`",
        "- `void notVirtual()`",
        "- `void overloaded(double)`",
        "- `void overloaded(int)`",
        "- `void setDevice(long) = 0`",
        "",
    ]
    assert "- `void root() = 0`" in text
    base = text.split("### `torch.fake.codegen.Base`")[1].split("###")[0]
    assert "- `helper(self)`" in base  # referenced, inherited
    assert "unused" not in base        # neither defined nor referenced


def test_check_passes_when_current_and_fails_with_a_diff(fake, tmp_path):
    report = tmp_path / "report.md"
    report.write_text(_EXPECTED)
    assert _fake_run(fake, "--check", report).returncode == 0
    report.write_text(_EXPECTED.replace("priority=0", "priority=1"))
    result = _fake_run(fake, "--check", report)
    assert result.returncode == 1
    assert "-- changed: `register(device)` → `register(device, *, priority=1)`" \
        in result.stdout
    assert "+- changed: `register(device)` → `register(device, *, priority=0)`" \
        in result.stdout
    assert "out of date" in result.stderr


def test_missing_interpreter_exits_2_naming_it(fake):
    result = _run("/nonexistent/bin/python", sys.executable,
                  "--runtime", fake / "runtime")
    assert result.returncode == 2
    assert "OLD: no Python interpreter at /nonexistent/bin/python" in result.stderr


def test_interpreter_without_torch_exits_2(fake, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    result = _run(sys.executable, venv, "--runtime", fake / "runtime",
                  "--old-path", fake / "old")
    assert result.returncode == 2
    assert f"NEW: {venv}/bin/python has no torch" in result.stderr


def test_header_that_does_not_parse_exits_2_naming_it(fake, tmp_path):
    broken = tmp_path / "broken"
    _write(broken, {**_NEW, "torch/include/fake/Guard.h":
                    _NEW["torch/include/fake/Guard.h"].replace(
                        "virtual void added(float) = 0;",
                        "virtual void added(Undeclared) = 0;")})
    result = _run(sys.executable, sys.executable, "--runtime", fake / "runtime",
                  "--old-path", fake / "old", "--new-path", broken)
    assert result.returncode == 2
    assert "NEW: torch 1.1.0's headers do not parse" in result.stderr
    assert "fake/Guard.h:" in result.stderr and "Undeclared" in result.stderr


def test_usage_errors_exit_64():
    assert _run().returncode == 64
    result = _run("a", "b", "--out", "x", "--check", "y")
    assert result.returncode == 64
    assert "not allowed with argument" in result.stderr


def test_template_parameter_base_must_be_named(tmp_path):
    _write(tmp_path / "runtime", {"src/T.h": """
        template <class Kernel>
        class Wrap final : public Kernel {};
        """})
    result = _run(sys.executable, sys.executable, "--runtime",
                  tmp_path / "runtime")
    assert result.returncode == 2
    assert ("src/T.h:2: the base 'Kernel' of Wrap is a template parameter"
            in result.stderr)


def test_bases_in_subdirectories_count_and_the_runtimes_own_do_not(tmp_path):
    _write(tmp_path / "runtime", {"src/engine/Call.cpp": """
        class Call {
         public:
          virtual void run() = 0;
        };
        class TypedCall final : public Call {};
        class Kernel final : public c10::OperatorKernel {};
        """})
    assert _tool().runtime_cpp_bases(str(tmp_path / "runtime")) == [
        "c10::OperatorKernel"]


# --------------------------------------------------- the installed torch


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The installed torch against itself: (report, dump)."""
    directory = tmp_path_factory.mktemp("installed")
    dump = directory / "dump.md"
    result = _run(sys.executable, sys.executable, "--dump", dump)
    assert result.returncode == 0, result.stderr
    return result.stdout, dump.read_text()


def _sections(dump):
    """{interface: [member lines]} of a dump."""
    found = {}
    for block in dump.split("\n### `")[1:]:
        name, _, body = block.partition("`\n")
        found[name] = [line for line in body.splitlines() if line]
    return found


def test_installed_torch_against_itself_is_empty(installed):
    report, _ = installed
    assert re.search(r"^Summary: C\+\+: \d+ interfaces, 0 changed \(0 appeared, "
                     r"0 changed, 0 disappeared\); Python: \d+ interfaces, 0 "
                     r"changed \(0 appeared, 0 changed, 0 disappeared\)\.$",
                     report, re.M), report
    assert report.count("No changes.") == 2


def test_installed_torch_dump_has_the_expected_virtuals(installed):
    sections = _sections(installed[1])
    guard = sections["c10::impl::DeviceGuardImplInterface"]
    assert "- `Device exchangeDevice(Device) const = 0`" in guard
    assert "- `void uncheckedSetDevice(Device) const noexcept = 0`" in guard
    assert any(line.startswith("- `c10::intrusive_ptr<Work> allreduce(")
               for line in sections["c10d::Backend"])
    hooks = sections["at::PrivateUse1HooksInterface"]
    assert "- `bases: public at::AcceleratorHooksInterface`" in hooks
    assert "at::AcceleratorHooksInterface" in sections  # a transitive base
    assert "at::GraphImplInterface" in sections         # a planned one
    # Python: a function's signature and a subclassed class's overrides.
    rename = sections["torch.utils.rename_privateuse1_backend"]
    assert rename[0].startswith("- `rename_privateuse1_backend(backend_name")
    overrides = sections["torch._inductor.codegen.common.DeviceOpOverrides"]
    assert any(line.startswith("- `set_device(self") for line in overrides)
    # Reached through the import hook's module parameter only.
    interface = sections["torch._dynamo.device_interface.DeviceInterface"]
    assert any("exchange_device(" in line for line in interface)


def test_every_runtime_base_is_an_interface(installed):
    sections = _sections(installed[1])
    template_bases = _tool().TEMPLATE_PARAMETER_BASES
    runtime = _REPO / "runtime"
    files = sorted((runtime / "src").glob("*.cpp")) + \
        sorted((runtime / "src").glob("*.h")) + \
        sorted((runtime / "include" / "accgen" / "runtime").glob("*.h"))
    seen = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        relative = path.relative_to(runtime).as_posix()
        for match in re.finditer(r"\b(?:class|struct)\s+(\w+)\s*(?:final\s*)?:"
                                 r"\s*public\s+(?:::)?([\w:]+)", text):
            derived, base = match.groups()
            base = template_bases.get((relative, derived, base), base)
            seen.append(base)
            assert base in sections, f"{relative}: {derived} : public {base}"
            assert sections[base] != ["- missing"], base
    assert "c10::impl::DeviceGuardImplInterface" in seen and len(seen) >= 10

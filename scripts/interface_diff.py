#!/usr/bin/env python3
"""Diffs the torch interfaces accgen's runtime implements between two torches.

What a PrivateUse1 backend implements is more than operator schemas (those
are `accgen schema-diff`'s): the runtime derives from C++ interfaces of
torch (c10::impl::DeviceGuardImplInterface, at::PrivateUse1HooksInterface,
c10d::Backend, ...) and its Python calls and subclasses Python APIs of torch
(Inductor's register_backend_for_device, the wrapper codegen classes, Dynamo's
DeviceInterface, ...). This command reads two installed torches' headers and
Python modules and reports what appeared, changed or disappeared between them,
for exactly the interfaces the runtime uses.

Usage:

    python3 scripts/interface_diff.py OLD NEW [--out FILE | --check FILE]
        [--dump FILE] [--runtime DIR] [--old-path DIR] [--new-path DIR]

OLD and NEW are each a Python interpreter (a path, or a command on PATH) or a
venv directory (its bin/python) with torch installed. ``--old-path`` and
``--new-path`` prepend a directory to that interpreter's PYTHONPATH, so that a
torch outside its site-packages (the tests' fake ones) can be compared.

Note [Which interfaces]
~~~~~~~~~~~~~~~~~~~~~~
The interfaces compared are derived from the runtime's sources
(``--runtime``, default: this repository's runtime/), so that the list
cannot drift:

* C++: every base named in ``class|struct X [final] : public BASE`` in
  src/**.cpp, src/**.h and include/accgen/runtime/**.h, then their bases,
  transitively, as the parsed headers declare them; plus PLANNED_INTERFACES
  and, for a base that is a template parameter, TEMPLATE_PARAMETER_BASES.
  Each class's header is found by its definition text in ``<torch>/include``;
  all of them are parsed with libclang (``pip install libclang``) as one
  translation unit. Per class: its bases and its virtual methods (not the
  destructor), as return type, name, parameter types, qualifiers and ``= 0``.
  Two signatures are the same when their canonical types are (``DeviceIndex``
  and ``int8_t`` are), and are shown as the header spells them.
* Python (python/**/*.py, read with ``ast``): every name imported from torch,
  every dotted chain of attributes of a torch name (``torch.a.b``, or through
  an alias: ``import torch._inductor.utils as utils; utils.f``), every class
  the runtime subclasses, and a torch module named as a key of a dict whose
  value is a function of the same file (the import hooks of
  _compile.py, whose first parameter is that module). A chain is
  followed through modules to the first object that is not one. A function is
  reported with its ``inspect.signature``; a class, or another object's type,
  with its bases and the signatures of the members the runtime uses: the names
  the runtime defines or reads as an attribute anywhere in python/, and
  ``__init__``.

The report is Markdown, byte-stable (sorted; no paths, no timestamps): a
title with the two versions (without their local part: 2.13.0 for
2.13.0+cpu), a summary line, then a "## C++" and a "## Python" section. In
each, a "### `name`" heading for every interface with a change, and under it
"- appeared: X", "- disappeared: X" and "- changed: OLD → NEW" lines (a whole
interface that appears or disappears is listed with all its members; a C++
virtual that was a plain method before says "(was not virtual)"); then one
"Unchanged:" line, and an "In neither torch:" line for interfaces missing from
both. A name one interpreter cannot import (a missing dependency, say) is
"not compared" rather than "disappeared". ``--dump FILE`` writes every
interface of NEW with all its members: what the runtime relies on.

Exit codes:
    0   the report was written (or --check found it current)
    1   --check: FILE differs from the report (a unified diff is printed)
    2   an error: no such interpreter, no torch in it, a header that does not
        parse, libclang missing, unreadable runtime sources
    64  a usage error (bad or missing arguments)
"""

import argparse
import ast
import concurrent.futures
import dataclasses
import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXIT_OK = 0
EXIT_CHECK_DIFFERS = 1
EXIT_ERROR = 2
EXIT_USAGE = 64

# Interfaces the runtime does not implement yet but will: listed so that
# their changes show up before the implementation is written.
PLANNED_INTERFACES = [
    # Graph capture and replay (torch.accelerator.Graph): the runtime's next
    # interface. Defined in ATen/core/GraphImplInterface.h in torch 2.13.
    "at::GraphImplInterface",
]

# A runtime class whose base is a template parameter names no interface in
# its source; this table says which interface the parameter stands for.
# Key: (file under the runtime dir, class, parameter). A template-parameter
# base missing here is an error, so that a new one cannot go unseen.
TEMPLATE_PARAMETER_BASES = {
    # IntoOutput<Kernel> is instantiated with the meta classes of structured
    # kernels (at::native::structured_<op>_out, RegisterStubs.cpp.mustache);
    # the virtuals it overrides (set_output_strided, set_output_raw_strided,
    # maybe_get_output) are declared by their root, at::impl::MetaBase.
    ("include/accgen/runtime/StubSupport.h", "IntoOutput", "Kernel"):
        "at::impl::MetaBase",
    # LoopOutput<Kernel> likewise (StructuredLoops.def), overriding the same
    # virtuals.
    ("include/accgen/runtime/detail/StructuredLoops.h", "LoopOutput",
     "Kernel"): "at::impl::MetaBase",
}

CPP_SOURCE_GLOBS = [("src", (".cpp", ".h")), ("include/accgen/runtime", (".h",))]
PYTHON_SOURCE_DIR = "python"


class ToolError(Exception):
    """A failure the user can act on: printed, exit code 2."""


class UsageError(Exception):
    """Bad arguments: printed with the usage, exit code 64."""


# ------------------------------------------------------------ the runtime


_CLASS_HEAD = re.compile(
    r"\b(?:class|struct)\s+(?:(?:[A-Z][A-Z0-9_]*|\[\[[^\]]*\]\])\s+)*(\w+)"
    r"\s*(?:final\s*)?:"
    r"([^{;]*)\{")
_TEMPLATE_TAIL = re.compile(r"template\s*<([^<>]*)>\s*$")
# `virtual public ::ns::Name<Args>`: the keywords, and the name without
# its leading "::" and its template arguments.
_BASE_SPECIFIER = re.compile(
    r"((?:(?:virtual|public|protected|private)\s+)*)(?:::)?([\w:]+)\s*(?:<.*)?",
    re.S)


def _strip_comments(text):
    """The text with comments and string literals blanked, newlines kept."""
    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  blank, text, flags=re.S)


def _split_bases(text):
    """`public A, private B<C, D>` -> ["public A", "private B<C, D>"]."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


# A class or struct defined (not only declared) in the runtime's sources.
_CLASS_DEFINITION = re.compile(r"\b(?:class|struct)\s+(\w+)\b[^;{()]*\{")


def runtime_cpp_bases(runtime_dir):
    """The qualified name of every `: public BASE` of the runtime's C++
    sources (a template parameter replaced by its interface), sorted; bases
    the runtime defines itself (the emulation engine's Call) are its own,
    not torch's."""
    bases = set()
    defined = set()
    for folder, suffixes in CPP_SOURCE_GLOBS:
        directory = os.path.join(runtime_dir, folder)
        if not os.path.isdir(directory):
            continue
        names = sorted(
            os.path.relpath(os.path.join(root, name), directory)
            for root, _, files in os.walk(directory) for name in files)
        for name in names:
            if not name.endswith(suffixes):
                continue
            relative = f"{folder}/{name}"
            text = _read(os.path.join(directory, name), "runtime source")
            code = _strip_comments(text)
            defined.update(_CLASS_DEFINITION.findall(code))
            for match in _CLASS_HEAD.finditer(code):
                line = code.count("\n", 0, match.start()) + 1
                template = _TEMPLATE_TAIL.search(code, 0, match.start())
                parameters = set()
                if template:
                    parameters = {p.split()[-1].strip(".")
                                  for p in template.group(1).split(",")
                                  if p.split()}
                for base in _split_bases(match.group(2)):
                    head = _BASE_SPECIFIER.fullmatch(base)
                    if head is None or "public" not in head.group(1).split():
                        continue
                    spelled = head.group(2)
                    if spelled in parameters:
                        key = (relative, match.group(1), spelled)
                        if key not in TEMPLATE_PARAMETER_BASES:
                            raise ToolError(
                                f"{relative}:{line}: the base '{spelled}' of "
                                f"{match.group(1)} is a template parameter; "
                                f"name the interface it stands for in "
                                f"TEMPLATE_PARAMETER_BASES of "
                                f"scripts/interface_diff.py")
                        spelled = TEMPLATE_PARAMETER_BASES[key]
                    bases.add(spelled)
    return sorted(b for b in bases if "::" in b or b not in defined)


_TORCH_MODULE_NAME = re.compile(r"torch(?:\.[A-Za-z_]\w*)+")


class _ClassScope(dict):
    """A class body's bindings: its methods see the enclosing scope's."""

    def __init__(self, enclosing):
        super().__init__(enclosing)
        self.enclosing = enclosing


class _PythonUses:
    """The names of torch the runtime's Python uses: dotted chains from
    torch, and the member names it defines or reads as attributes."""

    def __init__(self):
        self.chains = set()     # dotted names, each starting with "torch"
        self.members = {"__init__"}  # attribute names used or defined

    def scan(self, tree):
        module_functions = {n.name: n for n in tree.body
                            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self._hooked = {}       # id(function node) -> (parameter, module)
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if (isinstance(key, ast.Constant) and isinstance(key.value, str)
                            and _TORCH_MODULE_NAME.fullmatch(key.value)
                            and isinstance(value, ast.Name)
                            and value.id in module_functions):
                        function = module_functions[value.id]
                        arguments = function.args.posonlyargs + function.args.args
                        if arguments:
                            self.chains.add(key.value)
                            self._hooked[id(function)] = (arguments[0].arg, key.value)
            if isinstance(node, ast.Attribute):
                self.members.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.members.add(node.name)
            elif isinstance(node, ast.ClassDef):
                self.members.add(node.name)  # a nested class overrides one
                for statement in node.body:
                    for target in _assigned_names(statement):
                        self.members.add(target)
        self._scope(tree.body, {}, ())

    # A scope's bindings are collected before its code is read, as Python
    # binds names per scope; a name bound to anything but a torch object
    # hides an outer torch binding.
    def _scope(self, body, outer, parameters, hooked=None, is_class=False):
        env = _ClassScope(outer) if is_class else dict(outer)
        for name in parameters:
            env.pop(name, None)
        if hooked:
            env[hooked[0]] = hooked[1]
        for statement in _scope_statements(body):
            self._bind(statement, env)
        for statement in body:
            self._visit(statement, env)

    def _bind(self, statement, env):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name.split(".")[0] != "torch":
                    continue
                if alias.asname:
                    env[alias.asname] = alias.name
                else:
                    env["torch"] = "torch"
        elif isinstance(statement, ast.ImportFrom):
            if statement.level == 0 and statement.module and \
                    statement.module.split(".")[0] == "torch":
                for alias in statement.names:
                    env[alias.asname or alias.name] = f"{statement.module}.{alias.name}"
            else:
                for alias in statement.names:
                    env.pop(alias.asname or alias.name, None)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                    ast.ClassDef)):
            env.pop(statement.name, None)
        else:
            value = getattr(statement, "value", None)
            chain = self._chain(value, env) if value is not None else None
            names = _assigned_names(statement)
            for name in names:
                if chain is not None and isinstance(statement, ast.Assign) \
                        and len(names) == 1:
                    env[name] = chain
                else:
                    env.pop(name, None)

    def _visit(self, node, env):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if isinstance(node, ast.Import) and alias.name.split(".")[0] == "torch":
                    self.chains.add(alias.name)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and \
                        node.module and node.module.split(".")[0] == "torch":
                    self.chains.add(f"{node.module}.{alias.name}")
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            for default in arguments.defaults + [d for d in arguments.kw_defaults if d]:
                self._visit(default, env)
            if not isinstance(node, ast.Lambda):
                for decorator in node.decorator_list:
                    self._visit(decorator, env)
                for annotation in _annotations(arguments, node.returns):
                    self._visit(annotation, env)
            names = [a.arg for a in arguments.posonlyargs + arguments.args
                     + arguments.kwonlyargs]
            names += [a.arg for a in (arguments.vararg, arguments.kwarg) if a]
            body = node.body if isinstance(node.body, list) else [ast.Expr(node.body)]
            enclosing = env.enclosing if isinstance(env, _ClassScope) else env
            self._scope(body, enclosing, names, self._hooked.get(id(node)))
            return
        if isinstance(node, ast.ClassDef):
            for expression in node.bases + node.keywords + node.decorator_list:
                self._visit(expression, env)
            self._scope(node.body, env, (), is_class=True)
            return
        if isinstance(node, (ast.Attribute, ast.Name)):
            chain = self._chain(node, env)
            if chain is not None:
                self.chains.add(chain)
                return
        for child in ast.iter_child_nodes(node):
            self._visit(child, env)

    @staticmethod
    def _chain(node, env):
        attributes = []
        while isinstance(node, ast.Attribute):
            attributes.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in env:
            return ".".join([env[node.id], *reversed(attributes)])
        return None


def _annotations(arguments, returns):
    every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    every += [a for a in (arguments.vararg, arguments.kwarg) if a]
    found = [a.annotation for a in every if a.annotation is not None]
    return found + ([returns] if returns is not None else [])


def _scope_statements(body):
    """The statements of a scope, nested blocks included, nested scopes not."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _scope_statements(
                    [s for s in inner if isinstance(s, ast.stmt)]
                    + [s for h in inner if isinstance(h, ast.ExceptHandler)
                       for s in h.body])
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _scope_statements(case.body)


def _assigned_names(statement):
    targets = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in statement.items if item.optional_vars]
    names = []
    while targets:
        target = targets.pop(0)
        if isinstance(target, ast.Name):
            names.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            targets += target.elts
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
    return names


def runtime_python_uses(runtime_dir):
    uses = _PythonUses()
    directory = os.path.join(runtime_dir, PYTHON_SOURCE_DIR)
    paths = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        paths += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
    for path in paths:
        name = os.path.relpath(path, directory)
        text = _read(path, "runtime source")
        try:
            tree = ast.parse(text, filename=name)
        except SyntaxError as error:
            raise ToolError(f"{PYTHON_SOURCE_DIR}/{name}:{error.lineno}: "
                            f"does not parse: {error.msg}") from None
        uses.scan(tree)
    return uses


def _read(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ToolError(f"cannot read {what} {path}: {error}") from None


# ---------------------------------------------------------- a torch's side

# Runs in the torch's interpreter: reads {"chains", "members"} as JSON on
# stdin and prints the torch's version, include directory and one entry per
# prefix of each chain, up to the first object that is not a module.
PROBE = textwrap.dedent(r'''
    import importlib, inspect, json, os, re, sys, types
    request = json.load(sys.stdin)
    try:
        import torch
    except Exception as error:
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(3 if getattr(error, "name", None) == "torch" else 4)
    used = set(request["members"])

    def clean(text):
        # No addresses or paths in reprs and messages.
        text = re.sub(r" at 0x[0-9a-fA-F]+", "", text)
        text = re.sub(r"(<module '[^']*') from '[^']*'>", r"\1>", text)
        text = text.replace(os.path.dirname(torch.__file__), "<torch>")
        return text.replace(sys.prefix, "<prefix>")

    def qualified(kind):
        module = getattr(kind, "__module__", None) or "?"
        return f"{module}.{getattr(kind, '__qualname__', kind.__name__)}"

    def signature(function):
        try:
            return clean(str(inspect.signature(function)))
        except (TypeError, ValueError):
            return " (signature not available)"

    def member(owner, name):
        static = inspect.getattr_static(owner, name)
        if isinstance(static, staticmethod):
            return f"@staticmethod {name}{signature(static.__func__)}"
        if isinstance(static, classmethod):
            return f"@classmethod {name}{signature(static.__func__)}"
        if isinstance(static, property):
            return f"@property {name}"
        if isinstance(static, type):
            return f"class {name}"
        if isinstance(static, (types.GetSetDescriptorType, types.MemberDescriptorType)):
            return f"attribute {name}"
        if inspect.isroutine(static):
            return f"{name}{signature(getattr(owner, name))}"
        return f"{name}: {qualified(type(static))}"

    def members(kind):
        found = {}
        for owner in kind.__mro__:
            if owner.__module__ == "builtins":
                continue
            for name in vars(owner):
                if name in used and name not in found:
                    found[name] = member(kind, name)
        return found

    def describe(name, value):
        short = name.rsplit(".", 1)[-1]
        if isinstance(value, types.ModuleType):
            return {"kind": "module", "header": "module", "items": {}}
        if isinstance(value, type):
            items = members(value)
            bases = ", ".join(qualified(b) for b in value.__bases__)
            items["(bases)"] = f"bases: {bases}"
            return {"kind": "class", "header": f"class {short}", "items": items}
        if inspect.isroutine(value):
            return {"kind": "function", "header": f"{short}{signature(value)}",
                    "items": {}}
        items = members(type(value))
        return {"kind": "value",
                "header": f"{short}: {qualified(type(value))}", "items": items}

    absent = object()
    entries = {}
    for chain in sorted(request["chains"]):
        parts = chain.split(".")
        value = torch
        entries["torch"] = describe("torch", torch)
        for index in range(1, len(parts)):
            name = ".".join(parts[:index + 1])
            if name in entries and entries[name]["kind"] != "module":
                break
            failure = None
            try:
                value = getattr(value, parts[index])
            except AttributeError:
                try:
                    value = importlib.import_module(name)
                except ModuleNotFoundError as error:
                    if error.name != name:
                        failure = f"{type(error).__name__}: {error}"
                    value = absent
                except Exception as error:
                    failure = f"{type(error).__name__}: {error}"
            except Exception as error:
                failure = f"{type(error).__name__}: {error}"
            if failure is not None:
                # Present, perhaps, but it cannot be looked at here.
                entries[name] = {"kind": "unresolvable", "items": {},
                                 "header": f"(cannot be resolved: {clean(failure)})"}
                break
            if value is absent:
                entries[name] = {"kind": "missing", "header": "", "items": {}}
                break
            entries[name] = describe(name, value)
            if entries[name]["kind"] != "module":
                break
    # The last line of the output, after whatever importing torch printed.
    print("\n" + json.dumps({
        "version": torch.__version__,
        "include": os.path.join(os.path.dirname(torch.__file__), "include"),
        "entries": entries,
    }))
''')


@dataclasses.dataclass
class Torch:
    label: str          # "OLD" or "NEW"
    python: str
    extra_path: str | None
    version: str = ""
    include: str = ""
    python_entries: dict = dataclasses.field(default_factory=dict)
    cpp_entries: dict = dataclasses.field(default_factory=dict)


def interpreter(label, spelled):
    """The Python of OLD or NEW: a file, a venv directory or a command."""
    path = spelled
    if os.path.isdir(path):
        path = os.path.join(path, "bin", "python")
        if not os.path.isfile(path):
            raise ToolError(f"{label}: {spelled} is a directory without "
                            f"bin/python (not a venv)")
    elif os.sep not in path:
        path = shutil.which(path) or path
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ToolError(f"{label}: no Python interpreter at {spelled}")
    return path


def start_probe(torch_, uses):
    env = dict(os.environ)
    if torch_.extra_path:
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [os.path.abspath(torch_.extra_path),
                          env.get("PYTHONPATH")]))
    # Stable reprs of sets in default values; no out-of-tree backend.
    env["PYTHONHASHSEED"] = "0"
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    request = json.dumps({"chains": sorted(uses.chains),
                          "members": sorted(uses.members)})
    process = subprocess.Popen(
        [torch_.python, "-c", PROBE], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        cwd="/")
    return process, request


def finish_probe(torch_, process, request):
    stdout, stderr = process.communicate(request)
    if process.returncode != 0:
        last = (stderr.strip().splitlines() or ["(no output)"])[-1]
        if process.returncode == 3:
            raise ToolError(f"{torch_.label}: {torch_.python} has no torch "
                            f"({last})")
        if process.returncode == 4:
            raise ToolError(f"{torch_.label}: {torch_.python} cannot import "
                            f"torch ({last})")
        raise ToolError(f"{torch_.label}: {torch_.python} failed to inspect "
                        f"torch: {last}")
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise ToolError(f"{torch_.label}: {torch_.python} printed no result "
                        f"inspecting torch") from None
    torch_.version = result["version"].split("+")[0]
    torch_.include = result["include"]
    torch_.python_entries = result["entries"]


# ------------------------------------------------------------------ C++


def _system_includes():
    """The C++ compiler's system include directories (the libclang wheel
    ships no C++ standard library)."""
    compiler = shlex.split(os.environ.get("CXX", "")) or \
        [shutil.which("g++") or shutil.which("c++") or "g++"]
    try:
        result = subprocess.run([*compiler, "-E", "-x", "c++", "-", "-v"],
                                input="", capture_output=True, text=True)
    except OSError as error:
        raise ToolError(f"no C++ compiler to find the system C++ headers "
                        f"with ({error.strerror}: {compiler[0]}); install g++ "
                        f"or set CXX") from None
    lines = result.stderr.splitlines()
    try:
        start = lines.index("#include <...> search starts here:") + 1
        end = lines.index("End of search list.")
    except ValueError:
        raise ToolError(f"{' '.join(compiler)} -v lists no include "
                        f"directories") from None
    return [line.strip() for line in lines[start:end]]


def _definition_pattern(short):
    return re.compile(
        rb"(?<!enum )\b(?:class|struct)\s+(?:(?:[A-Z][A-Z0-9_]*(?:\([^()]*\))?"
        rb"|\[\[[^\]]*\]\])\s+)*" + re.escape(short.encode())
        + rb"\s*(?:final\s*)?[:{]")


def find_headers(include, names):
    """{name: [header relative to include]} of the headers defining each
    class `ns::Name`: its definition text, in a file that opens each of its
    namespaces."""
    wanted = {name: (_definition_pattern(name.rsplit("::", 1)[-1]),
                     name.rsplit("::", 1)[-1].encode(),
                     [re.compile(rb"\bnamespace\s+(?:\w+::)*" + part.encode() + rb"\b")
                      for part in name.split("::")[:-1]])
              for name in names}
    found = {name: [] for name in names}
    for folder, directories, files in os.walk(include):
        directories.sort()
        for file_name in sorted(files):
            if not file_name.endswith((".h", ".hpp")):
                continue
            path = os.path.join(folder, file_name)
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            for name, (definition, short, namespaces) in wanted.items():
                if short in data and definition.search(data) and \
                        all(n.search(data) for n in namespaces):
                    found[name].append(os.path.relpath(path, include))
    return found


def _cindex():
    try:
        import clang.cindex as cindex
    except ImportError:
        raise ToolError("libclang is not installed for this Python: "
                        f"{sys.executable} -m pip install libclang") from None
    return cindex


def _qualified_name(cursor, cindex):
    parts = []
    while cursor is not None and cursor.kind != cindex.CursorKind.TRANSLATION_UNIT:
        if cursor.spelling:
            parts.append(cursor.spelling)
        cursor = cursor.semantic_parent
    return "::".join(reversed(parts))


def _find_class(scope, parts, cindex):
    records = (cindex.CursorKind.CLASS_DECL, cindex.CursorKind.STRUCT_DECL)
    aliases = (cindex.CursorKind.TYPE_ALIAS_DECL, cindex.CursorKind.TYPEDEF_DECL)
    for child in scope.get_children():
        if child.spelling != parts[0]:
            continue
        if len(parts) > 1 and child.kind == cindex.CursorKind.NAMESPACE:
            found = _find_class(child, parts[1:], cindex)
            if found is not None:
                return found
        elif len(parts) == 1:
            if child.kind in records and child.is_definition():
                return child
            if child.kind in aliases:
                target = child.underlying_typedef_type.get_canonical().get_declaration()
                definition = target.get_definition()
                if definition is not None:
                    return definition
    return None


def _method(cursor, cindex):
    """(key, display) of a virtual method: canonical and spelled types."""
    function = cursor.type
    canonical = function.get_canonical()
    spelled_arguments = []
    for argument in cursor.get_arguments():
        text = argument.type.spelling
        if argument.type.is_const_qualified() and text.startswith("const ") and \
                argument.type.kind not in (cindex.TypeKind.LVALUEREFERENCE,
                                           cindex.TypeKind.RVALUEREFERENCE):
            text = text[len("const "):]  # top-level const: not in the type
        spelled_arguments.append(text)
    canonical_arguments = [t.spelling for t in canonical.argument_types()]
    if function.is_function_variadic():
        spelled_arguments.append("...")
        canonical_arguments.append("...")
    qualifiers = ""
    if cursor.is_const_method():
        qualifiers += " const"
    reference = function.get_ref_qualifier()
    if reference == cindex.RefQualifierKind.LVALUE:
        qualifiers += " &"
    elif reference == cindex.RefQualifierKind.RVALUE:
        qualifiers += " &&"
    specification = cursor.exception_specification_kind
    kinds = cindex.ExceptionSpecificationKind
    if specification in (kinds.BASIC_NOEXCEPT, kinds.DYNAMIC_NONE):
        qualifiers += " noexcept"
    elif specification == kinds.COMPUTED_NOEXCEPT:
        qualifiers += " noexcept(...)"
    if any(c.kind == cindex.CursorKind.CXX_FINAL_ATTR for c in cursor.get_children()):
        qualifiers += " final"
    if cursor.is_pure_virtual_method():
        qualifiers += " = 0"
    name = cursor.spelling
    display = (f"{cursor.result_type.spelling} {name}"
               f"({', '.join(spelled_arguments)}){qualifiers}")
    key = (f"{cursor.result_type.get_canonical().spelling} {name}"
           f"({', '.join(canonical_arguments)}){qualifiers}")
    return key, display


def _class_entry(name, cursor, cindex):
    """The entry of a class: its bases and virtual methods as items, and the
    names of its other methods (to tell a method that became virtual from
    a new one)."""
    items = {}
    bases = []
    plain = set()
    final = ""
    for child in cursor.get_children():
        if child.kind == cindex.CursorKind.CXX_FINAL_ATTR:
            final = " final"
        if child.kind == cindex.CursorKind.CXX_BASE_SPECIFIER:
            access = child.access_specifier.name.lower()
            tokens = [t.spelling for t in child.get_tokens()]
            virtual = "virtual " if "virtual" in tokens else ""
            bases.append(f"{virtual}{access} {child.type.get_canonical().spelling}")
        elif child.kind in (cindex.CursorKind.CXX_METHOD,
                            cindex.CursorKind.CONVERSION_FUNCTION) and \
                child.is_virtual_method():
            key, display = _method(child, cindex)
            items[key] = [child.spelling, display]
        elif child.kind in (cindex.CursorKind.CXX_METHOD,
                            cindex.CursorKind.FUNCTION_TEMPLATE):
            plain.add(child.spelling)
    text = "bases: " + (", ".join(bases) if bases else "(none)")
    items["(bases) " + text] = ["(bases)", text]
    return {"kind": "class", "header": f"class {name}{final}", "items": items,
            "plain": sorted(plain)}


def collect_cpp(torch_, roots, system_includes):
    """The C++ entries of one torch: each root class and its bases."""
    cindex = _cindex()
    include = torch_.include
    if not os.path.isdir(include):
        raise ToolError(f"{torch_.label}: torch {torch_.version} has no "
                        f"headers ({os.path.basename(include)}/ beside its "
                        f"__init__.py)")
    headers = find_headers(include, roots)
    chosen = sorted({h for found in headers.values() for h in found})
    entries = {name: {"kind": "missing", "header": "", "items": {}} for name in roots}
    if not chosen:
        torch_.cpp_entries = entries
        return
    source = "".join(f"#include <{h}>\n" for h in chosen)
    arguments = ["-x", "c++", "-std=c++20", f"-I{include}",
                 f"-I{include}/torch/csrc/api/include", "-DUSE_KINETO"]
    if os.path.isdir(os.path.join(include, "kineto")):
        arguments.append(f"-I{include}/kineto")
    for directory in system_includes:
        arguments += ["-isystem", directory]
    unit_name = "interface_diff_unit.cpp"
    index = cindex.Index.create()
    try:
        unit = index.parse(
            unit_name, args=arguments, unsaved_files=[(unit_name, source)],
            options=cindex.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES)
    except cindex.TranslationUnitLoadError as error:
        raise ToolError(f"{torch_.label}: libclang could not parse torch "
                        f"{torch_.version}'s headers: {error}") from None
    errors = []
    for diagnostic in unit.diagnostics:
        if diagnostic.severity < cindex.Diagnostic.Error:
            continue
        location = diagnostic.location
        file_name = location.file.name if location.file else unit_name
        if file_name.startswith(include + os.sep):
            file_name = os.path.relpath(file_name, include)
        errors.append(f"  {file_name}:{location.line}:{location.column}: "
                      f"error: {diagnostic.spelling}")
    if errors:
        raise ToolError(
            f"{torch_.label}: torch {torch_.version}'s headers do not parse "
            f"({', '.join(chosen)}):\n" + "\n".join(errors[:10])
            + ("\n  ..." if len(errors) > 10 else ""))
    pending = []
    for name in roots:
        cursor = _find_class(unit.cursor, name.split("::"), cindex)
        if cursor is not None:
            pending.append((name, cursor))
    while pending:
        name, cursor = pending.pop()
        if entries.get(name, {}).get("kind") == "class":
            continue
        entries[name] = _class_entry(name, cursor, cindex)
        for child in cursor.get_children():
            if child.kind == cindex.CursorKind.CXX_BASE_SPECIFIER:
                declaration = child.type.get_canonical().get_declaration()
                definition = declaration.get_definition()
                if definition is not None:
                    pending.append((child.type.get_canonical().spelling, definition))
    torch_.cpp_entries = entries


# ----------------------------------------------------------- the report


def python_interfaces(torch_, chains):
    """The interface names of the chains in this torch: each chain up to its
    first object that is not a module (or that is missing)."""
    found = set()
    for chain in chains:
        parts = chain.split(".")
        name = "torch"
        for index in range(1, len(parts) + 1):
            name = ".".join(parts[:index])
            entry = torch_.python_entries.get(name)
            if entry is None or entry["kind"] != "module":
                break
        found.add(name)
    return found


_MISSING = {"kind": "missing", "header": "", "items": {}}


def _entry(entries, name):
    return entries.get(name) or _MISSING


def _python_entry(torch_, name):
    """The entry of `name` in this torch. A name the probe did not reach
    lies beyond a prefix that is missing, not a module, or could not be
    looked at; in the last case neither can the name."""
    if name in torch_.python_entries:
        return torch_.python_entries[name]
    parts = name.split(".")
    for length in range(len(parts) - 1, 0, -1):
        prefix = torch_.python_entries.get(".".join(parts[:length]))
        if prefix is not None:
            return prefix if prefix["kind"] == "unresolvable" else _MISSING
    return _MISSING


COUNTED = ("appeared", "changed", "disappeared", "not compared")


def diff_entry(old, new):
    """Bullet lines of one interface, and their number of each kind."""
    lines = []
    counts = dict.fromkeys(COUNTED, 0)

    def add(kind, text):
        lines.append(f"- {kind}: {text}")
        counts[kind] += 1

    if "unresolvable" in (old["kind"], new["kind"]):
        # The interpreter failed to import it (a missing dependency, say):
        # no statement about torch.
        for side, entry in (("OLD", old), ("NEW", new)):
            if entry["kind"] == "unresolvable":
                add("not compared", f"{side} {entry['header']}")
        return lines, counts
    old_present = old["kind"] != "missing"
    new_present = new["kind"] != "missing"
    if old_present and not new_present:
        add("disappeared", f"`{old['header']}`")
    elif new_present and not old_present:
        add("appeared", f"`{new['header']}`")
    elif old["header"] != new["header"]:
        add("changed", f"`{old['header']}` → `{new['header']}`")
    groups = {}
    for side, entry in ((0, old), (1, new)):
        for key, (group, display) in entry["items"].items():
            groups.setdefault(group, ({}, {}))[side][key] = display
    for group in sorted(groups):
        before, after = groups[group]
        gone = sorted(k for k in before if k not in after)
        came = sorted(k for k in after if k not in before)
        if len(gone) == 1 and len(came) == 1:
            add("changed", f"`{before[gone[0]]}` → `{after[came[0]]}`")
            continue
        # A C++ method that was there, but not virtual, is not new.
        note_gone = " (now not virtual)" if group in new.get("plain", ()) else ""
        note_came = " (was not virtual)" if group in old.get("plain", ()) else ""
        for key in gone:
            add("disappeared", f"`{before[key]}`{note_gone}")
        for key in came:
            add("appeared", f"`{after[key]}`{note_came}")
    return lines, counts


def _python_items(entry):
    """Python members as (group, display) items keyed by their text."""
    items = {text: [name, text] for name, text in entry["items"].items()}
    return {"kind": entry["kind"], "header": entry["header"], "items": items}


def sections(old, new, python_chains):
    """[(title, {interface: (old entry, new entry)})] for C++ and Python."""
    cpp = {}
    for name in sorted(set(old.cpp_entries) | set(new.cpp_entries)):
        cpp[name] = (_entry(old.cpp_entries, name), _entry(new.cpp_entries, name))
    python = {}
    names = set(python_interfaces(old, python_chains)) | \
        set(python_interfaces(new, python_chains))
    for name in sorted(names):
        python[name] = (_python_items(_python_entry(old, name)),
                        _python_items(_python_entry(new, name)))
    return [("C++", cpp), ("Python", python)]


def render_report(old, new, python_chains):
    out = [f"# Interfaces: torch {old.version} → {new.version}", ""]
    summary = []
    bodies = []
    for title, interfaces in sections(old, new, python_chains):
        changed, unchanged, absent = [], [], []
        totals = dict.fromkeys(COUNTED, 0)
        for name, (before, after) in interfaces.items():
            lines, counts = diff_entry(before, after)
            if lines:
                changed.append((name, lines))
                for kind in COUNTED:
                    totals[kind] += counts[kind]
            elif before["kind"] == "missing":
                absent.append(name)
            else:
                unchanged.append(name)
        really_changed = sum(
            any(not line.startswith("- not compared") for line in lines)
            for _, lines in changed)
        text = (f"{title}: {len(interfaces)} interfaces, {really_changed} changed "
                f"({totals['appeared']} appeared, {totals['changed']} changed, "
                f"{totals['disappeared']} disappeared)")
        if totals["not compared"]:
            text += f", {totals['not compared']} not compared"
        summary.append(text)
        body = [f"## {title}", ""]
        for name, lines in changed:
            body += [f"### `{name}`", "", *lines, ""]
        if not changed:
            body += ["No changes.", ""]
        for label, names in (("Unchanged", unchanged), ("In neither torch", absent)):
            if names:
                body += [f"{label}: " + ", ".join(f"`{n}`" for n in names) + ".", ""]
        bodies.append(body)
    out += ["Summary: " + "; ".join(summary) + ".", ""]
    for body in bodies:
        out += body
    return "\n".join(out).rstrip("\n") + "\n"


def render_dump(torch_, python_chains):
    out = [f"# Interfaces of torch {torch_.version}", ""]
    cpp = dict(sorted(torch_.cpp_entries.items()))
    python = {name: _python_items(_python_entry(torch_, name))
              for name in sorted(python_interfaces(torch_, python_chains))}
    for title, interfaces in (("C++", cpp), ("Python", python)):
        out += [f"## {title}", ""]
        for name, entry in interfaces.items():
            out += [f"### `{name}`", ""]
            if entry["kind"] == "missing":
                out += ["- missing", ""]
                continue
            out.append(f"- `{entry['header']}`")
            for group, display in sorted(entry["items"].values()):
                out.append(f"- `{display}`")
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


# ------------------------------------------------------------------ main


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def argument_parser():
    parser = _Parser(
        prog="interface_diff.py",
        description="Diffs the torch interfaces accgen's runtime implements "
                    "between two installed torches.")
    parser.add_argument("old", metavar="OLD",
                        help="the old torch's Python (path, command or venv directory)")
    parser.add_argument("new", metavar="NEW", help="the new torch's Python")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--out", metavar="FILE", help="write the report to FILE")
    output.add_argument("--check", metavar="FILE",
                        help="compare the report with FILE; exit 1 with a diff "
                             "when they differ")
    parser.add_argument("--dump", metavar="FILE",
                        help="also write every interface of NEW with all its members")
    parser.add_argument("--runtime", metavar="DIR",
                        help="the runtime sources (default: runtime/ of this "
                             "repository)")
    parser.add_argument("--old-path", metavar="DIR",
                        help="prepend DIR to OLD's PYTHONPATH")
    parser.add_argument("--new-path", metavar="DIR",
                        help="prepend DIR to NEW's PYTHONPATH")
    return parser


def run(arguments):
    runtime = arguments.runtime or os.path.join(REPO, "runtime")
    if not os.path.isdir(runtime):
        raise ToolError(f"no runtime sources at {runtime}")
    roots = sorted(set(runtime_cpp_bases(runtime)) | set(PLANNED_INTERFACES))
    uses = runtime_python_uses(runtime)
    torches = [Torch("OLD", interpreter("OLD", arguments.old), arguments.old_path),
               Torch("NEW", interpreter("NEW", arguments.new), arguments.new_path)]
    probes = [start_probe(t, uses) for t in torches]
    # The probes import torch's Python while this process parses the other
    # torch's headers.
    with concurrent.futures.ThreadPoolExecutor(len(torches)) as pool:
        waits = [pool.submit(finish_probe, t, *p) for t, p in zip(torches, probes)]
        try:
            system_includes = _system_includes()
            for torch_, wait in zip(torches, waits):
                wait.result()
                collect_cpp(torch_, roots, system_includes)
        finally:
            # After an error, no waiting for the other probe.
            for process, _ in probes:
                if process.poll() is None:
                    process.kill()
    old, new = torches
    chains = sorted(uses.chains)
    report = render_report(old, new, chains)
    if arguments.dump:
        _write(arguments.dump, render_dump(new, chains))
    if arguments.check:
        try:
            with open(arguments.check, encoding="utf-8") as f:
                current = f.read()
        except OSError as error:
            raise ToolError(f"--check: cannot read {arguments.check}: "
                            f"{error.strerror}") from None
        if current == report:
            return EXIT_OK
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(keepends=True), report.splitlines(keepends=True),
            arguments.check, "interface_diff.py"))
        print(f"{arguments.check} is out of date; regenerate it with\n  "
              + shlex.join(["python3", "scripts/interface_diff.py",
                            *_regenerate_arguments(arguments)]), file=sys.stderr)
        return EXIT_CHECK_DIFFERS
    if arguments.out:
        _write(arguments.out, report)
    else:
        sys.stdout.write(report)
    return EXIT_OK


def _regenerate_arguments(arguments):
    """The command line that writes the --check file."""
    words = [arguments.old, arguments.new, "--out", arguments.check]
    for option in ("runtime", "old_path", "new_path"):
        value = getattr(arguments, option)
        if value is not None:
            words += [f"--{option.replace('_', '-')}", value]
    return words


def _write(path, text):
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    except OSError as error:
        raise ToolError(f"cannot write {path}: {error.strerror}") from None


def main(argv=None):
    parser = argument_parser()
    try:
        arguments = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as error:
        sys.stderr.write(parser.format_usage())
        print(f"interface_diff.py: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return run(arguments)
    except ToolError as error:
        print(f"interface_diff.py: error: {error}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())

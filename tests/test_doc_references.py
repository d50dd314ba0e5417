"""What the documents name exists: a rename or a removal fails here, naming the doc line.

README.md, docs/*.md (PERFORMANCE.md included: its measurements are dated, the names
and commands it gives are not) and those of docs/'s folders (the decision log's,
docs/decisions/*.md, and docs/testing/*.md):

* every repository path they mention (``lldsched/...``, ``tests/...``, ``.ci/...``,
  ``benchmarks/...``, ``docs/...``, ...) exists, a ``*`` in it matching something,
  and a file named alone in backticks (``machine.py``) is a file of the repository;
* every dotted name ``lldsched.x.y`` imports, down to its last attribute, and every
  reference of the package's written in backticks names what exists, each of its
  parts, however many: ``Class.attribute`` (``SchedulerCore._after``; a method of a
  mixin it inherits counts), ``module.name``, ``module.Class.attribute``, the module by
  its path or dotted path in the package (``threaded/pool.MAX_WORKERS``,
  ``core.registration.validated``, ``cli.Parser.exit``) or by its file
  (``core/runs.py:rearmed``);
* every keyword a call in backticks passes (``Scheduler(max_wait=None)``) is a parameter
  of the package's callable of that name (a class, a function, a method);
* every ``lldsched/x/y.py:Name.attribute`` in backticks (docs/ARCHITECTURE.md's walk
  through one run) names what that file defines;
* the commands they give, and those of the notebooks' markdown (``notebooks/src``) and
  of the benchmarks' and tools' usage docstrings:

  * every ``make X [VAR=...]`` is a target of the Makefile, and VAR one of its variables;
  * every ``python -m lldsched ...`` (or ``lldsched cron ...``, the installed script)
    names a subcommand and options it has; one given in full (in a shell block, or in
    prose unless it is a mention such as ``lab <decision>`` or ``cron -n``) parses with
    the CLI's own parser, and a ``cron`` one runs, a ``simulate`` one passes the checks
    made before simulating (nothing is simulated);
  * every ``benchmarks/X.py ARGS`` or ``tools/X.py ARGS`` command (``X.py ARGS`` when
    one of the two folders has it) gives arguments the script takes (its argparse
    parser, the modes of its ``SIZES``, or the flags its source tests; nothing is run)
    and files that exist;
  * every ``python -m tests.X`` or ``python -m pytest`` command gives options the
    module spells, or that pytest and tests/conftest.py define;
  * every ``LLDSCHED_*`` variable named is read by the package, tests or benchmarks;
* every relative link, theirs and the notebooks' markdown's, resolves, down to its
  ``#anchor``: the anchor GitHub makes of a heading outside a code block (lowercased,
  punctuation dropped, spaces to hyphens, a repeated one numbered), or a notebook's
  ``<a id>``;
* a section cited as ``docs/X.md, "Section"``, ``[X.md](X.md), "Section"``,
  ``[X](X.md#anchor), "Section"`` (or ``("Section")``) or ``README, "Section"`` (in
  double or single quotes; here, in the package's source, the tests, the tools or the
  notebooks' sources) is a heading or a bold bullet of that document, under the
  heading the anchor points to; a decision's entry is cited by the file of
  docs/decisions/ that holds it (``docs/decisions/persistence.md, "Entry"``,
  ``[...](decisions/persistence.md#anchor), "Entry"``, ``persistence.md`` from a file
  beside it), and one cited by the index, docs/DECISIONS.md, fails naming that file;
  a test cited as ``tests/test_x.py::name`` is a function or class of that file;
* every file under docs/ is smaller than the size GitHub renders (``RENDERED``);
* each row of docs/CRON.md's table of rejected expressions raises the message it
  shows (``(...)`` and a trailing ``...`` stand for the rest).

And the package's docstrings: every Sphinx cross-reference (``:class:`...```,
``:func:`...```, ...) names something that exists, and a reference of the package's,
in a role or a literal (``SimulationEventLoop._advance``), as the documents' are.

And what a user of the wheel reads, who has no ``docs/``: every message of the package
(an exception, a warning, a log line: any string of its code but a docstring) cites a
document by its address in the repository (``lldsched.errors.doc_url``), never by its
path, and every such address, there or written out anywhere (docstrings, documents,
pyproject), names a file of the repository and a heading of it.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import functools
import importlib
import importlib.util
import inspect
import io
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lldsched.errors import REPOSITORY, doc_url
from lldsched.logs import LOGGERS

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]  # docs/decisions/ too
PACKAGE = ROOT / "lldsched"


def lines() -> Iterator[tuple[str, str, bool]]:
    """Each line of the documents: where (``README.md:12``), its text, and whether it
    is inside a fenced code block."""
    for path in DOCUMENTS:
        fenced, name = False, path.relative_to(ROOT)  # once a document, not once a line
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            yield f"{name}:{number}", line, fenced


def command_lines() -> Iterator[tuple[str, str, bool]]:
    """Where commands are given: the lines of the documents (a shell line continued
    with ``\\`` joined to the next), the notebooks' markdown (the ``# `` comment lines
    of ``notebooks/src/*.py``) and the usage lines of the benchmarks' and tools' module
    docstrings (commands to copy, as a shell block's are)."""
    pending, first = "", ""
    for where, line, fenced in lines():
        if fenced and line.rstrip().endswith("\\"):
            pending, first = pending + line.rstrip()[:-1] + " ", first or where
            continue
        yield first or where, pending + line, fenced
        pending, first = "", ""
    for path in sorted((ROOT / "notebooks" / "src").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("# "):
                yield f"{path.relative_to(ROOT)}:{number}", line[2:], False
    for path in [
        *sorted((ROOT / "benchmarks").glob("*.py")),
        *sorted((ROOT / "tools").glob("*.py")),
    ]:
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        for line in docstring.splitlines():
            if re.match(r"\s+python3? ", line):
                yield f"{path.relative_to(ROOT)} (docstring)", line.strip(), True


def commands_of(line: str, fenced: bool) -> list[str]:
    """Where a command may be: a shell block's line (its comment cut), or a
    ``backticked`` span of prose."""
    return [line.split(" #", 1)[0]] if fenced else re.findall(r"`([^`]+)`", line)


def stale(found: list[str]) -> str:
    return "\n".join(["the documents name what does not exist:", *found])


# --- paths and dotted names ----------------------------------------------------------

PATH = re.compile(
    r"(?<![\w./-])((?:lldsched|tests|benchmarks|tools|docs|notebooks|binder|\.ci)/[\w./*-]*[\w*/])"
)
DOTTED = re.compile(r"(?<![\w./-])(lldsched(?:\.\w+)+)")


def test_every_path_the_documents_mention_exists() -> None:
    files = {
        path.name
        for top in ROOT.iterdir()
        if top.is_dir() and not top.name.startswith(".")  # not .venv
        for pattern in ("*.py", "*.ipynb")
        for path in top.rglob(pattern)
    } | {path.name for path in ROOT.glob("*.py")}  # setup.py
    missing = []
    for where, line, _ in lines():
        for match in PATH.finditer(line):
            path = match.group(1).rstrip(".")
            exists = any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()
            if not exists:
                missing.append(f"{where}: {path}  | {line.strip()}")
        for span in re.findall(r"`([^`]+)`", line):  # a file named alone: `machine.py`
            for name in re.findall(r"(?<![\w/.-])([\w-]+\.(?:py|ipynb))\b", span):
                if name not in files:
                    missing.append(f"{where}: {name}  | {line.strip()}")
    assert not missing, stale(missing)


def resolves(name: str) -> bool:
    """``name`` (``lldsched.x.y``) is a module, or an attribute down from one; a
    function or class named in a module (not a package, which re-exports) is defined
    there, not imported from elsewhere; or one of the package's loggers
    (``lldsched.jobs``: lldsched/logs.py)."""
    if name in LOGGERS:
        return True
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        found = module
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        if cut < len(parts) and not hasattr(module, "__path__") and parts[0] == "lldsched":
            return defines(module, parts[cut])
        return True
    return False


def test_every_dotted_lldsched_name_the_documents_mention_imports() -> None:
    missing = [
        f"{where}: {name}  | {line.strip()}"
        for where, line, _ in lines()
        for name in DOTTED.findall(line)
        if not resolves(name)
    ]
    assert not missing, stale(missing)


def package_modules() -> dict[str, list[ModuleType]]:
    """Every module of the package, by its last name and by its path in the package
    (``sqlite``, ``stores/sqlite``)."""
    found: dict[str, list[ModuleType]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            continue
        module = importlib.import_module(".".join(parts))
        for short in {parts[-1], "/".join(parts[1:]), "/".join(parts[-2:])}:
            found.setdefault(short, []).append(module)
    return found


def package_classes(modules: dict[str, list[ModuleType]]) -> dict[str, list[type]]:
    found: dict[str, list[type]] = {}
    for module in {m for ms in modules.values() for m in ms}:
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module.__name__:
                found.setdefault(name, []).append(value)
    return found


@functools.cache
def class_sources(filename: str) -> dict[str, str]:
    """The source of each class a Python file defines, by its qualified name (its
    decorators included), as ``inspect.getsource`` gives it: the first definition of a
    name, a class in a function under ``f.<locals>.``. One parse of the file serves all
    its classes, where ``inspect.getsource`` parses the whole file again for each."""
    lines = Path(filename).read_text(encoding="utf-8").splitlines(keepends=True)
    found: dict[str, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                body = child.body[0].col_offset
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                end = child.end_lineno or child.lineno
                # inspect's block goes on over the comments indented as the body after
                # its last statement (past blank lines and comments less indented).
                for number in range(end, len(lines)):
                    text = lines[number].lstrip()
                    if text.strip() and not text.startswith("#"):
                        break
                    if text.startswith("#") and len(lines[number]) - len(text) >= body:
                        end = number + 1
                found.setdefault(prefix + child.name, "".join(lines[start - 1 : end]))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, f"{prefix}{child.name}.<locals>.")
            else:
                visit(child, prefix)

    visit(ast.parse("".join(lines)), "")
    return found


def source_of(cls: type) -> str:
    """``cls``'s source, or "" for a class with none (a builtin, one made by a call)."""
    filename = getattr(sys.modules.get(cls.__module__), "__file__", None) or ""
    if not filename.endswith(".py"):
        return ""
    return class_sources(filename).get(cls.__qualname__, "")


def members(cls: type) -> set[str]:
    """What ``cls`` has (its members' too, for an Enum), and what a method of it, or of a
    base, sets on ``self`` or its body declares."""
    found = set(dir(cls))
    for member in getattr(cls, "__members__", {}).values():
        found.update(dir(member))
    for base in cls.__mro__:
        source = source_of(base)
        found.update(re.findall(r"self\.(\w+)\s*[:=]", source))
        found.update(re.findall(r"^\s+(\w+)\s*:", source, flags=re.M))
    return found


def defines(module: ModuleType, name: str) -> bool:
    """``module`` has ``name`` of its own: a function or class it imported from another
    module is not its (``stores/sqlite.finished`` is ``persistence``'s), unless it
    re-exports it in its ``__all__``: then it is the path users import, and the one the
    documents show (``lldsched.stores.codec.register_schedule``, defined in
    ``schedulecodec``)."""
    value = getattr(module, name, None)
    if value is None:
        return hasattr(module, name)
    if inspect.isfunction(value) or inspect.isclass(value):
        return value.__module__ == module.__name__ or name in getattr(module, "__all__", ())
    return True


def test_a_name_a_module_re_exports_is_its_own_and_one_it_only_imports_is_not() -> None:
    from lldsched.stores import codec, sqlite

    assert resolves("lldsched.stores.codec.register_schedule")  # in codec's __all__
    assert defines(codec, "register_schedule")
    assert "finished" not in sqlite.__all__ and not defines(sqlite, "finished")
    assert not resolves("lldsched.stores.sqlite.finished")


# A name of the package's as the documents write one in backticks: ``Class.attribute``,
# ``module.name``, ``module.Class.attribute``, the module by its path in the package
# (``threaded/pool.MAX_WORKERS``) or dotted (``stores.codec.check_written``), each part
# checked, however many; ``lldsched.x.y`` is test_every_dotted_lldsched_name_...'s.
REFERENCE = re.compile(r"(?<![\w./-])((?:[a-z_]+/)*[A-Za-z_]\w*(?:\.\w+)+)\b")
# ``core/runs.py:rearmed``, ``lldsched/core/runs.py:SchedulerCore.finish``, inside a
# span or the whole of it: read as ``core/runs.rearmed``.
IN_FILE = re.compile(r"(?<![\w./-])(?:lldsched/)?((?:[a-z_]+/)*\w+)\.py:(?=[A-Za-z_])")
SUFFIXES = {"py", "pyi", "ipynb", "md", "json", "png", "toml", "cfg", "txt", "db", "lock", "sh"}


@functools.cache
def package_owners() -> dict[str, list[Any]]:
    """The modules a reference may start from: each module of the package by the
    names ``package_modules`` gives, and each subpackage (``cli``, ``stores``,
    ``views/plots``) by the same names (``reference_owners`` adds the classes)."""
    found: dict[str, list[Any]] = dict(package_modules())
    for path in sorted(PACKAGE.rglob("__init__.py")):
        parts = path.relative_to(ROOT).parent.parts
        if len(parts) > 1:  # not lldsched itself: ``lldsched.x`` is a dotted name
            module = importlib.import_module(".".join(parts))
            for short in {parts[-1], "/".join(parts[1:]), "/".join(parts[-2:])}:
                found.setdefault(short, []).append(module)
    return found


@functools.cache
def class_members(cls: type) -> frozenset[str]:
    """``members``, once a class: the documents name some classes hundreds of times."""
    return frozenset(members(cls))


def has_chain(owner: Any, chain: list[str], variables: frozenset[str] = frozenset()) -> bool:
    """``owner`` (a module or a class) has ``chain[0]``, which has ``chain[1]``, ...: a
    module defines each name (``defines``; a package has it), a class has it or
    inherits it (``members``: a method of a mixin counts). A name of another value
    (an instance's attribute, a function's) is not followed; nor one of a module named
    like a variable (``scheduler.pause``, ``task.id``) when ``variables``, what the
    package's classes have, has its first name."""
    for at, attribute in enumerate(chain):
        if isinstance(owner, ModuleType):
            if hasattr(owner, "__path__"):
                exists = hasattr(owner, attribute)
            else:
                exists = defines(owner, attribute)
            if not exists and at == 0 and attribute in variables:
                return True  # ``scheduler.pause``: a variable named like a module
        elif isinstance(owner, type):
            exists = attribute in class_members(owner)
        else:
            return True
        if not exists:
            return False
        owner = getattr(owner, attribute, None)
    return True


def unresolved_reference(
    reference: str, owners: dict[str, list[Any]], any_class: frozenset[str]
) -> bool:
    """``reference`` (``module.Class.attribute``, ``path/module.name``, ``Class.attribute``)
    starts from a module or class of the package (the longest leading path that is
    one), and some reading of it does not find the rest. Not the package's
    (``asyncio.Task``), or a file name (``tasks.db``): False."""
    parts = reference.split(".")
    if parts[0].startswith("lldsched") or any(part in SUFFIXES for part in parts[1:]):
        return False  # ``lldsched.x.y``: a dotted name, checked on its own
    starts = [
        (found, parts[cut:])
        for cut in range(len(parts) - 1, 0, -1)
        for found in owners.get("/".join(parts[:cut]), [])
    ]
    variables = any_class if parts[0].islower() and "/" not in parts[0] else frozenset()
    return bool(starts) and not any(
        has_chain(found, chain, variables if len(chain) == len(parts) - 1 else frozenset())
        for found, chain in starts
    )


@functools.cache
def reference_owners() -> tuple[dict[str, list[Any]], frozenset[str]]:
    """What a reference starts from (``package_owners``, and each class of the package
    by its name: a name both is the class) and every name the classes have (what a
    variable named like a module may be given)."""
    classes = package_classes(package_modules())
    any_class = frozenset().union(*(class_members(c) for found in classes.values() for c in found))
    return {**package_owners(), **classes}, any_class


def missing_references(span: str) -> list[str]:
    """The references of a backticked span (a ``file.py:Name`` one read as dotted,
    ``core/runs.rearmed``) that name what the package does not have."""
    owners, any_class = reference_owners()
    return [
        reference
        for reference in REFERENCE.findall(IN_FILE.sub(r"\1.", span))
        if unresolved_reference(reference, owners, any_class)
    ]


def test_every_class_attribute_and_module_name_in_backticks_exists() -> None:
    missing = [
        f"{where}: {reference}  | {line.strip()}"
        for where, line, fenced in lines()
        if not fenced  # code blocks run (tests/test_docs.py)
        for span in re.findall(r"`([^`]+)`", line)
        for reference in missing_references(span)
    ]
    assert not missing, stale(missing)


@pytest.mark.parametrize(
    ("span", "misspelt"),
    [
        # a module by its dotted path in the package, a subpackage's class
        ("core.registration.validated", "core.registration.validates"),
        ("schedules.base.next_run_and_skipped", "schedules.base.next_run_skipped"),
        ("cli.Parser._check_value", "cli.Parser._check_values"),
        # a module by its path or its name, a class, a method: three parts
        ("threaded/timer.TimerThread._run_timer", "threaded/timer.TimerThread._run_timers"),
        ("timer.TimerThread._run_timer", "timer.TimerThread._run_timers"),
        ("timer.TimerThread._run_timer", "timer.TimerThreads._run_timer"),
        # a mixin's method, through the class that mixes it in
        ("Simulation._advance", "Simulation._advanced"),
        ("sim/simulation.Simulation._advance", "sim/simulation.Simulation._advanced"),
        # a file and a name in it, the whole span or a part of it
        ("threaded/timer.py:TimerThread._run_timer", "threaded/timer.py:TimerThread._run_timers"),
        ("threaded/timer.py:TimerThread", "threaded/timer.py:_run_timer"),
        ("see lldsched/core/runs.py:rearmed()", "see lldsched/core/runs.py:rearm()"),
        ("core/runs.py:rearmed, called by", "core/runs.py:rearm, called by"),
    ],
)
def test_a_reference_to_what_is_not_there_is_caught(span: str, misspelt: str) -> None:
    """Each part of a reference is checked, however many it has: a name of three
    (``module.Class.attribute``) passed unread, as did ``core/runs.py:name``."""
    assert missing_references(span) == []
    assert missing_references(misspelt) != []


def test_a_name_not_the_packages_is_left_alone() -> None:
    for span in ["asyncio.Task.cancel", "tasks.db.lock", "os.path.splitext", "task.id.startswith"]:
        assert missing_references(span) == [], span


CALL = re.compile(r"(?<![\w.])(\w+)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
KEYWORD = re.compile(r"(?:^|,)\s*(\w+)\s*=(?!=)")
# Calls of another library's that share a name with one of the package's: APScheduler's
# (docs/MIGRATING.md's table, docs/PERFORMANCE.md's APScheduler 4) and asyncio's.
FOREIGN = {
    "shutdown(wait=True)",
    "shutdown(wait=False)",
    "start(paused=True)",
    "Task(..., context=Context())",
}


def keywords_refused(span: str, callables: dict[str, list[Any]]) -> list[str]:
    """The calls written in ``span`` (``Scheduler(max_wait=None)``, ``shutdown(drain=False)``)
    that name the package's callable (a class, a function or a method of that name) with
    a keyword none of them takes."""
    refused = []
    for call in CALL.finditer(span):
        name, arguments = call.groups()
        keywords = KEYWORD.findall(arguments)
        if not keywords or call.group(0) in FOREIGN or name not in callables:
            continue
        signatures = []
        for found in callables[name]:
            with contextlib.suppress(TypeError, ValueError):
                signatures.append(inspect.signature(found).parameters)
        if signatures and not any(
            all(keyword in parameters for keyword in keywords)
            or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
            for parameters in signatures
        ):
            refused.append(call.group(0))
    return refused


def package_callables() -> dict[str, list[Any]]:
    """The package's public classes and functions, and their classes' public methods, by
    name."""
    found: dict[str, list[Any]] = {}
    modules = package_modules()
    for name, classes in package_classes(modules).items():
        for cls in classes:
            found.setdefault(name, []).append(cls)
            for method, value in inspect.getmembers(cls, callable):
                if not method.startswith("_"):
                    found.setdefault(method, []).append(value)
    packages = [  # package_modules leaves them out: lldsched.cli.main is one's
        importlib.import_module(".".join(path.relative_to(ROOT).parent.parts))
        for path in PACKAGE.rglob("__init__.py")
    ]
    for module in {m for ms in modules.values() for m in ms} | set(packages):
        for name, value in vars(module).items():
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                found.setdefault(name, []).append(value)
    return found


def test_every_keyword_a_call_in_backticks_passes_is_a_parameter() -> None:
    """``Scheduler(max_wait=None)``, ``RetryPolicy(fail_after_given_up=n)``: a keyword
    renamed or dropped fails here, as an attribute does above (the code blocks run)."""
    callables = package_callables()
    refused = [
        f"{where}: {call}  | {line.strip()}"
        for where, line, fenced in lines()
        if not fenced
        for span in re.findall(r"`([^`]+)`", line)
        for call in keywords_refused(span, callables)
    ]
    assert not refused, stale(refused)


def test_a_keyword_a_callable_does_not_take_is_caught() -> None:
    callables = package_callables()
    assert keywords_refused("Scheduler(max_wait=None, workers=2)", callables) == []
    assert keywords_refused("shutdown(drain=False)", callables) == []
    assert keywords_refused("Scheduler(maxwait=None)", callables) == ["Scheduler(maxwait=None)"]
    assert keywords_refused("RetryPolicy(max_attempts=3, backof=1)", callables) != []
    assert keywords_refused("add_job(f, trigger='cron')", callables) == []  # not ours


FILE_NAME = re.compile(r"(lldsched/[\w/]+)\.py:([A-Za-z_]\w*(?:\.\w+)*)")


def file_names() -> list[tuple[str, str, str, str]]:
    """Each ``lldsched/x/y.py:Name.attribute`` written in backticks (docs/ARCHITECTURE.md's
    walk through one run): where, the line, the module and the dotted name."""
    return [
        (where, line.strip(), match.group(1).replace("/", "."), match.group(2))
        for where, line, fenced in lines()
        if not fenced
        for span in re.findall(r"`([^`]+)`", line)
        for match in [FILE_NAME.fullmatch(span)]
        if match is not None
    ]


def test_the_documents_name_functions_by_their_file() -> None:
    assert len(file_names()) >= 40


def test_every_function_named_by_its_file_is_defined_in_that_file() -> None:
    """``lldsched/core/machine.py:SchedulerCore.finish``: the module defines
    ``SchedulerCore`` itself (not an import), which has ``finish`` (a method of a base
    it mixes in counts: ``Scheduler.cancel`` is ``ControlVerbs``')."""
    missing = []
    for where, line, module_name, dotted in file_names():
        module = importlib.import_module(module_name)
        first, *rest = dotted.split(".")
        found: Any = getattr(module, first, None)
        exists = found is not None and defines(module, first)
        for attribute in rest:
            if not exists:
                break
            exists = hasattr(found, attribute) or (
                isinstance(found, type) and attribute in members(found)
            )
            found = getattr(found, attribute, None)
        if not exists:
            missing.append(f"{where}: {module_name}:{dotted}  | {line}")
    assert not missing, stale(missing)


# --- make targets --------------------------------------------------------------------


MAKE = re.compile(r"^make ([\w-]+)((?: +\w+=\S*)*)")


def test_every_make_target_the_documents_mention_is_in_the_makefile() -> None:
    """And each variable a ``make`` command sets (``make test PYTEST_WORKERS=0``) is one
    the Makefile has."""
    text = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", text, flags=re.M))
    variables = set(re.findall(r"^(\w+)\s*[?:]?=", text, flags=re.M))
    missing = []
    for where, line, fenced in command_lines():
        for match in (m for span in commands_of(line, fenced) for m in MAKE.finditer(span)):
            target, settings = match.group(1), re.findall(r"(\w+)=", match.group(2))
            unknown = [target] if target not in targets else []
            unknown += [name for name in settings if name not in variables]
            if unknown:
                missing.append(f"{where}: make {unknown}  | {line.strip()}")
    assert not missing, stale(missing)


# --- the command line ----------------------------------------------------------------

# ``python -m lldsched ARGS``, or the installed script: a span or shell line that starts
# ``lldsched demo`` (``cron``, ...).
CLI = re.compile(r"(?:python -m lldsched|^lldsched(?= +(?:demo|cron|simulate|lab)\b)) ([^`#\n]*)")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    from lldsched.cli import build_parser

    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def cli_commands() -> list[tuple[str, str, list[str], bool]]:
    found = []
    for where, line, fenced in command_lines():
        for match in (m for span in commands_of(line, fenced) for m in CLI.finditer(span)):
            found.append((where, line.strip(), shlex.split(match.group(1)), fenced))
    return found


def parse_error(words: list[str]) -> str | None:
    """What the CLI's parser says against ``words`` (None: they parse)."""
    from lldsched.cli import build_parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(words)
    except SystemExit as exit:
        return None if exit.code == 0 else err.getvalue().strip().splitlines()[-1]
    return None


def is_mention(words: list[str]) -> bool:
    """A command named in prose rather than given to run: alternatives (``demo / cron``),
    a placeholder (``lab <decision>``), a command without its arguments (``cron``) or an
    option without its value (``cron -n``). Its names are checked, not its parse."""
    if "/" in words or any(re.search(r"[<\[]", word) for word in words):
        return True
    return parse_error(words) is not None and (len(words) == 1 or words[-1].startswith("-"))


def will_not_run(words: list[str]) -> str | None:
    """Why a command given in full would fail: it does not parse, a ``cron`` one fails
    when run (it prints in milliseconds), a ``simulate`` one is refused by the checks it
    makes before simulating (:func:`lldsched.cli.simulate.refusal`; nothing simulated)."""
    from lldsched.cli import build_parser, main
    from lldsched.cli.simulate import refusal

    if (error := parse_error(words)) is not None:
        return error
    if words[0] == "cron":
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            status = main(words)
        return None if status == 0 else f"exit status {status}: {err.getvalue().strip()}"
    if words[0] == "simulate":
        return refusal(build_parser().parse_args(words))
    return None


def test_the_documents_give_commands_of_the_command_line() -> None:
    assert sum(fenced for *_, fenced in cli_commands()) >= 4
    given = {words[0] for _, _, words, _ in cli_commands() if not is_mention(words)}
    assert given == set(subcommands()), "a command no document gives in full"


def command_line_problems(words: list[str], fenced: bool) -> str | None:
    commands = subcommands()
    if not words or words[0] not in commands:
        return f"no such command {words[:1]}"
    unknown = [
        w
        for w in words
        if w.startswith("-") and w.split("=")[0] not in options_of(commands[words[0]])
    ]
    if unknown:
        return f"{words[0]} has no option {unknown}"
    if fenced or not is_mention(words):  # a command to copy: it runs as given
        return will_not_run(words)
    return None


def test_every_command_line_command_the_documents_give_runs() -> None:
    wrong = [
        f"{where}: {problem}  | {line}"
        for where, line, words, fenced in cli_commands()
        if (problem := command_line_problems(words, fenced)) is not None
    ]
    assert not wrong, stale(wrong)


@pytest.mark.parametrize(
    "command",
    [
        'cron "0 3 * * *" --zone Europe/Berlin',  # the option is --tz
        "simulate --day 3",
        "simulate --days 400",  # parses, refused before simulating
        "cron '0 3 * *'",  # four fields: parses, fails when run
        "cron '0 3 * * *' --tz Mars/Olympus",
        "lab pushes",
        "replay",
    ],
)
def test_a_command_line_command_that_would_fail_is_caught(command: str) -> None:
    for line, fenced in [
        (f"python -m lldsched {command}", True),
        (f"`python -m lldsched {command}`", False),
    ]:
        (span,) = commands_of(line, fenced)
        (match,) = CLI.finditer(span)
        assert command_line_problems(shlex.split(match.group(1)), fenced) is not None


def test_the_installed_script_is_read_as_the_command_line() -> None:
    found = [m.group(1) for m in CLI.finditer("lldsched cron '0 3 * * 1-5'")]
    assert found == ["cron '0 3 * * 1-5'"]
    assert list(CLI.finditer("the lldsched scheduler")) == []


def test_a_mention_is_held_to_its_names_only() -> None:
    for mention in ["lab <decision>", "cron -n", "cron", "demo / cron / simulate / lab"]:
        assert command_line_problems(shlex.split(mention), fenced=False) is None
    assert command_line_problems(["cron", "--zone"], fenced=False) is not None


# --- script commands: benchmarks/, tools/, python -m tests.X, python -m pytest ----------

# ``benchmarks/X.py ARGS`` or ``tools/X.py ARGS``; a bare ``X.py ARGS`` is one of
# theirs when one of the two folders has it (``startup.py --no-callgrind``).
SCRIPT = re.compile(r"(?<![\w/.-])(?:(benchmarks|tools)/)?(\w+)\.py((?:[ ]+[\w./,=-]+)*)")


class Parsed(Exception):
    """Raised by ``parse_args`` in place of running the script that called it."""


def script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"doc_script_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    sys.modules[spec.name] = module  # a dataclass of the script looks its module up
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
        del sys.modules[spec.name]
    return module


def script_commands() -> list[tuple[str, str, Path, list[str]]]:
    """Each script command with arguments: where, its line, the script, the arguments."""
    found = []
    for where, line, fenced in command_lines():
        for match in (m for span in commands_of(line, fenced) for m in SCRIPT.finditer(span)):
            folder, name, words = match.group(1), match.group(2), match.group(3).split()
            folders = [folder] if folder else ["benchmarks", "tools"]
            paths = [
                ROOT / f / f"{name}.py" for f in folders if (ROOT / f / f"{name}.py").is_file()
            ]
            if words and paths:  # a missing one: test_every_path_the_documents_mention_exists
                found.append((where, line.strip(), paths[0], words))
    return found


def test_the_documents_give_script_commands_with_arguments() -> None:
    scripts = {path.relative_to(ROOT).as_posix() for _, _, path, _ in script_commands()}
    assert len(script_commands()) >= 20
    assert {"benchmarks/run_all.py", "benchmarks/startup.py", "tools/mutate.py"} <= scripts


def script_refuses(module: ModuleType, path: Path, words: list[str]) -> list[str]:
    """The arguments of ``words`` that the script ``path`` does not take (its
    ``parse_args`` patched to raise :class:`Parsed`)."""
    source = path.read_text()
    sizes = getattr(module, "SIZES", None)
    if isinstance(sizes, dict):  # the instruction counters: modes by name, and --one
        return [w for w in words if w not in sizes and not w.isdigit() and f'"{w}"' not in source]
    if "argparse" in vars(module):
        try:
            module.main(words)
        except Parsed:
            return []
        except SystemExit:
            return words
        except TypeError:  # a main() that takes no argv
            return [*words, "(its main() takes no arguments)"]
        return ["(it ran without parsing)"]
    # a script that reads sys.argv itself: the flags its source tests
    return [w for w in words if not w.isdigit() and f'"{w}"' not in source]


@pytest.fixture
def parse_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real = argparse.ArgumentParser.parse_args

    def parse_only(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise Parsed(real(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)


@pytest.mark.usefixtures("parse_only")
def test_every_script_command_the_documents_give_takes_its_arguments() -> None:
    modules: dict[Path, ModuleType] = {}
    wrong = []
    for where, line, path, words in script_commands():
        module = modules.get(path) or modules.setdefault(path, script(path))
        bad = script_refuses(module, path, words)
        bad += [w for w in words if w.endswith(".py") and not (ROOT / w).is_file()]
        if bad:
            wrong.append(f"{where}: {path.relative_to(ROOT)} does not take {bad}  | {line}")
        if path.name == "run_all.py":  # each name selects a benchmark
            empty = [w for w in words if not w.startswith("-") and not module.discover([w])]
            if empty:
                wrong.append(f"{where}: run_all.py: no benchmark named {empty}  | {line}")
    assert not wrong, stale(wrong)


@pytest.mark.usefixtures("parse_only")
def test_a_script_option_that_is_not_there_is_caught() -> None:
    for name in ("benchmarks/run_all.py", "tools/mutate.py", "benchmarks/startup.py"):
        path = ROOT / name
        assert script_refuses(script(path), path, ["--fast"]) != [], name
    path = ROOT / "benchmarks" / "sim_instructions.py"
    assert script_refuses(script(path), path, ["sim", "sim1000"]) == ["sim1000"]


# ``python -m tests.X ARGS`` (a soak run outside the suite) or ``python -m pytest ARGS``.
TEST_RUN = re.compile(r"python -m (tests\.\w+|pytest)((?:[ ]+[\w./,=-]+)*)")


def test_every_test_run_the_documents_give_has_its_options(pytestconfig: pytest.Config) -> None:
    """A ``tests.X`` module's options are strings its source spells; pytest's, options
    pytest or tests/conftest.py define; the test files named exist."""
    wrong, seen = [], 0
    for where, line, fenced in command_lines():
        for match in (m for span in commands_of(line, fenced) for m in TEST_RUN.finditer(span)):
            seen += 1
            target, words = match.group(1), match.group(2).split()
            options = [w.split("=")[0] for w in words if w.startswith("--")]
            if target == "pytest":
                bad = [o for o in options if not has_option(pytestconfig, o)]
            else:
                path = ROOT / (target.replace(".", "/") + ".py")
                source = path.read_text() if path.is_file() else ""
                bad = [target] if not source else [o for o in options if f'"{o}"' not in source]
            bad += [w for w in words if w.endswith(".py") and not (ROOT / w).is_file()]
            if bad:
                wrong.append(f"{where}: {target} does not take {bad}  | {line.strip()}")
    assert seen >= 4 and not wrong, stale(wrong)


def has_option(config: pytest.Config, option: str) -> bool:
    try:
        config.getoption(option)
    except ValueError:
        return False
    return True


def test_a_pytest_option_that_is_not_there_is_caught(pytestconfig: pytest.Config) -> None:
    assert has_option(pytestconfig, "--switch-interval") and has_option(pytestconfig, "--maxfail")
    assert not has_option(pytestconfig, "--switch-intervals")


# --- environment variables -------------------------------------------------------------


def test_every_lldsched_environment_variable_the_documents_name_is_read() -> None:
    named = {
        (where, name)
        for where, line, _ in command_lines()
        for name in re.findall(r"\bLLDSCHED_[A-Z_]+\b", line)
    }
    sources = "".join(
        path.read_text(encoding="utf-8")
        for folder in ("lldsched", "tests", "benchmarks", "tools")
        for path in (ROOT / folder).rglob("*.py")
        if path.resolve() != Path(__file__).resolve()
    )
    unread = sorted(f"{where}: {name}" for where, name in named if f'"{name}"' not in sources)
    assert named and not unread, stale(unread)


# --- links and cited sections --------------------------------------------------------


def prose(text: str) -> str:
    """``text`` with its fenced code blocks blanked (a ``# comment`` in a block is no
    heading), each line kept where it was."""
    kept, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            kept.append("")
        else:
            kept.append("" if fenced else line)
    return "\n".join(kept)


HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", flags=re.M)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text as shown (a link's text, not its target; no
    inline HTML), lowercased, what is not a letter, a digit, ``_``, ``-`` or a space
    dropped, each space a hyphen (``Dependencies (`depends_on`)``:
    ``dependencies-depends_on``)."""
    shown = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    shown = re.sub(r"<[^>]*>", "", shown)
    return re.sub(r"[^\w\- ]", "", shown.strip().lower()).replace(" ", "-")


@functools.cache
def headings(path: Path) -> tuple[tuple[int, int, str, str], ...]:
    """A Markdown file's headings outside code blocks: where each starts in the text,
    its level, its text and its anchor (a repeated one numbered ``-1``, ``-2``, ... as
    GitHub numbers it)."""
    found: list[tuple[int, int, str, str]] = []
    taken: set[str] = set()
    for match in HEADING.finditer(prose(path.read_text(encoding="utf-8"))):
        base = anchor = slug(match.group(2))
        count = 0
        while anchor in taken:
            count += 1
            anchor = f"{base}-{count}"
        taken.add(anchor)
        found.append((match.start(), len(match.group(1)), match.group(2), anchor))
    return tuple(found)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    return {anchor for *_, anchor in headings(path)}


def test_an_anchor_is_the_slug_github_makes_of_a_heading(tmp_path: Path) -> None:
    document = tmp_path / "X.md"
    document.write_text(
        "# Dependencies (`depends_on`)\n## Platforms: macOS, Python 3.14's forkserver\n"
        "### See [GUIDE.md](GUIDE.md#x) <sup>1</sup>\n## Notes\n## Notes #\n"
        "```python\n# a comment, not a heading\n```\n"
    )
    assert anchors(document) == {
        "dependencies-depends_on",
        "platforms-macos-python-314s-forkserver",
        "see-guidemd-1",
        "notes",
        "notes-1",
    }


NOTEBOOKS = ROOT / "notebooks"


def notebook_anchors(notebook: Path) -> set[str]:
    """The anchors of a notebook's markdown (its percent-format source's): each
    ``<a id="...">``, and each heading's, as GitHub (``slug``) or Jupyter (its text, each
    space a hyphen) makes them."""
    source = NOTEBOOKS / "src" / notebook.with_suffix(".py").name
    text = "\n".join(
        line[2:]
        for line in source.read_text(encoding="utf-8").splitlines()
        if line.startswith("# ")
    )
    titles = [match.group(2) for match in HEADING.finditer(text)]
    return {
        *re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text),
        *map(slug, titles),
        *(title.strip().replace(" ", "-") for title in titles),
    }


def link_lines() -> Iterator[tuple[str, str, Path]]:
    """Where relative links are written: each line of the documents and of the
    notebooks' markdown (the ``# `` lines of ``notebooks/src/*.py``), and the folder its
    links are relative to (a notebook's is ``notebooks/``, where the notebook is)."""
    for where, line, _ in lines():
        yield where, line, (ROOT / where.split(":")[0]).parent
    for path in sorted((NOTEBOOKS / "src").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("# "):
                yield f"{path.relative_to(ROOT)}:{number}", line[2:], NOTEBOOKS


# How the anchors of a linked file are found (another file's are not checked).
LINKED_ANCHORS: dict[str, Callable[[Path], set[str]]] = {
    ".md": anchors,
    ".ipynb": notebook_anchors,
}


def broken_links(where: str, line: str, folder: Path) -> list[str]:
    """The links of ``line`` (written in ``where``, relative to ``folder``) to a file that
    is not there, or to an anchor that is no heading's (an ``.md`` file's, or one of
    the page's own) or no notebook's."""
    document = ROOT / where.split(":")[0]
    broken = []
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", line):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        linked = (folder / target) if target else document
        of = LINKED_ANCHORS.get(linked.suffix)
        if not linked.exists():
            broken.append(f"{where}: {target}  | {line.strip()}")
        elif anchor and of is not None and anchor not in of(linked):
            broken.append(f"{where}: {target}#{anchor}  | {line.strip()}")
    return broken


def test_every_relative_link_resolves() -> None:
    broken = [
        bad for where, line, folder in link_lines() for bad in broken_links(where, line, folder)
    ]
    assert not broken, stale(broken)


def test_a_link_to_an_anchor_that_is_not_there_is_caught() -> None:
    guide, lab = "docs/GUIDE.md:1", "notebooks/src/07-interview-walkthrough.py:1"
    assert (
        broken_links(
            guide,
            "[t](decisions/persistence.md#persistence), "
            "[d](#durability-tasks-that-survive-a-restart)",
            ROOT / "docs",
        )
        == []
    )
    assert broken_links(guide, "the [tour](#a-tour-of-the-apis)", ROOT / "docs") != []
    assert broken_links(guide, "[p](decisions/persistence.md#persistance)", ROOT / "docs") != []
    assert broken_links(guide, "[p](DECISIONS.md#persistence)", ROOT / "docs") != []  # moved
    entry, log = "docs/decisions/schedules.md:1", ROOT / "docs" / "decisions"
    assert broken_links(entry, "[p](persistence.md#persistence), [g](../GUIDE.md)", log) == []
    assert broken_links(entry, "[g](GUIDE.md)", log) != []  # a folder up from the log
    assert broken_links(lab, "[w](09-design-lab.ipynb#lab-wait)", NOTEBOOKS) == []
    assert broken_links(lab, "[w](09-design-lab.ipynb#lab-waits)", NOTEBOOKS) != []
    assert broken_links(lab, "[c](../docs/CRON.md#the-grammar)", NOTEBOOKS) == []
    assert broken_links(lab, "[c](../docs/CRON.md#the-grammars)", NOTEBOOKS) != []


# ``docs/X.md, "Section"``, ``X.md ("Section")``, a link to the document followed by the
# section (``[X.md](X.md), "Section"``, ``[X](X.md#anchor), "Section"``,
# ``[X](X.md#anchor) ("Section")``, ``[X](X.md#anchor)'s "Section"``), and the README's
# ``README, "Section"``, ``README "Section"``, ``README.md ("Section")``; the section in
# double quotes, or in single quotes (a message inside a double-quoted string).  A file
# of the decision log is ``decisions/x.md`` (after ``docs/`` or not), or ``x.md`` in a
# link from a file beside it.
CITED = re.compile(
    r"\b(README(?:\.md)?|[A-Z]+\.md|(?:decisions/)?[a-z][a-z0-9-]*\.md)"
    r"(?:#([^)\s]*))?(?:\)?, |\)? \(|\)?'s | )"
    r"(?:\"([^\"]{1,120})\"|'([^']{1,120})')"
)
# Where citations are written: the documents, the package (messages, docstrings,
# comments), the tests (this one's examples aside), the tools and the notebooks' sources.
CITING = [
    *DOCUMENTS,
    *(
        path
        for top in ("lldsched", "tests", "tools", "benchmarks")
        for path in sorted((ROOT / top).rglob("*.py"))
        if path != Path(__file__).resolve()
    ),
    *sorted((ROOT / "notebooks" / "src").glob("*.py")),
]


@functools.cache
def sections(path: Path, anchor: str = "") -> frozenset[str]:
    """The headings, the bold bullet heads and the bold heads of paragraphs of a
    document (outside its code blocks), or of the part of it under the heading whose
    anchor is ``anchor`` (down to the next heading of its level or above); a bold head
    that runs over lines is read as one line. Read once a document, as ``headings`` is:
    the documents do not change while the tests run, and the decision log's files are
    cited hundreds of times."""
    text = prose(path.read_text(encoding="utf-8"))
    if anchor:
        marks = headings(path)
        at = next(n for n, (*_, found) in enumerate(marks) if found == anchor)
        start, level = marks[at][:2]
        end = next((m[0] for m in marks[at + 1 :] if m[1] <= level), len(text))
        text = text[start:end]
    bold = re.findall(r"^\s*(?:[-*] )?\*\*((?:(?!\*\*).)+?)\*\*", text, flags=re.M | re.S)
    return frozenset(
        {
            *(match.group(2) for match in HEADING.finditer(text)),
            *(" ".join(head.split()) for head in bold),
        }
    )


def cited_document(name: str, root: Path) -> Path:
    """The file a citation's name stands for: the README, a document of docs/, or a file
    of the decision log (``decisions/x.md``, or ``x.md`` from a file beside it)."""
    if name.startswith("README"):
        return root / "README.md"
    if name[0].islower():
        return root / "docs" / "decisions" / name.removeprefix("decisions/")
    return root / "docs" / name


def holders(section: str, root: Path) -> list[str]:
    """The files of the decision log with a heading or a bold head that ``section``
    begins (those it is the whole of, if any)."""
    log = sorted((root / "docs" / "decisions").glob("*.md"))
    found = [path for path in log if section in sections(path)]
    found = found or [
        path for path in log if any(head.startswith(section) for head in sections(path))
    ]
    return [str(path.relative_to(root)) for path in found]


def uncited(text: str, root: Path = ROOT) -> list[tuple[str, str]]:
    """What ``text`` cites that is not there: (document, section) for a section that is
    no heading or bold bullet of that document, (document, ``#anchor``) for a link's
    anchor that is none of its headings', and (document, ``#anchor, section``) for a
    section that is not under the heading the link points to; (docs/DECISIONS.md,
    ``section: in docs/decisions/x.md``) for an entry cited by the log's index, not by
    the file that holds it, and (``docs/decisions/x.md``, ``no such file``) for a file
    of the log that is not there. A citation may break across a docstring's or a
    comment's lines. The documents are those of ``root``."""
    joined = re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)
    missing = []
    for name, anchor, double, single in CITED.findall(joined):
        section = double or single
        document = cited_document(name, root)
        if name.startswith("decisions/") and not document.is_file():
            missing.append((f"docs/{name}", "no such file"))
            continue
        if not document.is_file():
            continue  # a file name in a docstring's example (``X.md, "Section"``)
        cited = str(document.relative_to(root))
        held = holders(section, root) if cited == "docs/DECISIONS.md" else []
        if held:
            missing.append((cited, f"{section}: in {', '.join(held)}"))
        elif not any(head.startswith(section) for head in sections(document)):
            missing.append((cited, section))
        elif anchor and anchor not in anchors(document):
            missing.append((cited, f"#{anchor}"))
        elif anchor and not any(head.startswith(section) for head in sections(document, anchor)):
            missing.append((cited, f"#{anchor}, {section}"))
    return missing


def test_every_section_cited_by_name_is_there() -> None:
    missing = []
    for path in CITING:
        text = path.read_text()
        for document, section in uncited(text):
            line = text[: text.find(section.split()[0].strip("#,"))].count("\n") + 1
            missing.append(f"{path.relative_to(ROOT)}:{line}: {document}, {section!r}")
    assert not missing, stale(missing)


def test_a_section_cited_that_is_not_there_is_caught() -> None:
    assert uncited('(README, "Nowhere to be found")') == [("README.md", "Nowhere to be found")]
    assert uncited("docs/OPERATIONS.md, 'Nowhere to be found'") == [
        ("docs/OPERATIONS.md", "Nowhere to be found")
    ]
    assert uncited('README.md ("Nowhere to be\nfound")') == [("README.md", "Nowhere to be found")]
    assert uncited('docs/GUIDE.md, "Durability"; [CRON.md](CRON.md), "Time zones"') == []
    assert (  # a bold bullet head that runs over two lines of its file
        uncited(
            "[decisions/changing-a-task.md](decisions/changing-a-task.md), "
            '"`reschedule(task_id, schedule)` starts the new schedule as if the task were '
            'registered now"'
        )
        == []
    )


def test_an_entry_is_cited_by_the_file_of_the_log_that_holds_it() -> None:
    """``docs/decisions/x.md, "Entry"``, ``decisions/x.md`` in a link, ``x.md`` in a link
    from a file beside it: each read, the entry looked for in that file."""
    assert uncited('docs/decisions/persistence.md, "Refuse, never repair"') == []
    assert uncited('(docs/decisions/persistence.md, "Refuse, always repair")') == [
        ("docs/decisions/persistence.md", "Refuse, always repair")
    ]
    assert uncited('docs/decisions/schedules.md ("Refuse, never repair")') == [
        ("docs/decisions/schedules.md", "Refuse, never repair")
    ]
    linked = '[decisions/persistence.md](decisions/persistence.md#persistence), "Refuse, never'
    assert uncited(linked + ' repair"') == []
    assert uncited(linked.replace("#persistence", "#persistance") + ' repair"') == [
        ("docs/decisions/persistence.md", "#persistance")
    ]
    assert uncited('[p](persistence.md#persistence) ("Refuse, never repair")') == []  # beside
    assert uncited('docs/decisions/persistance.md, "Refuse, never repair"') == [
        ("docs/decisions/persistance.md", "no such file")
    ]


def test_an_entry_cited_by_the_index_fails_naming_the_file_that_holds_it() -> None:
    """docs/DECISIONS.md is the index of the log: an entry cited by it, in any form, is
    told where it is."""
    where = [("docs/DECISIONS.md", "Refuse, never repair: in docs/decisions/persistence.md")]
    assert uncited('docs/DECISIONS.md, "Refuse, never repair"') == where
    assert uncited('[DECISIONS.md](DECISIONS.md), "Refuse, never\n    repair"') == where
    assert uncited('(docs/DECISIONS.md, "Persistence")') == [
        ("docs/DECISIONS.md", "Persistence: in docs/decisions/persistence.md")
    ]
    assert uncited('docs/DECISIONS.md, "Nowhere to be found"') == [
        ("docs/DECISIONS.md", "Nowhere to be found")
    ]
    assert uncited('docs/DECISIONS.md, "Sections"') == []  # the index's own heading
    assert uncited("docs/DECISIONS.md lists the sections") == []


def test_a_section_cited_after_a_link_with_an_anchor_is_checked(tmp_path: Path) -> None:
    """``[DECISIONS.md](DECISIONS.md#anchor), "Section"``, ``[X](X.md#anchor)
    ("Section")`` and ``[X](X.md#anchor)'s "Section"``: the section is a heading or a
    bold head of the document, under the heading the anchor points to."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "DECISIONS.md").write_text(
        "# Decisions\n\n## Schedules\n\n- **Fixed rate.** Text.\n\n"
        "## Persistence\n\n```python\n# Not a heading\n```\n\n"
        "- **Refuse, never\n  repair.** Text.\n\n### Claims\n\n**Leases.** Text.\n\n"
        "## Upgrading\n"
    )
    found = functools.partial(uncited, root=tmp_path)
    cited = '[DECISIONS.md](DECISIONS.md#persistence), "Refuse, never repair"'
    assert found(cited) == []
    assert found(cited.replace("never repair", "always repair")) == [
        ("docs/DECISIONS.md", "Refuse, always repair")
    ]
    assert found(cited.replace("#persistence", "#persistance")) == [
        ("docs/DECISIONS.md", "#persistance")
    ]
    assert found(cited.replace("#persistence", "#schedules")) == [
        ("docs/DECISIONS.md", "#schedules, Refuse, never repair")
    ]
    assert (
        found("""[D](DECISIONS.md#persistence) ("Leases"), [D](DECISIONS.md#claims)'s "Leases\"""")
        == []
    )
    assert found('[D](DECISIONS.md#upgrading) ("Leases")') == [
        ("docs/DECISIONS.md", "#upgrading, Leases")
    ]
    assert found('[D](DECISIONS.md#persistence) ("Not a heading")') == [
        ("docs/DECISIONS.md", "Not a heading")
    ]
    assert found('[DECISIONS](DECISIONS.md#schedules), "Fixed\nrates"') == [
        ("docs/DECISIONS.md", "Fixed rates")
    ]


# The size past which GitHub shows a Markdown file as text, unrendered: "Text files over
# 1 MB are always displayed as plain text" (GitHub's "Limits for viewing content and diffs
# in a repository", GitHub Enterprise 2.4's documentation); its "Repository limits" page
# now says previews render for files "generally less than 2 MB", and that "more complex
# files may time out". The smaller figure: docs/DECISIONS.md, at 1.1 MB, was past it.
RENDERED = 1_000_000


def test_every_file_under_docs_is_small_enough_for_github_to_render() -> None:
    large = [
        f"{path.relative_to(ROOT)}: {path.stat().st_size:,} bytes"
        for path in sorted((ROOT / "docs").rglob("*"))
        if path.is_file() and path.stat().st_size >= RENDERED
    ]
    assert not large, "\n".join(["GitHub would not render (split the file):", *large])


def test_the_index_of_the_decision_log_lists_its_files_and_holds_no_entry() -> None:
    """docs/DECISIONS.md links every file of docs/decisions/, and an entry (a bullet with
    a bold head) written there, as into the single log before it was split, fails: it
    goes at the end of its section's file."""
    index = prose((ROOT / "docs" / "DECISIONS.md").read_text(encoding="utf-8"))
    entries = re.findall(r"^\s*[-*] \*\*(.{1,60})", index, flags=re.M)
    assert entries == [], f"entries in docs/DECISIONS.md, the index: {entries}"
    listed = set(re.findall(r"\]\(decisions/([\w-]+\.md)\)", index))
    files = {path.name for path in (ROOT / "docs" / "decisions").glob("*.md")}
    assert listed == files != set(), f"not in the index: {sorted(files - listed)}"


def test_every_test_cited_by_name_is_there() -> None:
    missing = []
    for path in [*DOCUMENTS, *sorted(PACKAGE.rglob("*.py"))]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for test, name in re.findall(r"(tests/[\w/]+\.py)::(\w+)", line):
                source = (ROOT / test).read_text() if (ROOT / test).is_file() else ""
                if not re.search(rf"^\s*(?:async def|def|class) {name}\b", source, flags=re.M):
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {test}::{name}")
    assert not missing, stale(missing)


# --- quoted messages -----------------------------------------------------------------


def cron_rejections() -> list[tuple[str, str, str]]:
    text = (ROOT / "docs" / "CRON.md").read_text()
    return [
        (f"docs/CRON.md:{text[: m.start()].count(chr(10)) + 1}", m.group(1), m.group(2))
        for m in re.finditer(r"^\| `([^`]+)` \| `([^`]+)` \|$", text, flags=re.M)
        if not m.group(1).startswith("tests/")
    ]


def test_cron_md_shows_its_table_of_rejected_expressions() -> None:
    assert len(cron_rejections()) >= 10


@pytest.mark.parametrize(("where", "expr", "shown"), cron_rejections())
def test_each_rejected_expression_of_cron_md_raises_the_message_it_shows(
    where: str, expr: str, shown: str
) -> None:
    from lldsched import CronSchedule, ScheduleError

    with pytest.raises(ScheduleError) as raised:
        CronSchedule(expr)
    pattern = ".*".join(re.escape(part) for part in re.split(r"\(\.\.\.\)|\.\.\.$", shown))
    assert re.fullmatch(pattern, str(raised.value)), f"{where}: {expr!r} raises {raised.value}"


# --- cross-references in the package's docstrings ------------------------------------

ROLE = re.compile(r":(?:mod|class|func|meth|attr|data|exc|obj):`~?([\w.]+)`")


@functools.cache
def package_tree(path: Path) -> ast.Module:
    """A module of the package, parsed once for the checks that read it (none changes
    it): four of them parsed every file, 0.7 s of CPU time each."""
    return ast.parse(path.read_text())


def defined_names() -> set[str]:
    """Every name the package defines: classes, functions, module globals, class
    attributes and the attributes its methods set on ``self``."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(package_tree(path)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def found_from(module: str, name: str, defined: set[str]) -> bool:
    """``name``, as a docstring of ``module`` writes it: absolute, relative to the
    module's package (a leading ``.``), a module of the standard library or a
    builtin, or else names the package defines (``Class.attribute``, a method of a
    mixin's host)."""
    if name.startswith("."):
        return resolves(module + name) or resolves(module.rsplit(".", 1)[0] + name)
    if name.startswith("lldsched.") or resolves(name):
        return resolves(name)
    if hasattr(builtins, name.split(".")[0]):
        return True
    return all(part in defined for part in name.split("."))


LITERAL = re.compile(r"``([^`]+)``")


def docstring_misses(module: str, docstring: str, defined: set[str]) -> list[str]:
    """What a docstring of ``module`` names that is not there: a cross-reference
    (``found_from``), or a reference of the package's, in a role or a literal
    (``module.Class.attribute``, ``Class.attribute``: ``missing_references``;
    ``lldsched.x.y`` in a literal: ``resolves``)."""
    roles, literals = ROLE.findall(docstring), LITERAL.findall(docstring)
    misses = [name for name in roles if not found_from(module, name, defined)]
    for span in literals:
        misses += [name for name in DOTTED.findall(span) if not resolves(name)]
    for span in [*roles, *literals]:
        misses += missing_references(span)
    return list(dict.fromkeys(misses))


def test_a_docstring_naming_what_is_not_there_is_caught() -> None:
    defined, module = defined_names(), "lldsched.sim.simulation"
    right = ":meth:`Simulation._advance`, ``eventloop.SimulationEventLoop._advance``"
    assert docstring_misses(module, right, defined) == []
    wrong = (
        ":meth:`Simulation._run_timer`, ``eventloop.SimulationEventLoop._advanced``,"
        " ``lldsched.sim.eventloop.SimulationEventLoop._advanced``"
    )
    assert sorted(docstring_misses(module, wrong, defined)) == [
        "Simulation._run_timer",  # a name the package defines (TimerThread's), not there
        "eventloop.SimulationEventLoop._advanced",
        "lldsched.sim.eventloop.SimulationEventLoop._advanced",
    ]


def test_every_cross_reference_in_the_packages_docstrings_exists() -> None:
    """And every reference of the package's a docstring writes as a literal
    (``module.Class.attribute``): each part of it is there."""
    defined = defined_names()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(package_tree(path)):
            if not isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            ):
                continue
            line = getattr(node, "lineno", 1)
            for name in docstring_misses(module, ast.get_docstring(node) or "", defined):
                missing.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not missing, stale(missing)


# --- what a message cites: an address, which a user of the wheel can open ---------------

# An address of the repository (lldsched.errors.REPOSITORY) as of its main branch: a page
# (``blob``), a folder (``tree``) or a file's bytes (``raw``, and raw.githubusercontent's
# form, which an image on a package index is read by); its path and its anchor (a
# sentence's full stop, comma or closing quote after either is not theirs).
ADDRESS = re.compile(
    rf"(?:{re.escape(REPOSITORY)}/(?:blob|tree|raw)/main"
    rf"|{re.escape(REPOSITORY.replace('//github.com/', '//raw.githubusercontent.com/'))}/main)"
    r"/([^\s#)\"'<>`,]*[^\s#)\"'<>`,.])(?:#([^\s)\"'<>`,]*[^\s)\"'<>`,.]))?"
)
# A document named by its path in the repository (``docs/CLUSTER.md``, ``CRON.md``,
# ``README.md``, ``docs/decisions/persistence.md``), not by an address: what a user of
# the wheel has no file for.
BY_PATH = re.compile(r"(?<![\w/.-])(?:docs/)?(?:[A-Z]+|decisions/[a-z][a-z0-9-]*)\.md\b")


def unresolved_address(url: str, root: Path = ROOT) -> str | None:
    """Why ``url`` does not resolve: not an address of the repository, a path that is no
    file or folder of ``root``, or an anchor that is no heading of its Markdown file;
    None when it resolves."""
    match = ADDRESS.fullmatch(url)
    if match is None:
        return f"not an address in {REPOSITORY}/.../main: {url}"
    path, anchor = match.group(1), match.group(2)
    target = root / path
    if not target.exists():
        return f"no {path} in the repository: {url}"
    if (
        anchor
        and target.suffix in LINKED_ANCHORS
        and anchor not in LINKED_ANCHORS[target.suffix](target)
    ):
        return f"no heading #{anchor} in {path}: {url}"
    return None


def cited_by_messages(tree: ast.AST) -> Iterator[tuple[int, ast.expr]]:
    """Each argument of a ``doc_url(...)`` call in a module's code, where it is written."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == doc_url.__name__:
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                yield node.lineno, argument


def message_strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """The strings of a module's code, where each is written: every string constant
    (an f-string's literal parts, joined lines as one) but a docstring or a bare string
    statement, which no message carries, and the path given to ``doc_url``."""
    left_out = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    left_out |= {id(argument) for _, argument in cited_by_messages(tree)}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in left_out
        ):
            yield node.lineno, node.value


def uncitable(source: str | ast.Module, where: str, root: Path = ROOT) -> list[str]:
    """What a module's messages cite that a user of the wheel cannot open, in the order
    of the module's lines: a document by its path in the repository, an address that
    does not resolve, a ``doc_url`` of something other than a literal path (which this
    check could not read).  ``source``: the module's text, or its parsed tree."""
    tree = source if isinstance(source, ast.Module) else ast.parse(source)
    found = [
        (line, f"{match.group(0)} by its path, not doc_url  | {text[:120]!r}")
        for line, text in message_strings(tree)
        for match in BY_PATH.finditer(text)
    ]
    for line, argument in cited_by_messages(tree):
        if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
            found.append((line, f"doc_url({ast.unparse(argument)}): not a literal path"))
        elif (why := unresolved_address(doc_url(argument.value), root)) is not None:
            found.append((line, why))
    return [f"{where}:{line}: {problem}" for line, problem in sorted(found)]


def test_every_document_a_message_cites_is_given_by_an_address_that_resolves() -> None:
    """The wheel holds the package alone: an exception, a warning or a log line that
    says ``docs/OPERATIONS.md`` names a file its reader does not have. Each cites the
    document by its address (``doc_url``), whose path is a file of the repository and
    whose anchor a heading of it; tests/test_packaging.py reads them where the wheel is
    installed."""
    found = [
        problem
        for path in sorted(PACKAGE.rglob("*.py"))
        for problem in uncitable(package_tree(path), str(path.relative_to(ROOT)))
    ]
    assert not found, stale(found)
    cited = [
        argument
        for path in PACKAGE.rglob("*.py")
        for argument in cited_by_messages(package_tree(path))
    ]
    assert len(cited) >= 15  # the scan found them


def test_every_address_in_the_repository_written_anywhere_resolves() -> None:
    """An address of the repository written out (the package's docstring, a message the
    documents show, the README's own) is checked as a message's is: a path there, a
    heading of it."""
    found = []
    for path in [*DOCUMENTS, *sorted(PACKAGE.rglob("*.py")), ROOT / "pyproject.toml"]:
        text = path.read_text()
        for match in ADDRESS.finditer(text):
            why = unresolved_address(match.group(0))
            if why is not None:
                line = text[: match.start()].count("\n") + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {why}")
    assert not found, stale(found)


def test_a_message_that_cites_a_document_it_cannot_reach_is_caught() -> None:
    source = """
\"\"\"A docstring may say docs/CLUSTER.md: it is read beside the source.\"\"\"
from lldsched.errors import doc_url
CONSTANT = "see docs/CLUSTER.md"
def f(page):
    \"\"\"docs/GUIDE.md\"\"\"
    "a bare string, docs/GUIDE.md"
    print(f"open one shared (leases: {doc_url('docs/CLUSTER.md#limits')})")
    print(f"{doc_url('docs/OPERATIONS.md#in-a-web-aplication')}")
    print("README.md, 'Set-up'", f"and {page} in CRON.md")
    print(doc_url("docs/GONE.md"), doc_url(page))
    print("docs/decisions/persistence.md, 'Refuse, never repair'")
"""
    found = uncitable(source, "x.py")
    assert uncitable(ast.parse(source), "x.py") == found  # its tree, as the package's are read
    assert [problem.split("  |")[0] for problem in found] == [
        "x.py:4: docs/CLUSTER.md by its path, not doc_url",
        f"x.py:9: no heading #in-a-web-aplication in docs/OPERATIONS.md: "
        f"{REPOSITORY}/blob/main/docs/OPERATIONS.md#in-a-web-aplication",
        "x.py:10: CRON.md by its path, not doc_url",
        "x.py:10: README.md by its path, not doc_url",
        "x.py:11: doc_url(page): not a literal path",
        f"x.py:11: no docs/GONE.md in the repository: {REPOSITORY}/blob/main/docs/GONE.md",
        "x.py:12: docs/decisions/persistence.md by its path, not doc_url",
    ]


def test_an_address_resolves_to_a_file_of_the_repository_and_a_heading_of_it() -> None:
    raw = REPOSITORY.replace("//github.com/", "//raw.githubusercontent.com/")
    assert (
        unresolved_address(
            f"{REPOSITORY}/blob/main/docs/GUIDE.md#durability-tasks-that-survive-a-restart"
        )
        is None
    )
    assert unresolved_address(f"{REPOSITORY}/tree/main/notebooks") is None
    assert unresolved_address(f"{raw}/main/docs/img/gantt.png") is None
    assert unresolved_address(f"{REPOSITORY}/blob/main/README.md#before-you-trust-it") is None
    assert unresolved_address(f"{REPOSITORY}/blob/main/README.md#before-you-trust") is not None
    assert unresolved_address(f"{REPOSITORY}/blob/main/docs/NOTHERE.md") is not None
    assert unresolved_address(f"{REPOSITORY}/blob/v0.1.0/README.md") is not None  # not main
    assert unresolved_address("https://example.com/README.md") is not None
    said = f"(`{REPOSITORY}/blob/main/docs/GUIDE.md`, {REPOSITORY}/blob/main/docs/CRON.md#x.)"
    assert [found.groups() for found in ADDRESS.finditer(said)] == [
        ("docs/GUIDE.md", None),
        ("docs/CRON.md", "x"),
    ]

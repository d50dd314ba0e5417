"""What the documents name exists: a rename or a removal fails here, naming the doc line.

README.md and docs/*.md (PERFORMANCE.md included: its measurements are dated, the
names and commands it gives are not):

* every repository path they mention (``lldsched/...``, ``tests/...``, ``.ci/...``,
  ``benchmarks/...``, ``docs/...``, ...) exists, a ``*`` in it matching something,
  and a file named alone in backticks (``machine.py``) is a file of the repository;
* every dotted name ``lldsched.x.y`` imports, down to its last attribute, and every
  ``Class.attribute`` or ``module.name`` written in backticks (``SchedulerCore._after``,
  ``registration.validated``, ``threaded/pool.MAX_WORKERS``) names one that exists;
* every ``lldsched/x/y.py:Name.attribute`` in backticks (docs/ARCHITECTURE.md's walk
  through one run) names what that file defines;
* every ``make X`` is a target of the Makefile;
* every ``python -m lldsched ...`` command names a subcommand and options it has, and
  one in a shell block parses in full (with the CLI's own parser, nothing is run);
* every ``benchmarks/X.py ARGS`` command gives arguments the script takes (its
  argparse parser, or the modes of its ``SIZES``; nothing is run);
* every relative link resolves, down to its ``#anchor``;
* a section cited as ``docs/X.md, "Section"``, ``[X.md](X.md), "Section"`` or
  ``README, "Section"`` (in double or single quotes; here, in the package's source, the
  tests, the tools or the notebooks' sources) is a heading or a bold bullet of that
  document, and a test cited as ``tests/test_x.py::name`` is a function or class of
  that file;
* each row of docs/CRON.md's table of rejected expressions raises the message it
  shows (``(...)`` and a trailing ``...`` stand for the rest).

And the package's docstrings: every Sphinx cross-reference (``:class:`...```,
``:func:`...```, ...) names something that exists.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import importlib
import importlib.util
import inspect
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lldsched.logs import LOGGERS

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGE = ROOT / "lldsched"


def lines() -> Iterator[tuple[str, str, bool]]:
    """Each line of the documents: where (``README.md:12``), its text, and whether it
    is inside a fenced code block."""
    for path in DOCUMENTS:
        fenced = False
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            yield f"{path.relative_to(ROOT)}:{number}", line, fenced


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
    }
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
def source_of(cls: type) -> str:
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):
        return ""


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


MEMBER = re.compile(r"(?<![\w./-])((?:[a-z_]+/)*[A-Za-z_]\w*)\.(\w+)\b")
SUFFIXES = {"py", "pyi", "ipynb", "md", "json", "png", "toml", "cfg", "txt", "db", "lock", "sh"}


def test_every_class_attribute_and_module_name_in_backticks_exists() -> None:
    modules = package_modules()
    classes = {
        name: set().union(*(members(cls) for cls in found))
        for name, found in package_classes(modules).items()
    }
    any_class = set().union(*classes.values())
    missing = []
    for where, line, fenced in lines():
        if fenced:
            continue  # code blocks run (tests/test_docs.py)
        for span in re.findall(r"`([^`]+)`", line):
            for owner, attribute in MEMBER.findall(span):
                if attribute in SUFFIXES:
                    continue  # a file name
                if owner in classes:
                    exists = attribute in classes[owner]
                elif owner in modules:
                    exists = any(defines(module, attribute) for module in modules[owner])
                    # ``scheduler.pause``: a variable named like a module, whose class
                    # has the attribute.
                    exists |= "/" not in owner and owner.islower() and attribute in any_class
                else:
                    continue  # not the package's: ``asyncio.Task``, ``logging.handlers``
                if not exists:
                    missing.append(f"{where}: {owner}.{attribute}  | {line.strip()}")
    assert not missing, stale(missing)


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


def test_every_make_target_the_documents_mention_is_in_the_makefile() -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), flags=re.M))
    missing = [
        f"{where}: make {target}  | {line.strip()}"
        for where, line, fenced in lines()
        for target in re.findall(r"`make ([\w-]+)" if not fenced else r"^make ([\w-]+)", line)
        if target not in targets
    ]
    assert not missing, stale(missing)


# --- the command line ----------------------------------------------------------------

CLI = re.compile(r"python -m lldsched ([^`#\n]*)")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    from lldsched.cli import build_parser

    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def cli_commands() -> list[tuple[str, str, list[str], bool]]:
    found = []
    for where, line, fenced in lines():
        for match in (m for span in commands_of(line, fenced) for m in CLI.finditer(span)):
            found.append((where, line.strip(), shlex.split(match.group(1)), fenced))
    return found


def test_the_documents_give_commands_of_the_command_line() -> None:
    assert sum(fenced for *_, fenced in cli_commands()) >= 4


def test_every_command_line_command_the_documents_give_parses() -> None:
    from lldsched.cli import build_parser

    commands = subcommands()
    wrong = []
    for where, line, words, fenced in cli_commands():
        if not words or words[0] not in commands:
            wrong.append(f"{where}: no such command {words[:1]}  | {line}")
            continue
        unknown = [
            w
            for w in words
            if w.startswith("-") and w.split("=")[0] not in options_of(commands[words[0]])
        ]
        if unknown:
            wrong.append(f"{where}: {words[0]} has no option {unknown}  | {line}")
        elif fenced:  # a command to copy: it must parse in full
            try:
                build_parser().parse_args(words)
            except SystemExit:
                wrong.append(f"{where}: does not parse  | {line}")
    assert not wrong, stale(wrong)


# --- benchmark commands --------------------------------------------------------------

BENCH = re.compile(r"(?<![\w/])benchmarks/(\w+)\.py((?:[ ]+[\w.-]+)*)")


class Parsed(Exception):
    """Raised by ``parse_args`` in place of running the script that called it."""


def script(name: str) -> ModuleType:
    path = ROOT / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_doc_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def bench_commands() -> list[tuple[str, str, str, list[str]]]:
    found = []
    for where, line, fenced in lines():
        for match in (m for span in commands_of(line, fenced) for m in BENCH.finditer(span)):
            words = match.group(2).split()
            if words:
                found.append((where, line.strip(), match.group(1), words))
    return found


def test_the_documents_give_benchmark_commands_with_arguments() -> None:
    assert len(bench_commands()) >= 10


def test_every_benchmark_command_the_documents_give_takes_its_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = argparse.ArgumentParser.parse_args

    def parse_only(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise Parsed(real(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
    modules: dict[str, ModuleType] = {}
    wrong = []
    for where, line, name, words in bench_commands():
        if not (ROOT / "benchmarks" / f"{name}.py").is_file():
            continue  # test_every_path_the_documents_mention_exists says so
        module = modules.get(name) or modules.setdefault(name, script(name))
        sizes = getattr(module, "SIZES", None)
        if isinstance(sizes, dict):  # the instruction counters: modes by name
            bad = [w for w in words if w not in sizes]
        elif "argparse" in vars(module):
            try:
                module.main(words)
                bad = ["(it ran without parsing)"]
            except Parsed:
                bad = []
            except SystemExit:
                bad = words
            except TypeError:  # a main() that takes no argv
                bad = [*words, "(its main() takes no arguments)"]
        else:  # a script that reads sys.argv itself: the flags its source tests
            source = (ROOT / "benchmarks" / f"{name}.py").read_text()
            bad = [w for w in words if not w.isdigit() and f'"{w}"' not in source]
        if bad:
            wrong.append(f"{where}: benchmarks/{name}.py does not take {bad}  | {line}")
        if name == "run_all":  # each name selects a benchmark
            empty = [w for w in words if not w.startswith("-") and not module.discover([w])]
            if empty:
                wrong.append(f"{where}: run_all.py: no benchmark named {empty}  | {line}")
    assert not wrong, stale(wrong)


# --- links and cited sections --------------------------------------------------------


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    found = set()
    for heading in re.findall(r"^#+ (.*)$", path.read_text(), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_every_relative_link_resolves() -> None:
    broken = []
    for where, line, _ in lines():
        document = ROOT / where.split(":")[0]
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", line):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            linked = (document.parent / target) if target else document
            if not linked.exists():
                broken.append(f"{where}: {target}  | {line.strip()}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{where}: {target}#{anchor}  | {line.strip()}")
    assert not broken, stale(broken)


# ``docs/X.md, "Section"``, ``[X.md](X.md), "Section"``, ``X.md ("Section")``, and the
# README's ``README, "Section"``, ``README "Section"``, ``README.md ("Section")``; the
# section in double quotes, or in single quotes (a message inside a double-quoted string).
CITED = re.compile(
    r"\b(README(?:\.md)?|[A-Z]+\.md)(?:\)?, | \(| )(?:\"([^\"]{1,120})\"|'([^']{1,120})')"
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


def sections(path: Path) -> set[str]:
    """The headings, the bold bullet heads and the bold heads of paragraphs of a
    document."""
    text = path.read_text()
    return {
        *re.findall(r"^#+ (.*?)\s*$", text, flags=re.M),
        *re.findall(r"^\s*(?:[-*] )?\*\*(.*?)\*\*", text, flags=re.M),
    }


def uncited(text: str) -> list[tuple[str, str]]:
    """The (document, section) pairs ``text`` cites that are no heading or bold bullet of
    that document. A citation may break across a docstring's or a comment's lines."""
    joined = re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)
    missing = []
    for name, double, single in CITED.findall(joined):
        section = double or single
        document = ROOT / "README.md" if name.startswith("README") else ROOT / "docs" / name
        if not document.is_file():
            continue  # a file name in a docstring's example (``X.md, "Section"``)
        if not any(head.startswith(section) for head in sections(document)):
            missing.append((str(document.relative_to(ROOT)), section))
    return missing


def test_every_section_cited_by_name_is_there() -> None:
    missing = []
    for path in CITING:
        text = path.read_text()
        for document, section in uncited(text):
            line = text[: text.find(section.split()[0])].count("\n") + 1
            missing.append(f"{path.relative_to(ROOT)}:{line}: {document}, {section!r}")
    assert not missing, stale(missing)


def test_a_section_cited_that_is_not_there_is_caught() -> None:
    assert uncited('(README, "Nowhere to be found")') == [("README.md", "Nowhere to be found")]
    assert uncited("docs/OPERATIONS.md, 'Nowhere to be found'") == [
        ("docs/OPERATIONS.md", "Nowhere to be found")
    ]
    assert uncited('README.md ("Nowhere to be\nfound")') == [("README.md", "Nowhere to be found")]
    assert uncited('docs/GUIDE.md, "Durability"; [CRON.md](CRON.md), "Time zones"') == []


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


def defined_names() -> set[str]:
    """Every name the package defines: classes, functions, module globals, class
    attributes and the attributes its methods set on ``self``."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
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


def test_every_cross_reference_in_the_packages_docstrings_exists() -> None:
    defined = defined_names()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            ):
                continue
            docstring = ast.get_docstring(node) or ""
            for name in ROLE.findall(docstring):
                if not found_from(module, name, defined):
                    line = getattr(node, "lineno", 1)
                    missing.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not missing, stale(missing)

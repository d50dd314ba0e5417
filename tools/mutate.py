"""A small mutation tester: does a module's test subset fail when its code is changed?

Each mutant is the module with one change made through its syntax tree: a comparison
flipped (``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``is`` and ``is not``,
``in`` and ``not in``), ``+`` and ``-`` swapped, ``and`` and ``or`` swapped, a ``not``
dropped, an integer constant moved by one, ``True`` and ``False`` swapped, a statement
dropped (replaced by ``pass``), a returned value replaced by ``None``. The mutant is
written into a throw-away copy of the repository and the given test files run there with
``pytest -x -q``; a mutant they pass meets the ``--also`` files too, a wider net. A
mutant the tests pass is a *survivor*: a gap in the tests, or a change that does not
change behaviour (an equivalent mutant).

A mutant whose tests outlast its budget is stopped (pytest and every process it
started) and counted killed, as ``timeout``: the tests noticed, they hung (a loop that no
longer ends, a wait that is never woken). The budget is ``FACTOR`` times the unmutated
run's time, at least ``FLOOR`` seconds (``--timeout`` sets it); the unmutated run is
timed once at the start, and the ``--also`` files with it if given.

    python tools/mutate.py lldsched/policies.py tests/test_retry.py tests/test_given_up.py
    python tools/mutate.py lldsched/core/machine.py tests/test_core.py --sample 60 --seed 1
    python tools/mutate.py lldsched/schedules/simple.py tests/test_schedules.py --lines 40-120
    python tools/mutate.py lldsched/policies.py tests/test_retry.py --only 12,40 \
        --also tests/test_misfire.py

Docstrings, ``__all__``, ``if TYPE_CHECKING:`` blocks and ``raise`` statements are left alone. The
repository is only read; the copy (the checkout without its hidden folders) lives in
a temporary folder. Exit status 0 whatever the score: the survivors are for a person to judge.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
FLIPS: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Add: ast.Sub, ast.Sub: ast.Add,
    ast.And: ast.Or, ast.Or: ast.And,
}  # fmt: skip
DROPPABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)
FACTOR = 5.0  # a mutant's budget: this many times the unmutated run's time...
FLOOR = 10.0  # ...and at least this many seconds (a loaded machine is slower at times)
UNMUTATED_TIMEOUT = 600.0  # seconds the unmutated run may take


@dataclass(frozen=True)
class Mutant:
    index: int  # its number among the module's mutants (--only picks by it)
    line: int
    what: str


def _skipped(tree: ast.Module) -> set[int]:
    """ids of nodes not to mutate: docstrings, ``__all__``, TYPE_CHECKING blocks, raises."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node))  # a docstring (of a module, class, function or attribute)
        if isinstance(node, ast.Assign) and "__all__" in ast.unparse(node.targets[0]):
            skip.update(id(inner) for inner in ast.walk(node))
        guarded = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        if guarded or isinstance(node, ast.Raise):
            skip.update(id(inner) for inner in ast.walk(node))
    return skip


def _changes(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every mutated copy of ``node`` alone, with a description."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in FLIPS:
        compare = copy.copy(node)
        compare.ops = [FLIPS[type(node.ops[0])]()]
        yield f"{type(node.ops[0]).__name__} -> {type(compare.ops[0]).__name__}", compare
    elif isinstance(node, (ast.BinOp, ast.AugAssign, ast.BoolOp)) and type(node.op) in FLIPS:
        operation = copy.copy(node)
        operation.op = FLIPS[type(node.op)]()
        yield f"{type(node.op).__name__} -> {type(operation.op).__name__}", operation
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not", node.operand
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"{node.value} -> {not node.value}", ast.Constant(value=not node.value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        number = node.value
        yield f"{number} -> {number + 1}", ast.Constant(value=number + 1)
        yield f"{number} -> {number - 1}", ast.Constant(value=number - 1)
    returns_none = isinstance(node, ast.Return) and (
        node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None)
    )
    if isinstance(node, ast.Return) and not returns_none:
        yield "return None", ast.Return(value=None)
    if isinstance(node, DROPPABLE) and not isinstance(node, ast.Return):
        yield "drop statement", ast.Pass()


def mutants(source: str) -> list[tuple[Mutant, str]]:
    """Every mutant of ``source`` with its full mutated source."""
    tree = ast.parse(source)
    skip = _skipped(tree)
    found: list[tuple[Mutant, str]] = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skip or isinstance(node, ast.JoinedStr):
            continue
        for choice, (what, _) in enumerate(_changes(node)):
            mutated = copy.deepcopy(tree)  # the same walk order: find the node's copy
            target = list(ast.walk(mutated))[index]
            _replace(mutated, old=target, new=list(_changes(target))[choice][1])
            text = ast.unparse(ast.fix_missing_locations(mutated))
            found.append((Mutant(len(found), getattr(node, "lineno", 0), what), text))
    return found


def _replace(tree: ast.AST, *, old: ast.AST, new: ast.AST) -> None:
    """Puts ``new`` where ``old`` is in ``tree``."""
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(item is old for item in value):
                value[[item is old for item in value].index(True)] = new
                return


def run_tests(
    copy_root: Path,
    tests: list[str],
    timeout: float,
    *,
    output: int | IO[bytes] = subprocess.DEVNULL,
) -> str:
    """'killed', 'survived' or 'timeout' for the copy as it is now; pytest writes to
    ``output`` (nowhere by default)."""
    command = [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider",
               "-p", "no:nbval", "-o", "addopts=", "-o", f"timeout={timeout}"]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(copy_root), PYTHONDONTWRITEBYTECODE="1")
    status = run_to_end(command, cwd=copy_root, env=env, timeout=timeout, output=output)
    if status is None:
        return "timeout"  # counted as killed: the tests noticed (they hung)
    return "survived" if status == 0 else "killed"


def run_to_end(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    output: int | IO[bytes] = subprocess.DEVNULL,
) -> int | None:
    """``command``'s exit status; None if it outlasted ``timeout`` seconds, and then it
    is stopped, and every process it started with it (a session of its own)."""
    with subprocess.Popen(
        command, cwd=cwd, env=env, stdout=output, stderr=output, start_new_session=True
    ) as process:
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None


def budget(unmutated_seconds: float) -> float:
    """Seconds a mutant's tests may take, from the unmutated run's time."""
    return max(FLOOR, FACTOR * unmutated_seconds)


def timed_budget(copy_root: Path, tests: list[str]) -> float | None:
    """The budget for ``tests`` on the copy as it is (unmutated); None if they fail,
    and then the end of what pytest said is printed."""
    with tempfile.TemporaryFile() as output:
        started = time.monotonic()
        verdict = run_tests(copy_root, tests, UNMUTATED_TIMEOUT, output=output)
        if verdict == "survived":
            return budget(time.monotonic() - started)
        output.seek(0)
        said = output.read().decode(errors="replace").splitlines()[-30:]
    print(f"unmutated, {' '.join(tests)}: {verdict}", *said, sep="\n", file=sys.stderr)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", help="the file to mutate, relative to the repository")
    parser.add_argument("tests", nargs="+", help="test files that should kill its mutants")
    parser.add_argument("--sample", type=int, default=0, help="run N mutants at random")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lines", default="", help="only mutants on lines FIRST-LAST")
    parser.add_argument(
        "--timeout", type=float, default=0.0, help="seconds per mutant (default: timed)"
    )
    parser.add_argument("--only", default="", help="only the mutants numbered N,M,... (#N)")
    parser.add_argument(
        "--also", action="append", default=[], help="a test file a survivor meets too"
    )
    args = parser.parse_args(argv)

    source = (ROOT / args.module).read_text(encoding="utf-8")
    todo = mutants(source)
    if args.only:
        wanted = {int(number) for number in args.only.split(",")}
        todo = [(m, text) for m, text in todo if m.index in wanted]
    if args.lines:
        first, last = (int(part) for part in args.lines.split("-"))
        todo = [(m, text) for m, text in todo if first <= m.line <= last]
    if args.sample and args.sample < len(todo):
        todo = sorted(random.Random(args.seed).sample(todo, args.sample), key=lambda t: t[0].line)
    with tempfile.TemporaryDirectory(prefix="mutate-") as folder:
        copy_root = Path(folder)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        # The whole checkout but its hidden folders (.git, .venv, caches): tests read
        # docs/, notebooks/src/, README.md and benchmarks/ as well as the package.
        for part in ROOT.iterdir():
            if part.is_dir() and part.name.startswith("."):
                continue
            if part.is_dir():
                shutil.copytree(part, copy_root / part.name, ignore=ignore, symlinks=True)
            else:
                shutil.copy(part, copy_root / part.name)
        target = copy_root / args.module
        tests, wider = args.tests, args.tests + args.also
        limit = timed_budget(copy_root, tests)
        wider_limit = timed_budget(copy_root, wider) if args.also else limit
        if limit is None or wider_limit is None:
            print("the tests fail on the unmutated code: nothing to measure", file=sys.stderr)
            return 2
        if args.timeout:
            limit = wider_limit = args.timeout
        wider_note = f", {wider_limit:.0f} s with --also" if args.also else ""
        print(f"a mutant's tests may take {limit:.0f} s{wider_note}", flush=True)
        killed = timeouts = 0
        for number, (mutant, text) in enumerate(todo, start=1):
            target.write_text(text, encoding="utf-8")
            started = time.monotonic()
            verdict = run_tests(copy_root, tests, limit)
            if verdict == "survived" and args.also:  # a wider net, for the survivors only
                verdict = run_tests(copy_root, wider, wider_limit)
            killed += verdict != "survived"
            timeouts += verdict == "timeout"
            seconds = time.monotonic() - started
            print(f"[{number}/{len(todo)}] #{mutant.index} {args.module}:{mutant.line} "
                  f"{mutant.what}: "
                  f"{verdict} ({seconds:.1f} s)", flush=True)  # fmt: skip
        target.write_text(source, encoding="utf-8")
    total = len(todo)
    score = 100.0 * killed / total if total else 100.0
    print(f"{args.module}: {killed}/{total} killed ({score:.0f} %), {timeouts} by timeout")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The lines the package logs, read from its source (its syntax tree; nothing is run):
each one's call site, logger, level and words (:func:`logged_lines`), for
tests/test_log_rows.py, which holds docs/OPERATIONS.md, "Logging" to them.

The call sites:

* ``log.warning``, ``log.error``, ``log.exception``, ``log.critical``, ``log.info``,
  ``log.debug``, and ``log.log`` at the levels its argument may be (``logging.DEBUG if
  quiet else logging.WARNING`` may be WARNING), where ``log`` is
  ``logging.getLogger(NAME)`` of a name from ``lldsched/logs.py``; and
  ``say_with_traceback(log, level, message, ...)``;
* the message is followed to its words: a string, an f-string, a concatenation, a
  choice (``a if x else b``), a name assigned in its function (before the call, if it
  is assigned there) or its module (or imported from another module of the package),
  a call of a function of the package (what it returns: ``"%s"`` of
  ``LeaseLost.settle_refused``); a ``+=`` to it is a varying tail (a count of
  repeats).  A parameter of a helper that wraps the call (``_say_outage(message,
  ...)``) is followed to the calls of that helper, each its own call site; a message
  taken from a queue, to the function that makes the queue's entries (:data:`QUEUED`).
  What cannot be followed is a varying part, so a line whose words cannot be read at
  all has no fixed piece (:meth:`Line.pieces`), which its check says.
"""

from __future__ import annotations

import ast
import itertools
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lldsched import logs

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "lldsched"

HOLE = None
"""A piece of a line's template that is not fixed: a ``%s``, an f-string's ``{...}``."""

Template = tuple[str | None, ...]

QUEUED = {("lldsched/threaded/failurelog.py", "_say_failures"): "failure_line"}
"""A call site whose level and message come out of a queue, and the function of the same
file whose returned tuples ``(level, message, ...)`` are the queue's entries."""

LEVELS = {
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
}
"""The methods of a logger that say a line at WARNING or above, and their levels."""

UNKNOWN_LEVEL = logging.CRITICAL
"""The level of a call whose level cannot be read: counted, as it may be WARNING+."""

PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[diouxXeEfFgGcrsa]")


class Unread(Exception):
    """A call site this reading cannot follow: a helper that wraps a logging call and is
    never called, a line said to a logger it cannot name, a queue's source not found."""


@dataclass(frozen=True)
class Line:
    """One line the package logs: where its words are given, its logger and level."""

    where: str  # "lldsched/x.py:123"
    logger: str
    level: int
    template: Template

    def opening(self) -> str:
        """The line as an operator sees it, its varying parts as ``…``."""
        text = " ".join("".join("…" if piece is HOLE else piece for piece in self.template).split())
        return text if len(text) <= 72 else text[:71] + "…"

    def pieces(self) -> list[str]:
        """Its fixed pieces, between its holes, normalized (punctuation at their ends
        dropped)."""
        pieces = [normal(piece).strip(EDGES) for piece in _joined(self.template)]
        return [piece for piece in pieces if piece]


EDGES = " ;:,.()'\""
"""What a fixed piece of a line, or a part of a quote, is stripped of at its ends."""


def normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _joined(template: Template) -> list[str]:
    """The fixed pieces of ``template`` between its holes."""
    pieces: list[str] = []
    for hole, run in itertools.groupby(template, key=lambda piece: piece is HOLE):
        if not hole:
            pieces.append("".join(piece for piece in run if piece is not None))
    return pieces


def of_format(text: str) -> Template:
    """A ``%``-format string as fixed pieces and holes (``%%`` is a fixed ``%``)."""
    pieces: list[str | None] = []
    for part in text.split("%%"):
        if pieces:
            pieces.append("%")
        last = 0
        for match in PLACEHOLDER.finditer(part):
            pieces += [part[last : match.start()], HOLE]
            last = match.end()
        pieces.append(part[last:])
    return tuple(pieces)


@dataclass
class Module:
    """One source file of the package, read once."""

    path: str  # relative to the repository: "lldsched/core/store/outage.py"
    dotted: str
    tree: ast.Module
    parents: dict[ast.AST, ast.AST]

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return None


Function = ast.FunctionDef | ast.AsyncFunctionDef


class Package:
    """The package's modules, and what follows a message and a logger through them."""

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}
        for path in sorted(PACKAGE.rglob("*.py")):
            relative = path.relative_to(ROOT)
            dotted = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(relative))
            parents = {
                child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
            }
            self.modules[dotted] = Module(relative.as_posix(), dotted, tree, parents)
        self.functions: dict[str, list[tuple[Module, Function]]] = {}
        for module in self.modules.values():
            for node in ast.walk(module.tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.functions.setdefault(node.name, []).append((module, node))

    # -- names --------------------------------------------------------------------

    def assigned(
        self, module: Module, scope: Function | None, name: str, use: int | None = None
    ) -> list[ast.expr]:
        """What ``name`` is assigned in ``scope`` (its function: those before line
        ``use``, if any are), else in its module (or the module of the package it is
        imported from); ``+=`` keeps the first value."""
        if scope is not None:
            values = list(_assignments(scope, name, nested=True))
            before = [value for value in values if use is not None and value.lineno <= use]
            if values:
                return before or values  # one made after the use is another line's
        values = list(_assignments(module.tree, name, nested=False))
        if values:
            return values
        for node in module.tree.body:
            if isinstance(node, ast.ImportFrom) and node.module in self.modules:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        source = self.modules[node.module]
                        return self.assigned(source, None, alias.name)
        return []

    def logger(self, module: Module, scope: Function | None, expr: ast.expr) -> str | None:
        """The name of the logger ``expr`` is, if it is one of lldsched's."""
        if isinstance(expr, ast.Name):
            for value in self.assigned(module, scope, expr.id):
                found = self.logger(module, scope, value)
                if found:
                    return found
            return None
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "getLogger"
            and len(expr.args) == 1
        ):
            for template in self.texts(module, scope, expr.args[0]):
                name = "".join(piece or "" for piece in template)
                if name in logs.LOGGERS:
                    return name
        return None

    def levels(self, module: Module, scope: Function | None, expr: ast.expr) -> set[int]:
        """The levels ``expr`` may be (:data:`UNKNOWN_LEVEL` where it cannot be read)."""
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == "logging"
            and isinstance(getattr(logging, expr.attr, None), int)
        ):
            return {getattr(logging, expr.attr)}
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
            return {expr.value}
        if isinstance(expr, ast.IfExp):
            return self.levels(module, scope, expr.body) | self.levels(module, scope, expr.orelse)
        if isinstance(expr, ast.Name):
            values = self.assigned(module, scope, expr.id)
            if values:
                return set().union(*(self.levels(module, scope, value) for value in values))
        return {UNKNOWN_LEVEL}

    # -- words --------------------------------------------------------------------

    def texts(
        self, module: Module, scope: Function | None, expr: ast.expr, depth: int = 0
    ) -> list[Template]:
        """The templates ``expr`` may be; :class:`Parameter` for a parameter of
        ``scope`` (a helper's), to be followed to its calls."""
        if depth > 8:
            return [(HOLE,)]
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return [(expr.value,)]
        if isinstance(expr, ast.JoinedStr):
            pieces: list[str | None] = []
            for value in expr.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    pieces.append(value.value)
                else:
                    pieces.append(HOLE)
            return [tuple(pieces)]
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            lefts = self.texts(module, scope, expr.left, depth + 1)
            rights = self.texts(module, scope, expr.right, depth + 1)
            return [left + right for left in lefts for right in rights]
        if isinstance(expr, ast.IfExp):
            return self.texts(module, scope, expr.body, depth + 1) + self.texts(
                module, scope, expr.orelse, depth + 1
            )
        if isinstance(expr, ast.Name):
            values = self.assigned(module, scope, expr.id, use=expr.lineno)
            if values:
                # a ``+=`` (an optional tail: a count of repeats) is a hole after them
                tail: Template = (HOLE,) if _extended(scope, expr.id) else ()
                return [
                    t + tail
                    for value in values
                    for t in self.texts(module, scope, value, depth + 1)
                ]
            if scope is not None and expr.id in _parameters(scope):
                raise Parameter(module, scope, expr.id)
            return [(HOLE,)]
        if isinstance(expr, ast.Call):
            name = _called(expr)
            found = [] if name is None else self.functions.get(name, [])
            if len(found) == 1:
                source, function = found[0]
                returned = [
                    node.value
                    for node in ast.walk(function)
                    if isinstance(node, ast.Return) and node.value is not None
                ]
                try:
                    return [
                        t
                        for value in returned
                        for t in self.texts(source, function, value, depth + 1)
                    ] or [(HOLE,)]
                except Parameter:
                    return [(HOLE,)]
        return [(HOLE,)]

    def messages(
        self, module: Module, scope: Function | None, message: ast.expr, args: list[ast.expr]
    ) -> Iterator[tuple[Module, ast.AST, Template]]:
        """Each template of a call's ``message`` (its ``%`` placeholders made holes; a
        message that is all holes, ``"%s"``, read from its first argument), with where
        its words are given: the call, or the call of the helper it wraps."""
        try:
            found = [(module, message, t) for t in self.texts(module, scope, message)]
        except Parameter as parameter:
            yield from self._through(parameter, args)
            return
        for where_module, node, template in found:
            formatted: Template = tuple(
                piece
                for part in template
                for piece in ((HOLE,) if part is HOLE else of_format(part))
            )
            if not any(formatted) and args:
                formatted = tuple(
                    piece for t in self.texts(module, scope, args[0]) for piece in (*t, HOLE)
                )
            yield where_module, node, formatted

    def _through(
        self, parameter: Parameter, args: list[ast.expr]
    ) -> Iterator[tuple[Module, ast.AST, Template]]:
        """A helper's message parameter, followed to every call of the helper."""
        function = parameter.function
        names = _parameters(function)
        index = names.index(parameter.name)
        method = bool(names) and names[0] in {"self", "cls"}
        calls = [
            (module, node)
            for module in self.modules.values()
            for node in ast.walk(module.tree)
            if isinstance(node, ast.Call) and _called(node) == function.name
        ]
        if not calls:
            raise Unread(f"{parameter.module.path}: {function.name}() is never called")
        for module, call in calls:
            position = index - 1 if method and isinstance(call.func, ast.Attribute) else index
            given = [k.value for k in call.keywords if k.arg == parameter.name]
            if not given and position < len(call.args):
                given = [call.args[position]]
            scope = module.function_of(call)
            for value in given:
                rest = call.args[position + 1 :]
                for _, _, template in self.messages(module, scope, value, rest or args):
                    yield module, call, template


class Parameter(Exception):
    """A message that is a parameter of the helper it is logged in."""

    def __init__(self, module: Module, function: Function, name: str) -> None:
        super().__init__(name)
        self.module, self.function, self.name = module, function, name


def _parameters(function: Function) -> list[str]:
    arguments = function.args
    return [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]


def _called(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _extended(scope: Function | None, name: str) -> bool:
    """Whether ``scope`` adds to ``name`` (``name += ...``)."""
    return scope is not None and any(
        isinstance(node, ast.AugAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == name
        for node in ast.walk(scope)
    )


def _assignments(body: ast.AST, name: str, *, nested: bool) -> Iterator[ast.expr]:
    """The values assigned to ``name`` in ``body`` (a tuple unpacked item by item)."""
    nodes = ast.walk(body) if nested else iter(getattr(body, "body", []))
    for node in nodes:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id == name:
                yield value
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                for item, given in zip(target.elts, value.elts, strict=False):
                    if isinstance(item, ast.Name) and item.id == name:
                        yield given


def logged_lines(package: Package | None = None) -> list[Line]:
    """Every line the package logs at any level, as far as its source says."""
    package = package or Package()
    lines: list[Line] = []
    for module in package.modules.values():
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Call):
                continue
            scope = module.function_of(node)
            found = _log_call(package, module, scope, node)
            if found is None:
                continue
            logger, levels, message, args = found
            key = (module.path, scope.name if scope else "")
            if key in QUEUED:
                lines += _queued(package, module, logger, QUEUED[key])
                continue
            for where_module, where, template in package.messages(module, scope, message, args):
                line_number = getattr(where, "lineno", node.lineno)
                lines.append(
                    Line(f"{where_module.path}:{line_number}", logger, max(levels), template)
                )
    return list(dict.fromkeys(lines))  # a queue's entries are found from each of its calls


def _log_call(
    package: Package, module: Module, scope: Function | None, node: ast.Call
) -> tuple[str, set[int], ast.expr, list[ast.expr]] | None:
    """``(logger, levels, message, arguments)`` of a logging call, else None."""
    func = node.func
    if not node.args:
        return None  # future.exception(): a question, not a line
    if isinstance(func, ast.Name) and func.id == "say_with_traceback" and len(node.args) >= 4:
        logger = package.logger(module, scope, node.args[0])
        if logger is None:
            raise Unread(f"{module.path}:{node.lineno}: say_with_traceback to an unknown logger")
        levels = package.levels(module, scope, node.args[1])
        third = node.args[3]
        rest = list(third.elts) if isinstance(third, ast.Tuple) else []
        return logger, levels, node.args[2], rest
    if not isinstance(func, ast.Attribute):
        return None
    method = func.attr
    if method not in {*LEVELS, "log", "info", "debug"}:
        return None
    logger = package.logger(module, scope, func.value)
    if logger is None:
        return None
    if method == "log" and len(node.args) >= 2:
        return logger, package.levels(module, scope, node.args[0]), node.args[1], node.args[2:]
    level = LEVELS.get(method, logging.INFO if method == "info" else logging.DEBUG)
    return logger, {level}, node.args[0], node.args[1:]


def _queued(package: Package, module: Module, logger: str, source: str) -> list[Line]:
    """The lines of a queue's entries: each ``(level, message, ...)`` ``source`` returns."""
    found = [f for m, f in package.functions.get(source, []) if m is module]
    if len(found) != 1:
        raise Unread(f"{module.path}: QUEUED names {source}(), which it does not define once")
    (function,) = found
    lines = []
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            level, message = node.value.elts[:2]
            levels = package.levels(module, function, level)
            for template in package.texts(module, function, message):
                formatted = tuple(
                    piece
                    for part in template
                    for piece in ((HOLE,) if part is HOLE else of_format(part))
                )
                lines.append(
                    Line(
                        f"{module.path}:{node.value.elts[1].lineno}", logger, max(levels), formatted
                    )
                )
    return lines

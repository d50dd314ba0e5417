"""Text printed for people: which characters of a task's name would break the line that
shows it (:func:`check_name`, asked by every registration), how a text that holds
them is printed instead (:func:`one_line`), and how a message names a task by its id
and its name (:func:`name_after`).

A task's name is printed in the ``lldsched tasks`` table and ``show``, the control
panel, a chart's labels, and (quoted by ``repr``) in log lines and messages.  The
characters that would let a name write more than itself there are refused in a new name:

* a **control character** (Unicode's ``Cc``: C0 ``\\x00``-``\\x1f``, so ``\\n``, ``\\r``,
  ``\\t`` and the ``\\x1b`` that starts a terminal's escape sequence; DEL; C1
  ``\\x80``-``\\x9f``, ``\\x85`` a line break and ``\\x9b`` an escape sequence's start):
  a newline forges a line of a table or a log, an escape sequence recolours, moves or
  clears an operator's terminal;
* a **line or paragraph separator** (``\\u2028``, ``\\u2029``), a line break to many
  readers;
* a **bidirectional embedding, override or isolate** (``\\u202a``-``\\u202e``,
  ``\\u2066``-``\\u2069``), which reorders how the rest of a line reads;
* a **lone surrogate** (not text: no UTF-8 holds it).

Nothing else is: a no-break space (French writes one before a colon), a zero-width joiner
(an emoji sequence), a zero-width non-joiner (Persian) and the left-to-right and
right-to-left marks are text a name may hold, though ``str.isprintable`` (the rule of an
id) refuses them.  docs/decisions/checking-input.md, "A task's name that would break the
line it is printed on is refused".
"""

from __future__ import annotations

import re

from lldsched.errors import ValidationError, shown

__all__ = ["check_name", "line_breaker", "name_after", "one_line"]

_BREAKS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Every character :func:`check_name` refuses (the module's list); none is printable
(``str.isprintable``), so a printable text is never searched."""


def _kind(char: str) -> str:
    if char <= "\x9f":
        return "a control character"
    if char in "\u2028\u2029":
        return "a line separator"
    if char >= "\ud800":
        return "a lone surrogate"
    return "a bidirectional override"


def line_breaker(text: str) -> str | None:
    """The first character of ``text`` that :func:`check_name` refuses, said with its
    escape (``"a control character ('\\\\n')"``); None when there is none."""
    if text.isprintable():
        return None
    found = _BREAKS.search(text)
    if found is None:
        return None
    char = found.group()
    return f"{_kind(char)} ({char!r})"


def check_name(name: str) -> None:
    """Refuse a new task's ``name`` holding a character that would break the line it is
    printed on (:func:`line_breaker`) with a :class:`ValidationError` quoting the name.

    One ``str.isprintable`` for a name that holds none; a name restored from a store, or
    learnt from another process, is not judged again (an older release took any): it is
    printed through :func:`one_line`."""
    problem = line_breaker(name)
    if problem is not None:
        raise ValidationError(
            f"task name {shown(name)} holds {problem}, which would break the line it is "
            "printed on (a log line, the tasks table, a label): give the name as printable "
            "text; nothing was registered"
        )


def _escape(found: re.Match[str]) -> str:
    return repr(found.group())[1:-1]


def one_line(text: str) -> str:
    """``text`` as a line shows it: each character :func:`check_name` refuses written as
    its escape (``repr``'s: ``\\n``, ``\\x1b``, ``\\u2028``), the rest as it is; a text
    holding none is returned as it is.  How a task's name is printed for people (the
    ``lldsched tasks`` table and ``show``, the control panel, a chart's labels): a name an
    older release stored with a newline or an escape sequence still loads and runs, and
    shows as what it holds instead of acting on the terminal.  A backslash is left as it
    is: ``a\\nb`` typed so reads as the escaped newline does (neither breaks a line)."""
    if text.isprintable():
        return text
    return _BREAKS.sub(_escape, text)


def name_after(task_id: str, name: str) -> str:
    """What a message writes after a task's id to name it: its name quoted, in
    parentheses (``" ('nightly')"``), or nothing where the name is the id (a task
    registered with ``id=`` its name), so such a task is named once, never
    ``'remind' ('remind')``.  A refusal, a record's error text and an exception that
    name a task by id and name ask here (docs/decisions/logging.md, "A refusal names a
    task once")."""
    return "" if name == task_id else f" ({name!r})"

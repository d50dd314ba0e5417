"""The package's exceptions: one base, a subclass per kind of mistake.

Every error the library raises on purpose derives from :class:`LldschedError`, so
``except LldschedError`` catches all of them.  Each also derives from the builtin
that fits (``ValueError``, ``LookupError``, ``RuntimeError``), so code that does
not know this package still handles them sensibly.  Messages quote the bad value.

Failures of *user* code (a task that raises) are never raised from here: they
become data in an :class:`~lldsched.model.ExecutionRecord`, as the text
:func:`error_text` writes (bounded, its cause named, text every store can write:
:func:`escaped`), and the traceback :func:`traceback_text` writes for the log line
that gives the slot up.  Neither ever raises, whatever the exception's ``__str__``
does.

A message quotes a bad value as :func:`shown` writes it: its ``repr``, which never
raises and is never long (an ``int`` past Python's conversion limit, a name of a million
characters, a container of them, an object whose ``__repr__`` raises).

A message that sends its reader to a document gives the document's address,
:func:`doc_url`: the wheel holds the package alone, not ``docs/``.
"""

from __future__ import annotations

import math
import reprlib
import sys
import traceback
from collections import deque

__all__ = [
    "CANCELLED_INSIDE",
    "DEAD_TIMER",
    "DEAD_TIMER_ADVICE",
    "ERROR_LIMIT",
    "NEVER_STARTED_OVERLAP",
    "OVERLAP_CANCEL_ERROR",
    "REPOSITORY",
    "TRACEBACK_LIMIT",
    "LeaseLost",
    "LldschedError",
    "ScheduleError",
    "SchedulerBusyError",
    "SchedulerShutDownError",
    "SchedulerStateError",
    "SettleTimeoutError",
    "StoreClosedError",
    "StoreError",
    "TaskNotFoundError",
    "TaskRetiredError",
    "ValidationError",
    "doc_url",
    "error_text",
    "escaped",
    "shown",
    "traceback_text",
]


class LldschedError(Exception):
    """Base of every error lldsched raises on purpose."""


class ValidationError(LldschedError, ValueError):
    """An argument is malformed: raised by the call given it (a constructor, a
    registration, a verb), quoting the bad value, never at the first tick."""


class ScheduleError(ValidationError):
    """A schedule cannot be built as given (a bad period, cron text, instant...)."""


class TaskNotFoundError(LldschedError, LookupError):
    """No task is registered under the given id."""


class TaskRetiredError(TaskNotFoundError):
    """The task finished and left the registry after its retention (``retain_finished``);
    its records stay in the store and the run log."""


class SchedulerStateError(LldschedError, RuntimeError):
    """The scheduler cannot do that now: it is shut down (or started twice), or is a
    copy in a child forked from the process that made it (:mod:`lldsched.threaded.forked`);
    the task finished and will not run again (``reschedule``, ``modify``), or other
    tasks still depend on it (``remove``); or the view driving it (a control panel, a
    simulation player) is closed (:func:`lldsched.views.widgetkit.refuse_if_closed`)."""


class SchedulerShutDownError(SchedulerStateError):
    """The runtime is shut down (``shutdown()``, ``await aclose()``, the end of its
    ``with`` block): a verb it refuses from then on
    (:data:`~lldsched.runtime.REFUSED_AFTER_SHUTDOWN`: ``schedule``, ``reschedule``,
    ``run_now``, ``resume``, ``redrive``; a simulation's verbs that move its time), or a
    scheduler's ``start()`` again.  The one :class:`SchedulerStateError` a library that
    embeds lldsched expects in the normal course, from a call that raced its own
    shutdown (a plugin's thread registering as the host unloads it); the others (a
    finished task, a task others depend on, a forked child, a dead timer) are
    mistakes to fix (docs/GUIDE.md, "Inside a library of your own")."""


REPOSITORY = "https://github.com/lldsched/lldsched"
"""Where the documents are read: the repository pyproject.toml's ``[project.urls]``
names (``Homepage``; tests/test_packaging.py holds the two equal)."""


def doc_url(path: str) -> str:
    """The address of ``path``, a file of the repository with an anchor if any
    (``"docs/CLUSTER.md#limits"``), as its main branch has it: how a message raised,
    warned or logged cites a document.  The wheel holds the package alone, so
    ``docs/CLUSTER.md`` in a message sent a user of the wheel to a file they do not have;
    a docstring or a comment, read beside the source, says ``docs/X.md`` (the package's
    docstring says where that is).  tests/test_doc_references.py holds every address a
    message gives to a file of the repository, and its anchor to a heading of that file."""
    return f"{REPOSITORY}/blob/main/{path}"


DEAD_TIMER = (
    "the scheduler's timer thread died (its traceback is in the log, 'the timer thread died')"
)
"""What a scheduler whose timer thread died is, in every message that says so: a verb
that needs the timer refusing (``_refuse_if_dead``, lldsched/threaded/timer.py) and a
control panel's press (lldsched/views/presses.py)."""

DEAD_TIMER_ADVICE = "shutdown() it and build a new Scheduler (a durable store keeps its tasks)"
"""What to do about a scheduler whose timer thread died (docs/OPERATIONS.md), in every
message that says :data:`DEAD_TIMER`."""


class SchedulerBusyError(LldschedError, TimeoutError):
    """The scheduler's lock was not free within the time a read was given
    (``metrics(timeout=...)``): another thread held it all that time, most likely a
    store call that hangs under it, and nothing is dispatched meanwhile.  What a
    liveness probe reports as a failure."""


class SettleTimeoutError(LldschedError, TimeoutError):
    """The runs a test waited for did not finish within its bounded wait
    (:class:`lldsched.testing.Stepper`): a job that blocks, or one that never lets the
    scheduler be idle.  The message names the instant and the tasks still running."""


class StoreError(LldschedError, RuntimeError):
    """A store cannot be opened, read or written: a corrupted file, a schema from a
    newer version, another program's file, a stored callable that no longer imports, a
    file another open store holds (one scheduler per file), a store used in a process
    forked after it was opened, a database that cannot be reached.  A refused open
    leaves the store untouched."""


class StoreClosedError(StoreError):
    """The store was closed while its scheduler still uses it (``store.close()``, or a
    ``with`` block of the store that ended before the scheduler's).  A store raises it
    for every call after its ``close()``; a scheduler raises it from a verb, before
    changing anything, once its store is closed (docs/decisions/store-failures.md, "A store closed
    before its scheduler")."""


class LeaseLost(StoreError):
    """A fenced write came too late: the run's lease expired and was taken over (or its
    task was removed), so the store refused the write carrying ``token``.

    Raised by :meth:`CoordinatedStore.settle <lldsched.coordination.CoordinatedStore.settle>`.
    Nothing was written: the run that holds the newer token is the one that counts.
    """

    def __init__(self, *, task_id: str, token: int) -> None:
        super().__init__(
            f"the lease of task {task_id!r} with fencing token {token} is lost (expired and "
            "taken over, or the task was removed): the write was refused"
        )
        self.task_id = task_id
        self.token = token

    def settle_refused(self, attempt: int) -> str:
        """What a shared store logs of a run's settle it refused with this error, in one
        wording for every store: nothing of the run is stored, yet the process that ran it
        keeps its record (its ``records()``, the task's history, ``metrics()``: the run
        did run there), and the store keeps the run that took it over."""
        return (
            f"{self}; the record of attempt {attempt} was not stored (this process's own "
            "history keeps it: the run ran here, and the store keeps the run that took it over)"
        )


ERROR_LIMIT = 2000
"""The longest error text a record keeps, in characters: a longer one is cut, and says
how long it was (an exception that carries a whole response body or a file)."""

_CHAIN = 3  # the causes and contexts named after the exception itself, at most
_MEMBERS = 5  # the sub-exceptions of an exception group named, at most


def error_text(exc: BaseException) -> str:
    """``"Type: message"``, the form records, events and the log carry; never raises.

    What follows the message, when there is one: the exception's cause (``raise X
    from Y``: ``" (caused by Y: ...)"``) or the exception it was raised while handling
    (``" (while handling Y: ...)"``), up to three links; an exception group's
    sub-exceptions (``" [ValueError: a; KeyError: 'b']"``, five at most).  A ``__str__``
    that raises is named, not raised (the type stays the exception's own).  A message
    is cut to what is left of :data:`ERROR_LIMIT` characters (saying how long it was),
    and a character no store can encode (a lone surrogate, NUL) is written as its
    escape: a record whose text a SQLite or PostgreSQL store cannot write was lost
    from the store (docs/decisions/lifecycle.md, "What a failed run leaves").
    """
    text = _one(exc, ERROR_LIMIT)
    if isinstance(exc, BaseExceptionGroup):
        text += _members(exc, ERROR_LIMIT - len(text))
    seen = {id(exc)}
    link: BaseException = exc
    for _ in range(_CHAIN):
        if link.__cause__ is not None:
            link, word = link.__cause__, "caused by"
        elif link.__context__ is not None and not link.__suppress_context__:
            link, word = link.__context__, "while handling"
        else:
            break
        if id(link) in seen:  # a cycle (an exception raised from itself, somewhere)
            break
        seen.add(id(link))
        room = ERROR_LIMIT - len(text)
        if room <= 0:
            text += f" ({word} ...)"
            break
        text += f" ({word} {_one(link, room)})"
    return escaped(text)


TRACEBACK_LIMIT = 20_000
"""The longest traceback text a worker process sends its parent, in characters: the
end is kept (the innermost frames and the exception), the start cut."""


def traceback_text(exc: BaseException) -> str:
    """``exc``'s traceback as Python prints it (its causes and contexts first), each
    frame and message cut to :data:`ERROR_LIMIT` characters and the whole to its last
    :data:`TRACEBACK_LIMIT`, surrogates escaped; never raises.  What a failure's log
    line carries, and what a worker process sends its parent about a run that raised
    (``isolation="process"``: the exception itself stays in the child)."""
    try:
        text = "".join(_line(chunk) for chunk in traceback.format_exception(exc))
    except BaseException:  # a traceback that cannot be formatted: said so
        return f"(its traceback could not be formatted) {error_text(exc)}\n"
    length = len(text)
    if length > TRACEBACK_LIMIT:
        text = f"... ({length - TRACEBACK_LIMIT:,} characters cut)\n{text[-TRACEBACK_LIMIT:]}"
    return escaped(text)


def _line(chunk: str) -> str:
    """One chunk of a formatted traceback (a frame, a message), cut."""
    if len(chunk) <= ERROR_LIMIT:
        return chunk
    return _cut(chunk, ERROR_LIMIT) + "\n"


def _one(exc: BaseException, room: int) -> str:
    """``"Type: message"`` of one exception, whatever its ``__str__`` does, the message
    cut to ``room`` characters."""
    name = type(exc).__name__
    try:
        message = str(exc)
    except BaseException as broke:  # a user's __str__: whatever it raised is named
        message = f"<its __str__ raised {type(broke).__name__}>"
    message = _cut(message, max(room, 0))
    return f"{name}: {message}" if message else name


def _members(group: BaseExceptionGroup[BaseException], room: int) -> str:
    """An exception group's sub-exceptions, named after its own message."""
    members = group.exceptions
    each = max(room, 0) // min(len(members), _MEMBERS)
    named = "; ".join(_one(member, each) for member in members[:_MEMBERS])
    more = len(members) - _MEMBERS
    return f" [{named}; and {more} more]" if more > 0 else f" [{named}]"


def _cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and how long it was."""
    length = len(text)
    if length <= limit:
        return text
    return f"{text[:limit]}... ({length:,} characters, cut)"


def escaped(text: str) -> str:
    """``text`` with each lone surrogate and NUL written as its escape (``\\udcff``,
    ``\\x00``): text every store can write.  The UTF-8 codec refuses a surrogate
    (SQLite's and PostgreSQL's drivers raise ``UnicodeEncodeError``, and the record was
    lost from the store) and PostgreSQL's text refuses NUL.  An error text and a result
    text go through here."""
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    return text


SHOWN_LIMIT = 1000
"""The most characters of a value's ``repr`` a message quotes (:func:`shown`): a longer
one is cut, and says how long the value was.  Room for what a message quotes whole
(an ``ExecutionRecord``, a schedule of decorators, a task id of 500 characters), not
for a name of a million."""

MOST_DIGITS = sys.int_info.str_digits_check_threshold
"""The most digits of an ``int`` a message quotes (640): the fewest
``sys.set_int_max_str_digits()`` may allow, so whatever the limit is set to, ``repr``
writes every ``int`` :func:`shown` writes whole.  A longer one is named by its count of
digits (``10**5000`` is ``"an int of 5,001 digits"``): its ``repr`` raised
``ValueError: Exceeds the limit (4300 digits) for integer string conversion`` from
inside the message meant to refuse it, and 640 digits is already past what a reader
reads."""

_SHORT_BITS = int((MOST_DIGITS - 1) / math.log10(2))  # an int of these bits: < 640 digits
_EXACT_BITS = 1 << 20  # past these bits a count of digits is only estimated ("about")


def shown(value: object) -> str:
    """``repr(value)`` as a message quotes a bad value: the same text for what a reader
    reads whole, and otherwise a text that never raises, and costs no more than its own
    length, whatever ``value`` is.  An ``int`` of more than :data:`MOST_DIGITS` digits is
    named by its count (``"an int of 5,001 digits"``, ``"a negative int of ..."``); a
    ``str`` or ``bytes`` longer than :data:`SHOWN_LIMIT` is quoted by its start (``"'xx...'...
    (1,000,000 characters, cut)"``), its whole ``repr`` never built; a list, tuple, dict,
    set or deque by its first ten items, three levels deep, each item by this same rule;
    any other value's ``repr`` is cut to :data:`SHOWN_LIMIT` characters, and one whose
    ``repr`` raises is named by its type (``"<Thing object (its repr raised
    ValueError)>"``).  The one place the package turns a value given to it into a
    message's text (``lldsched/checks.py``'s checks and every check that quotes what a
    caller gave; docs/decisions/checking-input.md, "A bad value is quoted by one rule")."""
    return _SHOWN.repr(value)


def _int_text(value: int) -> str:
    """An ``int`` (a subclass too, never a ``bool``) as :func:`shown` writes it: its
    ``repr`` whole, or its count of digits past :data:`MOST_DIGITS`."""
    magnitude = -value if value < 0 else value
    bits = magnitude.bit_length()
    if bits > _SHORT_BITS:
        digits = int(bits * math.log10(2)) + 1  # exact, or one too many
        about = bits > _EXACT_BITS
        if not about and magnitude < 10 ** (digits - 1):
            digits -= 1
        if digits > MOST_DIGITS:
            sign = "a negative" if value < 0 else "an"
            kind = "int" if type(value) is int else type(value).__name__
            return f"{sign} {kind} of {'about ' if about else ''}{digits:,} digits"
    return _repr_of(value)


def _repr_of(value: object) -> str:
    """``repr(value)``, or the words saying it raised (a user's ``__repr__``)."""
    try:
        return repr(value)
    except Exception as broke:
        return f"<{type(value).__qualname__} object (its repr raised {type(broke).__name__})>"


def _text_start(value: str | bytes | bytearray) -> str:
    """A long ``str`` or ``bytes`` as :func:`shown` writes it: the ``repr`` of its start
    alone, and its length."""
    return f"{value[:SHOWN_LIMIT]!r}... ({len(value):,} characters, cut)"


class _Shown(reprlib.Repr):
    """:func:`shown`'s walk: ``reprlib`` bounds the containers (ten items, three levels
    deep), :meth:`repr1` each value, in a container or not."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxtuple = self.maxlist = self.maxarray = self.maxdict = 10
        self.maxset = self.maxfrozenset = self.maxdeque = 10

    def repr1(self, x: object, level: int) -> str:
        if isinstance(x, int) and not isinstance(x, bool):
            return _int_text(x)
        if isinstance(x, str | bytes | bytearray):  # whole up to SHOWN_LIMIT characters
            return _text_start(x) if len(x) > SHOWN_LIMIT else _repr_of(x)
        if type(x) in _WALKED:  # ten items of a thousand characters each: cut too
            return _cut(super().repr1(x, level), SHOWN_LIMIT)
        return _cut(_repr_of(x), SHOWN_LIMIT)


_WALKED = frozenset({list, tuple, dict, set, frozenset, deque})
_SHOWN = _Shown()


CANCELLED_INSIDE = "CancelledError: raised inside the run; the scheduler did not cancel it"
"""The error text of a coroutine run that ended in a ``CancelledError`` no verb, timeout
or shutdown asked for: it cancelled itself (``asyncio.current_task().cancel()``), or
awaited a task or future that something else cancelled.  A failure like any other: it
is retried, and logged as a failure (WARNING, ERROR at the dead letter), not as a run
stopped on purpose.  The scheduler's own cancellations say why instead
(``CancelledError: task cancelled``, ``task paused``, ``scheduler shut down``), and a
timeout is a ``TimeoutError``.  Before, such a run was recorded ``CancelledError``
alone and logged at INFO as "stopped", even when it sent its task to the dead letter."""


OVERLAP_CANCEL_ERROR = "OverlapCancelled"
"""The type an error text of a run ``Overlap.CANCEL_OTHER`` cut for a newer slot begins
with (``"OverlapCancelled: Overlap.CANCEL_OTHER, slot ... came due while it ran"``): what
tells it from the other runs recorded ``cancelled``, those a shutdown cut (a Gantt
chart's key names each by what cut it)."""


NEVER_STARTED_OVERLAP = (
    "CancelledError: cancelled by a newer run before it started (Overlap.CANCEL_OTHER)"
)
"""The error text the threaded runtime hands for a coroutine run ``Overlap.CANCEL_OTHER``
cut before its body began (waiting for the event loop, or between its task's making and
its first step): the core's record of it then says the slot came due *before it
started*, not *while it ran* (:mod:`lldsched.core.overlapping`)."""

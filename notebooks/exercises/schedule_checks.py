"""The checks of the two schedule exercises: the overrun rule and a cron field.

Both compare the answer with the library itself: ``next_slot`` with
``FixedRate.next_run``, ``parse_field`` with lldsched's cron parser.  Their random
cases include the boundaries, where wrong answers hide: a run finishing exactly
on a slot of the grid, and values one below and one above a field's range.
"""

from __future__ import annotations

import numbers
import random
import re
import reprlib
from collections.abc import Callable, Iterable

from exercises.checks import (
    Check,
    Raised,
    Taken,
    as_number,
    asked_again,
    call_answer,
    check_answer,
    shown_apart,
    unlike_a_number,
)
from lldsched import ExecutionRecord, FixedRate, OverrunPolicy, ScheduleError
from lldsched.schedules.cron.parse import parse

__all__ = ["check_next_slot", "check_parse_field", "next_slot_checks", "parse_field_checks"]

# -- the overrun rule ------------------------------------------------------------------------

CONVENTION = (
    "lldsched's convention: a slot that falls exactly at the finish has not been missed "
    "(it is next, due at once); stepping past it with `while next <= finished`, as the "
    "first version of this design did, skips it (`<=` where lldsched has `<`)"
)


def reference_next_slot(slot: float, period: float, finished: float, policy: str) -> float:
    """What ``FixedRate.next_run`` answers for a run of ``slot`` that ended at ``finished``."""
    overrun = OverrunPolicy.SKIP if policy == "skip" else OverrunPolicy.CATCH_UP
    record = ExecutionRecord(
        task_id="t",
        name="t",
        attempt=1,
        due=slot,
        slot=slot,
        worker=0,
        started=slot,
        finished=finished,
        ok=True,
    )
    return FixedRate(period, overrun).next_run(record, finished)


def _verdict(
    next_slot: Callable[[float, float, float, str], float],
    slot: float,
    period: float,
    finished: float,
    policy: str,
) -> None:
    call = f"next_slot({slot:g}, {period:g}, {finished:g}, {policy!r})"
    returned = call_answer(call, next_slot, slot, period, finished, policy)
    got = as_number(returned)  # a plain number, whatever arithmetic the answer's has
    if got is None:
        raise AssertionError(
            f"{call} returned {returned!r}"
            + ("" if returned is None else f", {unlike_a_number(returned)}")
            + ": return the next due instant, a number"
        )
    # The expectation exists only once the answer has returned: no frame of the checker
    # holds it for the answer to read.
    expected = reference_next_slot(slot, period, finished, policy)
    if abs(got - expected) < 1e-9:
        return
    asked_again(call, next_slot, (slot, period, finished, policy), got, as_number, _number)
    why = _mistake(slot, period, finished, policy, got, expected)
    shown = shown_apart(expected, got)
    raise AssertionError(f"{call}: expected {shown[0]}, got {shown[1]}{why}")


def _number(value: float | None) -> str:
    return "something else" if value is None else f"{value:g}"


def _mistake(
    slot: float, period: float, finished: float, policy: str, got: float, expected: float
) -> str:
    """What a wrong ``got`` most likely says about the answer (": ..."), or nothing."""
    on_boundary = (finished - slot) % period == 0
    if policy == "skip" and on_boundary and abs(got - (expected + period)) < 1e-9:
        return f": {CONVENTION}"
    if got < slot + period - 1e-9:
        return (
            f": the run for slot {slot:g} is done, so the next slot is never before slot + "
            f"period ({slot + period:g}); a run that takes no time (a fake clock's) ends at "
            "its own slot, which it has served, not missed"
        )
    if abs(got - (finished + period)) < 1e-9:
        return (
            ": counted from the finish; a fixed rate stays on the grid slot + k * period "
            "(counting from the finish is fixed *delay*)"
        )
    if policy == "catch_up":
        return ": catch_up returns the slot after this one, slot + period, due at once"
    if got < finished and expected >= finished:
        return ": skip moves past the slots the run overran, to the first not before the finish"
    if (got - slot) % period:
        return ": not on the grid; every slot is slot + k * period"
    return ""


def next_slot_checks(next_slot: Callable[[float, float, float, str], float]) -> list[Check]:
    """``next_slot(slot, period, finished, policy)``: the next due instant of a fixed-rate
    task whose run for ``slot`` finished at ``finished``; ``policy`` is "skip" or "catch_up"."""

    def named(slot: float, finished: float, policy: str) -> Callable[[], None]:
        return lambda: _verdict(next_slot, slot, 60, finished, policy)

    def random_cases() -> None:
        rng = random.Random(3)
        for n in range(500):
            # Whole seconds, and every fourth run quarters and halves (FixedRate(1.5) is
            # a period too): exact in binary, so a boundary stays exactly on the grid.
            scale = 1 if n % 4 else rng.choice([2, 4])
            slot, period = rng.randint(0, 1000) / scale, rng.randint(1, 120) / scale
            k = rng.randint(0, 5)
            finished = slot + rng.choice(
                [k * period, k * period + 0.5, k * period - 0.5, period / 2]
            )
            if n < 40:  # the boundaries first: a finish exactly on a slot of the grid
                finished = slot + (n % 5 + 1) * period
            _verdict(next_slot, slot, period, max(finished, slot), rng.choice(["skip", "catch_up"]))

    return [
        ("a short run: the next slot on the grid", named(0, 5, "skip")),
        ("a run of 0 s (a fake clock's) -> 60, not its own slot again", named(0, 0, "skip")),
        ("skip after a 150 s run on a 60 s period -> 180", named(0, 150, "skip")),
        ("catch-up after the same run -> 60, due at once", named(0, 150, "catch_up")),
        ("a run ending exactly on the next slot -> that slot", named(0, 60, "skip")),
        ("skip, a run ending exactly two slots later -> 120", named(0, 120, "skip")),
        ("agrees with FixedRate.next_run on 500 runs, boundaries included", random_cases),
    ]


def check_next_slot(next_slot: Callable[[float, float, float, str], float]) -> None:
    """Run the overrun-rule checks against your ``next_slot``."""
    check_answer(next_slot, next_slot_checks, "check_next_slot(next_slot)")


# -- a cron field ----------------------------------------------------------------------------

_FIELD_POSITION = {(0, 59): "{} * * * *", (0, 23): "0 {} * * *", (1, 12): "0 0 1 {} *"}


def reference_field(text: str, low: int, high: int) -> set[int] | None:
    """The values lldsched's parser allows for ``text`` in a field of ``low``-``high``, or
    None when it rejects the text."""
    try:
        fields = parse(_FIELD_POSITION[(low, high)].format(text))
    except ScheduleError:
        return None
    by_range = {(0, 59): fields.minutes, (0, 23): fields.hours, (1, 12): fields.months}
    return set(by_range[(low, high)])


def _compare(
    parse_field: Callable[[str, int, int], set[int]], text: str, low: int, high: int
) -> None:
    where = f"{text!r} in {low}-{high}"
    call = f"parse_field({text!r}, {low}, {high})"
    try:
        returned = call_answer(
            call, parse_field, text, low, high, passes=(ValueError,), take=MOST_VALUES
        )
    except ValueError as error:
        refused = reference_field(text, low, high)  # asked once the answer has returned
        if refused is None:
            return
        raise AssertionError(
            f"{where} raised ValueError ({error}), but cron accepts it: {sorted(refused)}"
        ) from None
    except Raised as raised:
        # asked once the answer has raised; a NotImplementedError is an answer not written
        if (
            not isinstance(raised.error, NotImplementedError)
            and reference_field(text, low, high) is None
        ):
            raise AssertionError(
                f"{raised}: cron rejects {text!r}, and a field cron rejects raises "
                f"ValueError (not {type(raised.error).__name__})"
            ) from None
        raise
    expected = reference_field(text, low, high)
    if returned is None and expected is None:
        raise AssertionError(
            f"{call} returned None, where cron rejects {text!r}: raise ValueError, saying "
            "why (a None handed on fails far from the field that was wrong)"
        )
    got = _values(call, returned)
    if expected is None:
        # What int() reads and cron does not: a sign, spaces, an underscore between digits,
        # and another script's digits (which str.isdigit() passes too).
        read = re.search(r"[+\s_]", text) is not None or not text.isascii()
        raise AssertionError(
            f"{where} should raise ValueError (cron rejects it), got {sorted(got)}"
            + (
                ": cron takes ASCII digits only, and int() also reads a sign, spaces, "
                "underscores and other scripts' digits ('+5', ' 5', '1_0', '\uff15'); test "
                "part.isascii() and part.isdigit() before int(part)"
                + (REGEX_DIGITS if not text.isascii() else "")
                if read
                else _rejected_because(text, low, high)
            )
        )
    assert got == expected, (
        f"{where}: expected {sorted(expected)}, got {sorted(got)}"
        + _field_mistake(text, low, high, got, expected)
    )


REGEX_DIGITS = (
    "; in a regular expression, \\d matches other scripts' digits too: write [0-9], or "
    "compile with re.ASCII"
)
"""Said of a non-ASCII digit a field took: a parser by regex (``\\d+``), which never calls
``isdigit()``, was told only to test ``part.isascii()``."""


def _rejected_because(text: str, low: int, high: int) -> str:
    """Why cron rejects ``text`` (": ..."), named by its part, or nothing."""
    for item in text.split(","):
        if not item:
            return (
                f": {text!r} has an empty list item; cron rejects it rather than read nothing there"
            )
        base, slash, step = item.partition("/")
        if slash and not step:
            return f": {item!r} has a '/' with no step after it"
        if slash and step.isdigit() and int(step) == 0:
            return f": a step of 0 ({item!r}) never moves; cron rejects it"
        if base == "*":
            continue
        ends = base.split("-")
        if len(ends) > 2:
            return f": {base!r} has more than one '-'; a range is a-b"
        if not all(ends):
            return f": {base!r} leaves a number out (a range is a-b, both ends written)"
        if not all(end.isascii() and end.isdigit() for end in ends):
            return ""  # a letter or a sign: the message says what int() takes
        outside = [end for end in ends if not low <= int(end) <= high]
        if outside:
            return (
                f": {outside[0]} is outside the field's range {low}-{high}; bounds-check "
                "every number, both ends of a range included"
            )
        if len(ends) == 2 and int(ends[0]) > int(ends[1]):
            return (
                f": {base} is a reversed range, which cron rejects (it does not wrap around "
                f"past {high}, nor read it as {ends[1]}-{ends[0]})"
            )
    return ""


def _field_mistake(text: str, low: int, high: int, got: set[int], expected: set[int]) -> str:
    """What a wrong set most likely says about the parser (": ..."), or nothing."""
    items = text.split(",")
    single = [item.split("/")[0] if re.fullmatch(r"\d+/\d+", item) else item for item in items]
    if single != items and reference_field(",".join(single), low, high) == got:
        return ": n/s means n-high/s, as in real cron (50/3 in a minute field is 50, 53, 56 and 59)"
    stepped = [item for item in items if re.fullmatch(r"\d+(-\d+)?/\d+", item)]
    if stepped and _stepped_from_low(items, low, high) == got:
        allowed = sorted(reference_field(stepped[0], low, high) or ())
        shown = ", ".join(map(str, allowed[:3])) + (", ..." if len(allowed) > 3 else "")
        return (
            f": a step counts from the start of its range ({stepped[0]} is {shown}), not "
            "from the field's first value"
        )
    below_low = low > 0 and min(got, default=low) < low  # */s counted from 0, months
    if below_low or any(
        item.startswith("*/") and low not in got and low in expected for item in items
    ):
        return (
            f": a step counts from the field's first value, {low} here (*/2 is {low}, "
            f"{low + 2}, {low + 4}, ...)" + (", not from 0" if low else "")
        )
    ends = {int(end) for end in re.findall(r"-(\d+)", text)} | {high}
    if got < expected and expected - got <= ends:
        return ": a range includes both its ends (a-b is range(a, b + 1))"
    return ""


def _stepped_from_low(items: list[str], low: int, high: int) -> set[int] | None:
    """The values of a field whose ``a-b/s`` and ``n/s`` items step from ``low``, the
    field's first value, and keep what is at least ``a``: the mistake
    :func:`_field_mistake` names first.  None where cron rejects an item."""
    values: set[int] = set()
    for item in items:
        base, slash, step = item.partition("/")
        if slash and base != "*" and step.isdigit() and int(step) > 0:
            ends = reference_field(base if "-" in base else f"{base}-{high}", low, high)
            if not ends:
                return None
            values.update(v for v in range(low, max(ends) + 1, int(step)) if v >= min(ends))
        else:
            allowed = reference_field(item, low, high)
            if allowed is None:
                return None
            values |= allowed
    return values


MOST_VALUES = 10_000
"""How many values of a generator the answer returns are taken (a field has 60 at most):
one that yields more is told so, and one that never ends is named as the call it is."""


_SHORT = reprlib.Repr()
_SHORT.maxstring = 60  # a set's text shown whole for a month field, cut for a minute field


def _values(call: str, got: object) -> set[int]:
    """What ``parse_field`` returned, as a set of ints; anything else fails, shown."""
    if isinstance(got, Taken) and got.more:
        raise AssertionError(
            f"{call} returned a {got.kind} that yields more than {MOST_VALUES:,} values: "
            "return the set of values the field allows"
        )
    if isinstance(got, str | bytes):  # iterable, but its items are characters
        raise AssertionError(
            f"{call} returned {_SHORT.repr(got)}, a {type(got).__name__}: the set's text, "
            "not the set; return the set of values the field allows"
        )
    try:
        if not isinstance(got, Iterable):
            raise TypeError(got)
        values = set(got)  # unhashable items raise TypeError too
    except TypeError:
        raise AssertionError(
            f"{call} returned {got!r}: return the set of values the field allows"
        ) from None
    # an int of another type (numpy's, from numpy.arange) is one too, taken as int
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        raise AssertionError(
            f"{call} returned {sorted(values, key=repr)!r}: the values are ints (int(part))"
        )
    return {int(v) for v in values}


def _random_field(rng: random.Random, low: int, high: int) -> str:
    def number() -> str:  # the edges and one past them, often
        return str(rng.choice([low - 1, low, high, high + 1, rng.randint(low, high)]))

    def item() -> str:
        base = rng.choice(["*", number(), f"{number()}-{number()}"])
        return base + (f"/{rng.choice([0, 1, 2, 7, high, high + 1])}" if rng.random() < 0.4 else "")

    return ",".join(item() for _ in range(rng.randint(1, 3)))


def parse_field_checks(parse_field: Callable[[str, int, int], set[int]]) -> list[Check]:
    """``parse_field(text, low, high)``: the set of values one numeric cron field allows, or
    ``ValueError`` for text cron rejects.  Compared against lldsched's own parser."""

    def cases(texts: list[str], low: int, high: int) -> Callable[[], None]:
        def check() -> None:
            for text in texts:
                _compare(parse_field, text, low, high)

        return check

    def random_fields() -> None:
        rng = random.Random(11)
        for low, high in [(0, 59), (0, 23), (1, 12)] * 100:
            _compare(parse_field, _random_field(rng, low, high), low, high)

    minutes = ["*", "0", "59", "5-10", "7-7", "*/15", "10-50/20", "50/3", "1,5,9", "0-59/59"]
    return [
        ("minute fields: values, ranges, steps, lists", cases(minutes, 0, 59)),
        ("hour fields", cases(["*", "9-17", "*/6", "12", "9-17/2,22"], 0, 23)),
        ("month fields start at 1: */2 -> 1, 3, 5, ...", cases(["*/2", "*/5", "1-12/4"], 1, 12)),
        ("range ends are bounds-checked: 50-70, 0-99/50", cases(["50-70", "0-99/50", "60"], 0, 59)),
        (
            "rejects what cron rejects: +5, 1_0, 5-1, 1-5-7, */0, 1,,2",
            cases(
                ["+5", "1_0", "\uff15", "5-1", "1-5-7", "*/0", "1,,2", "", "a", "-1", "1-", "*/"],
                0,
                59,
            ),
        ),
        ("agrees with lldsched on 300 random fields, edges included", random_fields),
    ]


def check_parse_field(parse_field: Callable[[str, int, int], set[int]]) -> None:
    """Run the cron-field checks against your ``parse_field``."""
    check_answer(parse_field, parse_field_checks, "check_parse_field(parse_field)")

"""Call forms kept for a release (docs/UPGRADING.md, "Deprecated call forms"): each still
works as it did, with a DeprecationWarning that names what to write instead and points at
the caller's line; the new signature is what ``inspect`` (and so ``help``) shows."""

from __future__ import annotations

import asyncio
import inspect
import warnings

import pytest

import lldsched
from lldsched import FakeClock, Misfire, MisfirePolicy, OneTime, RetryPolicy, Scheduler
from lldsched.deprecated import REMOVED_IN, keyword_only_now
from lldsched.errors import doc_url
from lldsched.sim import ClusterScenario, ClusterTask


def test_shutdown_drain_by_position_warns_and_still_does_not_drain() -> None:
    scheduler = Scheduler(workers=1, clock=FakeClock(0))
    task = scheduler.schedule("later", lambda: None, OneTime(delay=0))
    with pytest.warns(DeprecationWarning, match=r"Scheduler.shutdown: passing drain, ti") as w:
        assert scheduler.shutdown(False, 5.0)  # type: ignore[call-arg]
    assert w[0].filename == __file__  # the caller's line
    assert not scheduler.running and task.run_count == 0  # drain=False: nothing ran


def test_aclose_drain_by_position_warns_and_is_still_a_coroutine_function() -> None:
    assert inspect.iscoroutinefunction(Scheduler.aclose)
    scheduler = Scheduler(workers=1, clock=FakeClock(0)).start()
    task = scheduler.schedule("due", lambda: None, OneTime(delay=0))

    async def main() -> bool:
        return await scheduler.aclose(True)  # type: ignore[call-arg]

    with pytest.warns(DeprecationWarning, match=r"Scheduler.aclose: passing drain by posit") as w:
        assert asyncio.run(main())
    assert w[0].filename == __file__  # the line that awaits it
    assert not scheduler.running and task.run_count == 1  # drain=True: the due run ran


def test_policies_by_position_warn_and_equal_the_keyword_form() -> None:
    with pytest.warns(DeprecationWarning, match=r"RetryPolicy: passing initial_backoff, "):
        old = RetryPolicy(5, 0.5, 3.0, 10.0)  # type: ignore[call-arg]
    assert old == RetryPolicy(5, initial_backoff=0.5, multiplier=3.0, max_backoff=10.0)
    with pytest.warns(DeprecationWarning, match=r"MisfirePolicy: passing grace, max_catch_up"):
        misfire = MisfirePolicy(Misfire.SKIP, 30, 2)  # type: ignore[call-arg]
    assert misfire == MisfirePolicy(Misfire.SKIP, grace=30, max_catch_up=2)


def test_cluster_scenario_by_position_warns_and_equals_the_keyword_form() -> None:
    tasks = (ClusterTask("a", every=60),)
    with pytest.warns(DeprecationWarning, match=r"ClusterScenario: passing tasks, lease"):
        old = ClusterScenario(2, tasks, 20.0)  # type: ignore[call-arg]
    assert old == ClusterScenario(2, tasks=tasks, lease=20.0)


def test_the_first_positional_argument_and_keywords_warn_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        RetryPolicy(4, initial_backoff=2)
        MisfirePolicy(Misfire.RUN_ALL, grace=5)
        ClusterScenario(2, lease=20.0)
        assert Scheduler(2, clock=FakeClock(0)).shutdown(drain=False, timeout=1)


def test_a_value_given_twice_or_too_many_is_a_type_error_as_python_says() -> None:
    with pytest.raises(TypeError, match=r"MisfirePolicy.__init__\(\) got multiple values "):
        MisfirePolicy(Misfire.SKIP, 30, grace=30)  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"takes at most 4 positional arguments \(5 given\)"):
        MisfirePolicy(Misfire.SKIP, 30, 2, 1)  # type: ignore[call-arg]


def test_the_wrapped_signature_is_the_new_one() -> None:
    @keyword_only_now(kept=1, moved=("b", "c"))
    def f(self: object, a: int, *, b: int = 0, c: int = 0) -> tuple[int, int, int]:
        return a, b, c

    shown = "(self: 'object', a: 'int', *, b: 'int' = 0, c: 'int' = 0) -> 'tuple[int, int, int]'"
    assert str(inspect.signature(f)) == shown
    with pytest.warns(DeprecationWarning, match=r"NoneType.f: passing b by position"):
        assert f(None, 1, 2) == (1, 2, 0)  # type: ignore[call-arg]


def test_the_warning_names_the_release_that_refuses_the_old_form() -> None:
    with pytest.warns(DeprecationWarning) as w:
        RetryPolicy(5, 0.5)  # type: ignore[call-arg]
    assert str(w[0].message) == (
        "RetryPolicy: passing initial_backoff by position is deprecated and refused from "
        f"lldsched {REMOVED_IN} on ({doc_url('docs/UPGRADING.md')}); write initial_backoff=..."
    )
    assert REMOVED_IN == "0.2.0"  # what docs/UPGRADING.md promises (tests/test_docs.py runs it)


def test_the_old_forms_are_gone_by_the_release_that_refuses_them() -> None:
    # When the version reaches REMOVED_IN, remove keyword_only_now's uses (and this test).
    def release(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split(".")[:3])

    assert release(lldsched.__version__) < release(REMOVED_IN), (
        f"lldsched {lldsched.__version__} still accepts the positional forms it promised "
        f"to refuse from {REMOVED_IN} on"
    )

"""The suite's garbage collection between tests (autouse fixtures, tests/conftest.py).

pytest never runs the collector itself, so an object left in a reference cycle would say
its ``ResourceWarning`` (an error: pyproject.toml's ``filterwarnings``) in whichever later
test the collector happened to run in.  The collections here make it speak in the test,
or at the end of the module, that left it (docs/TESTING.md, "What fails a test besides
its assertions").

A collection walks every object the collector was not told to skip.  The objects alive
before a module begins (the session's imports and collected tests, the earlier modules'
fixtures: 700,000 and more late in a worker) are frozen out (``gc.freeze()``) while the
module runs, so a test's collection, and the module's at its end, walk what the module
made, not the whole session (docs/decisions/parallel-tests.md, "The collection at a
module's end walks the module's objects").  What an earlier module made and a later one
drops is found by the one collection of everything, at the session's end.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

# How many objects a module may keep alive across its tests before its era is frozen
# too: each test's collection walks them (20,000 objects, about 10 ms).  A module past
# it (one whose first test imports pandas, say) pays one collection of everything at its
# end instead, as every module did before.
MODULE_OBJECTS_WALKED = 20_000

# Whether this module's objects were frozen with the session's, so that only a
# collection of everything finds what they leave (one module runs at a time in a
# process: xdist's workers are processes).
_module_frozen = [False]


@pytest.fixture(scope="session", autouse=True)
def collect_everything_at_the_end() -> Iterator[None]:
    """Once the session's fixtures are torn down (an autouse fixture of the session is
    set up first, so torn down last), everything frozen is unfrozen and collected: what
    an earlier module made and a later one dropped, and what the session's fixtures
    left, is reported there, in the last test's teardown."""
    yield
    gc.unfreeze()
    gc.collect()


@pytest.fixture(scope="module", autouse=True)
def collect_each_module(collect_everything_at_the_end: None) -> Iterator[None]:
    """Freeze what is alive as the module begins, once what the module before left is
    collected; at its end, once its module-scoped fixtures are torn down (an autouse
    fixture is set up first of its scope, so torn down last), collect what the module
    made: what its tests left in a reference cycle across tests, and its fixtures, is
    reported there, in its last test (a module-scoped fixture the last test asked for
    too: that test's hold on it is let go of first, :func:`let_go`).  A module whose
    objects were frozen with the session's (:data:`MODULE_OBJECTS_WALKED`) collects
    everything instead."""
    gc.collect()
    gc.freeze()
    _module_frozen[0] = False
    yield
    if _module_frozen[0]:
        gc.unfreeze()
    gc.collect()


@pytest.fixture(autouse=True)
def collect_each_test(
    collect_each_module: None, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> Iterator[None]:
    """Collect the test's garbage at its end, once its fixtures are torn down (an autouse
    fixture is torn down last of its scope) and before pytest looks for what was raised
    where nothing could catch it.  A store, file, socket or event loop the test left in
    a reference cycle then says its ``ResourceWarning``, an error (pyproject.toml's
    ``filterwarnings``), in the test that left it, not in whichever later test the
    collector happened to run in.

    The collection walks the objects the module made so far, not the session's
    (:func:`collect_each_module` froze those), so a cycle the test closed over an
    object of an earlier test of the module is reported in this test too.

    Before it, pytest's two holds on what the test made are let go of (:func:`let_go`)."""
    yield
    let_go(request, caplog)
    gc.collect()
    if len(gc.get_objects(generation=2)) > MODULE_OBJECTS_WALKED:
        gc.freeze()
        _module_frozen[0] = True


def let_go(request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture) -> None:
    """Let go of what pytest keeps of a test until after its teardown: the values of its
    fixtures (``item.funcargs``: a factory fixture's closure holds everything it made)
    and the log records captured in each phase (a record's ``exc_info`` holds its
    traceback's frames, and through them the scheduler whose worker logged it).  Held,
    what the test made is alive at its collection: not reported there but in a later
    test's, and counted as the module's (:data:`MODULE_OBJECTS_WALKED`), frozen and
    walked until the module's end (a million objects, each of
    tests/test_threaded_verb_interrupts.py's schedulers).  pytest drops both right
    after the teardown; nothing reads them between here and there.  The records' text is
    in the test's report already (each record is written as it is emitted)."""
    funcargs = getattr(request.node, "funcargs", None)
    if funcargs is not None:
        funcargs.clear()
    for when in ("setup", "call", "teardown"):
        caplog.get_records(when).clear()

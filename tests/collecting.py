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
    reported there, in its last test.  A module-scoped fixture the last test asked for
    is still held by that test then (pytest lets go of a test's fixtures after its
    teardown): what it left is reported as the next module begins, in its first test's
    set-up.  A module whose objects were frozen with the session's
    (:data:`MODULE_OBJECTS_WALKED`) collects everything instead."""
    gc.collect()
    gc.freeze()
    _module_frozen[0] = False
    yield
    if _module_frozen[0]:
        gc.unfreeze()
    gc.collect()


@pytest.fixture(autouse=True)
def collect_each_test(collect_each_module: None) -> Iterator[None]:
    """Collect the test's garbage at its end, once its fixtures are torn down (an autouse
    fixture is torn down last of its scope) and before pytest looks for what was raised
    where nothing could catch it.  A store, file, socket or event loop the test left in
    a reference cycle then says its ``ResourceWarning``, an error (pyproject.toml's
    ``filterwarnings``), in the test that left it, not in whichever later test the
    collector happened to run in.

    The collection walks the objects the module made so far, not the session's
    (:func:`collect_each_module` froze those), so a cycle the test closed over an
    object of an earlier test of the module is reported in this test too."""
    yield
    gc.collect()
    if len(gc.get_objects(generation=2)) > MODULE_OBJECTS_WALKED:
        gc.freeze()
        _module_frozen[0] = True

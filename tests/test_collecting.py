"""The suite's collections between tests (tests/collecting.py) report each object left in
a reference cycle with a resource, and where: in the test that dropped it when the test's
module made it, at the end of the module for its module-scoped fixtures (the module's
objects frozen with the session's or not), and at the session's end for an object an
earlier module made and a later one dropped.

The modules below run in a pytest of their own, with the suite's ``filterwarnings``: a
``ResourceWarning`` said in a finaliser fails the test whose phase it was said in.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.collecting import MODULE_OBJECTS_WALKED

ROOT = Path(__file__).resolve().parent.parent

CONFTEST = """
import os

from tests.collecting import (  # noqa: F401
    collect_each_module,
    collect_each_test,
    collect_everything_at_the_end,
)


class Leaky:
    '''An open file in a reference cycle: only the collector closes it, saying so.'''

    def __init__(self) -> None:
        self.me = self
        self.file = open(os.devnull)
"""

INI = """
[pytest]
filterwarnings =
    error::pytest.PytestUnraisableExceptionWarning
    error::ResourceWarning
"""

MODULES = {
    "test_a_one_test.py": """
from conftest import Leaky

def test_leaves_a_cycle():
    Leaky()

def test_clean():
    pass
""",
    "test_b_across_tests.py": """
from conftest import Leaky

KEPT = []

def test_keeps():
    KEPT.append(Leaky())

def test_drops():
    KEPT.clear()

def test_after():
    pass
""",
    "test_c_module_fixture.py": """
import pytest
from conftest import Leaky

@pytest.fixture(scope="module")
def leaky():
    yield Leaky()

def test_first(leaky):
    pass

def test_second():
    pass
""",
    "test_c_module_fixture_of_the_last_test.py": """
import pytest
from conftest import Leaky

@pytest.fixture(scope="module")
def leaky():
    yield Leaky()

def test_first(leaky):
    pass

def test_second(leaky):
    pass
""",
    "test_c_next_module.py": """
def test_first():
    pass
""",
    "test_d_module_of_many_objects.py": f"""
import pytest
from conftest import Leaky

MANY = []

@pytest.fixture(scope="module")
def leaky():
    yield Leaky()

def test_first(leaky):
    MANY.extend([] for _ in range({MODULE_OBJECTS_WALKED + 1000}))

def test_second():
    pass
""",
    "test_e_earlier.py": """
from conftest import Leaky

KEPT = []

def test_keeps():
    KEPT.append(Leaky())
""",
    "test_f_later.py": """
import test_e_earlier

def test_drops_what_an_earlier_module_kept():
    test_e_earlier.KEPT.clear()
""",
    "test_g_last.py": """
def test_last():
    pass
""",
    "test_a_factory_fixture.py": """
import pytest
from conftest import Leaky

@pytest.fixture
def make():
    made = []
    yield lambda: made.append(Leaky())

def test_makes(make):
    make()

def test_next():
    pass
""",
    "test_a_logged.py": """
import logging
from conftest import Leaky

def test_logs_an_exception():
    leaky = Leaky()  # in the frame the record's traceback holds
    try:
        raise ValueError("the job failed")
    except ValueError:
        logging.getLogger("job").exception("the job raised")

def test_next():
    pass
""",
}


def test_each_cycle_left_with_a_resource_fails_the_test_or_module_that_left_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text(INI)
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rE", "-p", "no:cacheprovider",
         "-p", "no:randomly", "-p", "no:xdist", "-p", "no:nbval", str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    failed = re.findall(r"^ERROR (\S+)", ran.stdout, flags=re.MULTILINE)
    assert sorted(failed) == [
        "test_a_factory_fixture.py::test_makes",  # held by its fixture, which pytest keeps
        "test_a_logged.py::test_logs_an_exception",  # held by the log record pytest keeps
        "test_a_one_test.py::test_leaves_a_cycle",  # the test's own
        "test_b_across_tests.py::test_drops",  # the module's, dropped by the test
        "test_c_module_fixture.py::test_second",  # the module's fixture: its end
        "test_c_module_fixture_of_the_last_test.py::test_second",  # the same, last test's
        "test_d_module_of_many_objects.py::test_second",  # a module's end, after a freeze
        "test_g_last.py::test_last",  # an earlier module's, dropped later: the end
    ], ran.stdout + ran.stderr
    assert "unclosed file" in ran.stdout
    assert re.search(r"^19 passed, 8 errors", ran.stdout, flags=re.MULTILINE), ran.stdout

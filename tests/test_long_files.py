"""pytest-xdist hands the longest files out first (tests/long_files.py), and the files it
names are the suite's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.long_files import LONGEST

ROOT = Path(__file__).resolve().parent.parent

CONFTEST = """
import os

from tests.long_files import LongestFirst


def pytest_xdist_make_scheduler(config, log):
    return LongestFirst(config, log, first=("test_long.py", "test_longer.py"))


def pytest_runtest_logstart(nodeid, location):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        with open("ran.txt", "a") as ran:
            ran.write(nodeid.split("::")[0] + "\\n")
"""

MODULES = {
    "test_many.py": "def test_1(): pass\ndef test_2(): pass\ndef test_3(): pass\n",
    "test_some.py": "def test_1(): pass\ndef test_2(): pass\n",
    "test_long.py": "def test_1(): pass\n",
    "test_longer.py": "def test_1(): pass\n",
}


def test_every_file_named_longest_is_in_the_suite() -> None:
    assert len(set(LONGEST)) == len(LONGEST)
    assert [path for path in LONGEST if not (ROOT / path).is_file()] == []


def test_every_browser_file_is_named_first_and_in_a_row() -> None:
    """A worker starts the browser package's servers each time it enters the package: a
    browser file named after another file, or not named (handed out last), would start
    them again in the worker that takes it."""
    browser = sorted(
        str(path.relative_to(ROOT)) for path in (ROOT / "tests" / "browser").glob("test_*.py")
    )
    assert sorted(LONGEST[: len(browser)]) == browser


def test_the_files_named_go_first_in_the_order_named_and_the_rest_as_pytest_xdist_orders_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "1", "--dist", "loadfile",
         "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:nbval", "."],
        capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    order = list(dict.fromkeys((tmp_path / "ran.txt").read_text().split()))
    # pytest-xdist's own order: the files with the most tests first
    assert order == ["test_long.py", "test_longer.py", "test_many.py", "test_some.py"]

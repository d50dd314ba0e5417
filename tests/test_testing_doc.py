"""docs/TESTING.md stays true: its Python blocks, put together, are a test module that
pytest runs and passes, every test in it (as a user would run their own), and that
mypy, run as a user's project runs it, finds no error in.

tests/test_docs.py also runs each block of docs/ on its own (there it only defines
the tests); this runs them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "TESTING.md"


def test_the_testing_guide_is_a_test_module_whose_every_test_passes(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)
    module = "\n\n".join(blocks)
    tests = re.findall(r"^def (test_\w+)\(", module, flags=re.MULTILINE)
    assert len(tests) >= 6, "the guide lost its examples"
    path = tmp_path / "test_my_jobs.py"
    path.write_text(module)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", str(path), "-v", "--no-header", "-p", "no:cacheprovider",
         "-p", "no:nbval", "-p", "no:randomly"],
        capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    passed = re.findall(r"::(test_\w+) PASSED", ran.stdout)
    assert ran.returncode == 0 and sorted(passed) == sorted(tests), ran.stdout + ran.stderr
    # What it annotates holds: a user's mypy (no config, its defaults) finds no error in
    # the module, the fakes passed where the service's types are expected included.
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "", "--no-error-summary",
         "--cache-dir", str(tmp_path / "mypy_cache"), str(path)],
        capture_output=True, text=True, check=False, timeout=300, cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},  # this tree's lldsched, as installed
    )  # fmt: skip
    assert checked.returncode == 0 and not checked.stderr, checked.stdout + checked.stderr

"""docs/TESTING.md stays true: its Python blocks, put together, are a test module that
pytest runs and passes, every test in it (as a user would run their own).

tests/test_docs.py also runs each of its blocks after the ones before it (there they
only define the tests), and type-checks the module with a user's ``mypy --strict``
(test_the_examples_users_copy_pass_a_users_mypy_strict, with the other documents'
examples, in one run); this runs the tests.
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

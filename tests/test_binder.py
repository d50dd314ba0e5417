"""Binder's environment (binder/requirements.txt plus postBuild) holds everything the
notebooks import, and installs lldsched editable, as 00 and 08 tell learners."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_CODE = [
    *sorted((ROOT / "notebooks" / "src").glob("*.py")),
    *sorted((ROOT / "notebooks").glob("*.py")),
    *sorted((ROOT / "notebooks" / "exercises").rglob("*.py")),
    *sorted((ROOT / "lldsched").rglob("*.py")),  # installed with --no-deps: its imports too
]
# the package, and modules beside the notebooks
LOCAL = {"lldsched", "jobs", "cluster_node", "exercises"}
# Installed with another requirement: IPython comes with jupyterlab's kernel.
PROVIDED = {"IPython": "jupyterlab"}
# Drivers of optional stores that no notebook opens (Binder runs no database server):
# the modules that import them say "install the extra" when they are missing.
NOT_ON_BINDER = {"psycopg"}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def requirements() -> set[str]:
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    return {
        re.split(r"[<>=!~\[ ]", line.strip())[0].lower()
        for line in lines
        if line.strip() and not line.startswith("#")
    }


def test_every_third_party_module_a_notebook_imports_is_in_binders_requirements() -> None:
    wanted = set().union(*(imported(path) for path in NOTEBOOK_CODE))
    third_party = wanted - set(sys.stdlib_module_names) - LOCAL - NOT_ON_BINDER - {"__future__"}
    needed = {PROVIDED.get(name, name).lower() for name in third_party}
    assert {"pandas", "matplotlib", "ipywidgets", "pytest"} <= needed  # the scan found them
    missing = needed - requirements()
    assert not missing, f"binder/requirements.txt lacks {sorted(missing)}"


def test_no_notebook_imports_a_driver_binder_does_not_install() -> None:
    notebooks = [path for path in NOTEBOOK_CODE if ROOT / "lldsched" not in path.parents]
    used = set().union(*(imported(path) for path in notebooks))
    assert not used & NOT_ON_BINDER, sorted(used & NOT_ON_BINDER)


def test_binder_installs_lldsched_editable_without_dependencies() -> None:
    script = (ROOT / "binder" / "postBuild").read_text()
    assert "pip install --no-deps -e ." in script

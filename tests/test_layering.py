"""The package's floor plan holds: dependencies point one way (see docs/ARCHITECTURE.md).

Every ``import`` in ``lldsched/`` is read from the source (type-only imports
under ``TYPE_CHECKING`` included), and each rule fails naming the module and
the import that breaks it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "lldsched"

VOCABULARY = {
    "lldsched.model",
    "lldsched.errors",
    "lldsched.clock",
    "lldsched.listeners",
    "lldsched.policies",
    "lldsched.persistence",
    "lldsched.storechecks",
    "lldsched.storecalls",
    "lldsched.coordination",
    "lldsched.runtime",
    "lldsched.checks",
    "lldsched.importpath",
    "lldsched.cluster",
}
THREADED, SIM, STORES, VIEWS, CLI = (
    "lldsched.threaded",
    "lldsched.sim",
    "lldsched.stores",
    "lldsched.views",
    "lldsched.cli",
)
# The two engines of stores/, each a package of its own (docs/decisions/public-api.md,
# "The store engines are folders of their own").
SQLITE, POSTGRES = "lldsched.stores.sqlite", "lldsched.stores.postgres"
# The three collaborators of the threaded scheduler, each a package of its own
# (docs/decisions/public-api.md, "`threaded/`'s three collaborators are folders of their
# own"), and the one module of the threaded runtime they may import.
GROUPS = (
    "lldsched.threaded.processes",
    "lldsched.threaded.coroutines",
    "lldsched.threaded.shared",
)
DEADLINE = "lldsched.threaded.deadline"
# Two groups of the core, each a package of its own (docs/decisions/public-api.md, "The
# core's two groups are folders of their own"), and the modules of the rest of the core
# each may import: its seams.
CORE = "lldsched.core"
CORE_GROUPS = {
    "lldsched.core.store": {"lldsched.core.names"},
    "lldsched.core.misfires": {"lldsched.core.names", "lldsched.core.task", "lldsched.core.parts"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_from(path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` in ``path`` names (a relative one resolved)."""
    base = node.module or ""
    if not node.level:
        return base
    anchor = module_name(path)
    if path.name != "__init__.py":
        anchor = anchor.rsplit(".", 1)[0]
    for _ in range(node.level - 1):
        anchor = anchor.rsplit(".", 1)[0]
    return f"{anchor}.{base}" if base else anchor


def imports_of(path: Path) -> set[str]:
    """The modules ``path`` imports (relative imports resolved)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = imported_from(path, node)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


MODULES = {module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def offending(modules: dict[str, set[str]], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{module} imports {imported}"
        for module, imported_names in modules.items()
        for imported in imported_names
        if any(within(imported, package) for package in forbidden)
    )


def of(*packages: str) -> dict[str, set[str]]:
    return {
        module: names
        for module, names in MODULES.items()
        if any(within(module, package) for package in packages) or module in packages
    }


def test_the_rules_see_every_package() -> None:
    assert {
        "lldsched.core.machine",
        "lldsched.threaded.scheduler",
        "lldsched.sim.simulation",
    } < set(MODULES)
    assert "lldsched.core.task" in MODULES["lldsched.core.machine"]


def test_the_core_schedules_and_vocabulary_import_no_runtime_store_view_or_cli() -> None:
    lower = of("lldsched.core", "lldsched.schedules", *VOCABULARY)
    assert offending(lower, (THREADED, SIM, STORES, VIEWS, CLI)) == []


def test_the_core_schedules_and_vocabulary_import_only_the_standard_library() -> None:
    lower = of("lldsched.core", "lldsched.schedules", *VOCABULARY)
    outside = sorted(
        f"{module} imports {name}"
        for module, names in lower.items()
        for name in names
        if name.split(".")[0] not in sys.stdlib_module_names | {"lldsched"}
    )
    assert outside == []


@pytest.mark.parametrize(("runtime", "other"), [(THREADED, SIM), (SIM, THREADED)])
def test_the_two_runtimes_never_import_each_other(runtime: str, other: str) -> None:
    assert offending(of(runtime), (other,)) == []


def test_stores_import_no_runtime_and_no_view() -> None:
    assert offending(of(STORES), (THREADED, SIM, VIEWS, CLI)) == []


@pytest.mark.parametrize(("engine", "other"), [(SQLITE, POSTGRES), (POSTGRES, SQLITE)])
def test_the_two_store_engines_never_import_each_other(engine: str, other: str) -> None:
    assert offending(of(engine), (other,)) == []


def test_what_the_stores_share_imports_neither_engine() -> None:
    """The modules of ``stores/`` outside the two engines' folders (the codec, the row
    checks, the contract, the in-memory store, ...) are what both engines build on: none
    imports an engine. ``lldsched.stores`` itself re-exports ``SqliteTaskStore``: its
    ``__init__`` alone may."""
    shared = {
        module: names
        for module, names in of(STORES).items()
        if module != STORES and not within(module, SQLITE) and not within(module, POSTGRES)
    }
    assert "lldsched.stores.codec" in shared and "lldsched.stores.peek" in shared
    assert offending(shared, (SQLITE, POSTGRES)) == []


def group_outside(
    group: str, modules: dict[str, set[str]], *, room: str, seams: set[str]
) -> list[str]:
    """What the modules of ``group`` import of ``room`` (the package ``group`` is in)
    outside ``group`` itself and ``seams`` (``room`` alone, the package, allowed)."""
    return sorted(
        f"{module} imports {imported}"
        for module, imported_names in modules.items()
        if within(module, group)
        for imported in imported_names
        if within(imported, room)
        and imported != room
        and not within(imported, group)
        and not any(within(imported, seam) for seam in seams)
    )


def threaded_outside(group: str, modules: dict[str, set[str]]) -> list[str]:
    """What the modules of ``group`` import of the threaded runtime outside ``group``
    itself and :data:`DEADLINE`."""
    return group_outside(group, modules, room=THREADED, seams={DEADLINE})


@pytest.mark.parametrize("group", GROUPS)
def test_a_threaded_group_imports_nothing_of_the_runtime_but_itself_and_deadline(
    group: str,
) -> None:
    """The process pool, the coroutine runner and a shared store's ``Coordinator`` are
    collaborators the scheduler's modules call: none imports another, the scheduler or
    any module of ``threaded/`` but ``deadline.py`` (``from lldsched.threaded import
    deadline`` is the package and the module: both allowed)."""
    assert set(of(group)) > {group}  # the group is a package with modules
    assert threaded_outside(group, of(group)) == []


def test_the_group_rule_names_a_planted_import() -> None:
    """The rule above fails, naming the module and the import, on any of the imports
    it forbids."""
    planted = {
        "lldsched.threaded.shared.leases": {"lldsched.threaded.deadline", "lldsched.clock"},
        "lldsched.threaded.shared.load": {"lldsched.threaded.processes.pool"},
        "lldsched.threaded.shared.decisions": {"lldsched.threaded.parts"},
        "lldsched.threaded.shared.coordinator": {"lldsched.threaded.shared.leases"},
    }
    assert threaded_outside("lldsched.threaded.shared", planted) == [
        "lldsched.threaded.shared.decisions imports lldsched.threaded.parts",
        "lldsched.threaded.shared.load imports lldsched.threaded.processes.pool",
    ]


def core_outside(group: str, modules: dict[str, set[str]]) -> list[str]:
    """What the modules of ``group`` import of the core outside ``group`` itself and its
    seams (:data:`CORE_GROUPS`)."""
    return group_outside(group, modules, room=CORE, seams=CORE_GROUPS[group])


@pytest.mark.parametrize("group", CORE_GROUPS)
def test_a_core_group_imports_of_the_core_only_itself_and_its_seams(group: str) -> None:
    """The store seen from the core (``core/store/``: its writes, outages, who holds it)
    imports of the rest of the core ``names`` alone; the misfire rule (``core/misfires/``)
    ``names``, ``task`` and ``parts`` (the mixins' base, whose verbs it calls): neither
    imports the other, the machine or the modules that build on them (``from
    lldsched.core import names`` is the package and the module: both allowed)."""
    assert set(of(group)) > {group}  # the group is a package with modules
    assert core_outside(group, of(group)) == []


def test_the_core_group_rule_names_a_planted_import() -> None:
    """The rule above fails, naming the module and the import, on any of the imports
    it forbids: another group, the machine, a module of the core beside its seams, a
    name of the core's package."""
    planted = {
        "lldsched.core.store.outagerecords": {"lldsched.core", "lldsched.core.names"},
        "lldsched.core.store.outage": {"lldsched.core.misfires.plan"},
        "lldsched.core.store.stalerows": {"lldsched.core.task", "lldsched.core.store.outage"},
        "lldsched.core.store.writes": {"lldsched.core.SchedulerCore"},
        "lldsched.core.store.use": {"lldsched.core.machine"},
    }
    assert core_outside("lldsched.core.store", planted) == [
        "lldsched.core.store.outage imports lldsched.core.misfires.plan",
        "lldsched.core.store.stalerows imports lldsched.core.task",
        "lldsched.core.store.use imports lldsched.core.machine",
        "lldsched.core.store.writes imports lldsched.core.SchedulerCore",
    ]


# The modules of the package root that serve one room, or none, each for its reason
# (docs/decisions/public-api.md, "The package root keeps its modules").
ROOT_ENTRIES = {
    # the package's first import, os and sys alone; under cli/ it would import
    # cli/__init__.py (argparse, difflib) at every ``import lldsched``
    "lldsched.startup",
    # a user's tests import it: ``lldsched.testing`` is the public path
    "lldsched.testing",
}


def room_of(module: str) -> str:
    """The room a module of the package is in: its folder under ``lldsched/``, or
    ``root`` for a module of the package root."""
    parts = module.split(".")
    if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir():
        return parts[1]
    return "root"


def single_room_modules(modules: dict[str, set[str]]) -> list[str]:
    """Each module of the package root (its ``__init__`` and ``__main__`` aside, and the
    entries of :data:`ROOT_ENTRIES`) imported by fewer than two rooms: the package's own
    re-exports (``lldsched/__init__.py``) do not count."""
    found = []
    for root_module in sorted(modules):
        if room_of(root_module) != "root" or root_module in ROOT_ENTRIES:
            continue
        if root_module in ("lldsched", "lldsched.__main__"):
            continue
        rooms = {
            room_of(module)
            for module, names in modules.items()
            if module not in (root_module, "lldsched", "lldsched.__main__")
            and any(within(name, root_module) for name in names)
        }
        if len(rooms) < 2:
            found.append(f"{root_module} serves {sorted(rooms) or 'no room'}")
    return found


def test_a_module_of_the_package_root_serves_two_rooms_at_least() -> None:
    """A module the package root keeps is shared: two of the folders (``core``,
    ``threaded``, ``sim``, ``stores``, ``views``, ``cli``, ...) import it, or one and
    another module of the root. One that serves one room alone goes in its folder."""
    assert {"lldsched.cluster", "lldsched.loopcalls", "lldsched.redaction"} <= set(MODULES)
    assert single_room_modules(MODULES) == []


def test_the_root_rule_names_a_planted_module() -> None:
    """The rule above fails, naming the module and the rooms it serves, for a module of
    the root one room alone imports, or none (the package's re-export not counted)."""
    planted = {
        "lldsched": {"lldsched.loopcalls", "lldsched.cluster"},
        "lldsched.cluster": set(),
        "lldsched.loopcalls": set(),
        "lldsched.sim.cluster": {"lldsched.cluster"},
        "lldsched.sim.awaiting": {"lldsched.loopcalls"},
        "lldsched.threaded.coroutines.runner": {"lldsched.loopcalls.LoopCalls"},
        "lldsched.views.cluster": {"lldsched.sim.cluster"},
        "lldsched.startup": set(),
        "lldsched.redaction": set(),
    }
    assert single_room_modules(planted) == [
        "lldsched.cluster serves ['sim']",
        "lldsched.redaction serves no room",
    ]


def test_only_the_cli_imports_the_design_lab_and_the_lab_imports_no_view() -> None:
    outside = {
        module: names
        for module, names in MODULES.items()
        if not within(module, "lldsched.lab") and not within(module, CLI)
    }
    assert offending(outside, ("lldsched.lab",)) == []
    assert offending(of("lldsched.lab"), (VIEWS, STORES, CLI)) == []


def test_no_two_modules_import_each_other_even_for_types() -> None:
    modules = set(MODULES)

    def targets(module: str) -> set[str]:
        return {name for name in MODULES[module] if name in modules and name != module}

    cycles = sorted(
        f"{a} <-> {b}"
        for a in modules
        for b in targets(a)
        if a < b and a in targets(b) and not _is_package_export(a, b)
    )
    assert cycles == []


def _is_package_export(a: str, b: str) -> bool:
    """A package's ``__init__`` re-exports its modules, which import their siblings by
    full name: that pair is not a cycle of meaning."""
    return within(b, a) or within(a, b)


def test_views_import_no_concrete_runtime() -> None:
    assert offending(of(VIEWS), (THREADED, SIM, CLI)) == []


def private_imports(path: Path) -> list[str]:
    """Each ``from lldsched... import _name`` in ``path``: a name private to its module
    imported by another (dunders such as ``__version__`` are not private)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = imported_from(path, node)
        if not within(base, "lldsched"):
            continue
        found.extend(
            f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {alias.name} from {base}"
            for alias in node.names
            if alias.name.startswith("_") and not alias.name.endswith("__")
        )
    return found


def test_no_module_imports_a_name_private_to_another() -> None:
    """A name with a leading underscore is its module's own; a name another module
    imports is public (in the defining module's ``__all__`` when it has one). A private
    module (``views/plots/_base.py``) is its package's: its names are plain."""
    private = [line for path in sorted(PACKAGE.rglob("*.py")) for line in private_imports(path)]
    assert private == []

"""What a user installs: the sdist and the wheel built from this tree, offline.

The sdist and the wheel are built once for the module, the way ``python -m build``
builds them (the sdist first, the wheel from the unpacked sdist), from a copy of the
tree without what git ignores, with the build backend already installed
(``--no-isolation``: ``build`` and ``setuptools`` are in the ``test`` extra). Then:

* the wheel holds every file under ``lldsched/`` (each module, ``py.typed``, and a
  data file put there must be listed in pyproject's package-data) and nothing else,
  with the license, the version ``lldsched.__version__`` says and the ``lldsched``
  script;
* the sdist holds the whole tree (docs/decisions/packaging.md, "Packaging");
* the long description both carry is the README with every link an address in the
  repository (setup.py), each to a file the sdist holds and a heading of it;
* the wheel, installed where the source tree is not, imports and runs its commands;
  with nothing but the standard library beside it (no extra), the README's examples
  run and print what they show, and each module of an extra imports or says which
  extra to install; and its messages cite a document by an address in the repository
  its metadata names, which resolves;
* every extra an "install the extra" error or the docs name exists, and brings what
  the modules of that extra import;
* Binder installs exactly the dependencies and the ``views`` and ``notebook`` extras.
"""

from __future__ import annotations

import email
import email.message
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import lldsched
from lldsched.errors import REPOSITORY
from lldsched.views import VIEWS_EXTRA
from tests.test_binder import imported
from tests.test_doc_references import ADDRESS, uncitable, unresolved_address
from tests.test_docs import python_blocks, shown_output, unprinted

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Imported by a module of an extra and installed by one of that extra's requirements.
PROVIDED_BY = {"IPython": "ipywidgets"}
# Which extra brings what the modules of each folder import.
EXTRA_OF = {"lldsched/views": "views", "lldsched/stores": "postgres"}
EXTRA_IN_TEXT = re.compile(r"lldsched\[([a-z0-9_-]+)\]")


@dataclass(frozen=True)
class Dist:
    tree: Path  # the copy the sdist was built from
    wheel_path: Path
    wheel: zipfile.ZipFile
    sdist: tarfile.TarFile
    metadata: email.message.Message


def _ignored_by_git() -> list[str]:
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return [".git", *(line.strip().rstrip("/") for line in lines if line.strip())]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dist]:
    tree = tmp_path_factory.mktemp("tree") / "lldsched"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(*_ignored_by_git()))
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
        capture_output=True,
        text=True,
    )
    # Without build or setuptools >= 77 here: `make install` (pip install -e '.[test]').
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (wheel_path,) = out.glob("lldsched-*.whl")
    (sdist_path,) = out.glob("lldsched-*.tar.gz")
    with zipfile.ZipFile(wheel_path) as wheel, tarfile.open(sdist_path) as sdist:
        (metadata_name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_string(wheel.read(metadata_name).decode())
        yield Dist(tree=tree, wheel_path=wheel_path, wheel=wheel, sdist=sdist, metadata=metadata)


def _package_files(root: Path) -> set[str]:
    """Every file of the package under ``root``, as the wheel names it."""
    return {
        path.relative_to(root).as_posix()
        for path in (root / "lldsched").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_wheel_holds_every_file_of_the_package_and_nothing_else(dist: Dist) -> None:
    in_wheel = {n for n in dist.wheel.namelist() if not n.split("/")[0].endswith(".dist-info")}
    expected = _package_files(dist.tree)
    assert {"lldsched/py.typed", "lldsched/schedules/cron/parse.py"} <= expected
    assert in_wheel == expected, (
        f"missing from the wheel: {sorted(expected - in_wheel)}; "
        f"in the wheel only: {sorted(in_wheel - expected)}"
    )


def test_the_wheel_says_the_version_the_package_says_and_ships_the_license(dist: Dist) -> None:
    assert dist.metadata["Version"] == lldsched.__version__
    assert dist.metadata["License-Expression"] == "MIT"
    names = dist.wheel.namelist()
    (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert dist.wheel.read(licence) == (ROOT / "LICENSE").read_bytes()


# Where a Markdown text links: an inline link's or image's target (``](target)``, a title
# after it allowed), a reference definition's (``[name]: target``), an HTML attribute's.
LINK_TARGET = re.compile(
    r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
    r"|^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?"
    r"|\b(?:href|src)=[\"']([^\"']+)[\"']",
    flags=re.M,
)


def link_targets(text: str) -> list[str]:
    return [
        next(group for group in match.groups() if group) for match in LINK_TARGET.finditer(text)
    ]


def sdist_description(dist: Dist) -> str:
    top = f"lldsched-{lldsched.__version__}/"
    member = dist.sdist.extractfile(f"{top}PKG-INFO")
    assert member is not None
    payload = email.message_from_bytes(member.read()).get_payload()
    assert isinstance(payload, str)
    return payload


def test_the_long_description_is_the_readme_with_every_link_an_address(dist: Dist) -> None:
    """What a package index shows, and ``importlib.metadata`` reads, has no tree to
    resolve README.md's relative links against: the description the wheel and the sdist
    carry is the README with each link an absolute address (and nothing else changed),
    an address in the repository pyproject names to a file or folder the sdist holds,
    and an anchor to one of its headings (setup.py; docs/decisions/packaging.md, "Packaging")."""
    readme = (ROOT / "README.md").read_text()
    description = dist.metadata.get_payload()
    assert isinstance(description, str)
    assert dist.metadata["Description-Content-Type"] == "text/markdown"
    assert sdist_description(dist) == description
    assert LINK_TARGET.sub("<link>", description) == LINK_TARGET.sub("<link>", readme)
    relative = [target for target in link_targets(readme) if not target.startswith("https://")]
    assert len(relative) > 40 and "docs/img/gantt.png" in relative  # the scan found them
    homepage = dict(url.split(", ", 1) for url in dist.metadata.get_all("Project-URL") or [])
    assert homepage["Homepage"] == REPOSITORY
    top = f"lldsched-{lldsched.__version__}/"
    in_sdist = {name.removeprefix(top) for name in dist.sdist.getnames()}
    folders = {str(Path(name).parent) for name in in_sdist}
    broken = []
    for target in link_targets(description):
        if not target.startswith("https://"):
            broken.append(f"not an address: {target}")
            continue
        address = ADDRESS.fullmatch(target)
        if address is None:
            continue  # another site's (Binder's)
        if address.group(1) not in in_sdist | folders:
            broken.append(f"not in the sdist: {target}")
        elif (why := unresolved_address(target, dist.tree)) is not None:
            broken.append(why)
    assert not broken, broken
    assert [ADDRESS.fullmatch(t) is not None for t in link_targets(description)].count(True) == len(
        relative
    )


def test_the_readme_names_the_wheel_the_build_writes(dist: Dist) -> None:
    """Its command that installs an extra from the wheel names the wheel's file."""
    named = re.findall(r"dist/(lldsched-\S+?\.whl)\[", (ROOT / "README.md").read_text())
    assert named == [dist.wheel_path.name]


def test_the_wheel_declares_the_lldsched_script(dist: Dist) -> None:
    (entry_points,) = [n for n in dist.wheel.namelist() if n.endswith("entry_points.txt")]
    text = dist.wheel.read(entry_points).decode()
    assert "[console_scripts]\nlldsched = lldsched.cli:main\n" in text


def test_the_sdist_holds_the_whole_tree(dist: Dist) -> None:
    top = f"lldsched-{lldsched.__version__}/"
    in_sdist = {n.removeprefix(top) for n in dist.sdist.getnames()}
    tree = {
        path.relative_to(dist.tree).as_posix() for path in dist.tree.rglob("*") if path.is_file()
    }
    missing = tree - in_sdist
    assert not missing, f"missing from the sdist: {sorted(missing)}"
    assert not [n for n in in_sdist if "__pycache__" in n or n.endswith(".pyc")]


@pytest.fixture(scope="module")
def installed(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into a folder of its own, with ``tzdata``, its one dependency
    (this environment's, linked: the install is offline)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
         "--no-compile", "--target", str(target), str(dist.wheel_path)],
        check=True, capture_output=True,
    )  # fmt: skip
    spec = importlib.util.find_spec("tzdata")
    assert spec is not None and spec.submodule_search_locations is not None
    (target / "tzdata").symlink_to(spec.submodule_search_locations[0], target_is_directory=True)
    return target


def bare(installed: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` run by a Python that sees the standard library and what ``installed``
    holds, nothing else (``-S``: no site-packages, so no pandas, matplotlib, ipywidgets
    or psycopg, whatever this environment has): what ``pip install`` of the wheel gives
    with no extra."""
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_installed_wheel_runs_without_the_source_tree(
    dist: Dist, installed: Path, tmp_path: Path
) -> None:
    target = installed
    # The target comes first on the path, before this tree and any editable install;
    # the working directory is elsewhere, so nothing is read relative to the tree.
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = "import lldsched, lldsched.cli.lab, lldsched.sim.scenario; print(lldsched.__file__)"
    where = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(target)
    script = target / "bin" / "lldsched"
    for command in (
        [sys.executable, "-m", "lldsched", "demo"],
        [sys.executable, str(script), "cron", "0 3 * * 1-5", "--start", "2026-01-05T00:00"],
    ):
        run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert run.stdout.count("\n") >= 5, run.stdout
    # Each way in names itself in its usage line.
    for command, name in (([str(script)], "lldsched"), (["-m", "lldsched"], "python -m lldsched")):
        usage = subprocess.run(
            [sys.executable, *command, "nonsense"], cwd=tmp_path, env=env,
            capture_output=True, text=True,
        )  # fmt: skip
        assert usage.returncode == 2, usage.stderr
        assert usage.stderr.startswith(f"usage: {name} [-h]"), usage.stderr


def test_the_installed_wheels_messages_cite_documents_by_addresses_that_resolve(
    dist: Dist, installed: Path, tmp_path: Path
) -> None:
    """The wheel holds no docs/: each message of the installed package that sends its
    reader to a document (an exception, a warning, a log line) gives the document's
    address in the repository the wheel's metadata names (``Homepage``), to a file the
    sdist holds and a heading of it. Read in the modules installed, and in a refusal
    raised there."""
    homepage = dict(url.split(", ", 1) for url in dist.metadata.get_all("Project-URL") or [])
    code = """
from lldsched import CronSchedule
from lldsched.errors import REPOSITORY
print(REPOSITORY)
try:
    CronSchedule("30 2 * * mon-fri /usr/local/bin/backup")
except ValueError as error:
    print(error)
"""
    run = bare(installed, code, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    repository, refusal = run.stdout.splitlines()
    assert repository == homepage["Homepage"]
    (cited,) = re.findall(r"https://[^\s)]+", refusal)
    assert cited == f"{repository}/blob/main/docs/CRON.md#moving-a-crontab", refusal
    assert unresolved_address(cited, dist.tree) is None
    modules = sorted((installed / "lldsched").rglob("*.py"))
    assert len(modules) > 100  # the scan found them
    found = [
        problem
        for module in modules
        for problem in uncitable(module.read_text(), str(module.relative_to(installed)), dist.tree)
    ]
    assert not found, found


README_BLOCKS = python_blocks(ROOT / "README.md")


@pytest.mark.parametrize(
    ("line", "block"), README_BLOCKS, ids=[f"README.md:{line}" for line, _ in README_BLOCKS]
)
def test_the_readmes_examples_run_on_the_wheel_without_extras(
    installed: Path, tmp_path: Path, line: int, block: str
) -> None:
    """The README's first scheduler and its day replayed are what a user runs after
    ``pip install`` with no extra (the package "needs only the standard library and
    tzdata"): each runs so, and prints what it shows."""
    run = bare(installed, block, tmp_path)
    assert run.returncode == 0, f"README.md:{line}: {run.stderr[-2000:]}"
    assert unprinted(shown_output(block), run.stdout.splitlines()) == []


def _modules_of(folder: str) -> list[str]:
    return sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in (ROOT / folder).rglob("*.py")
    )


def test_a_module_of_an_extra_imported_without_it_names_the_extra(
    installed: Path, tmp_path: Path
) -> None:
    """Every module of ``lldsched.views`` and the PostgreSQL store, imported where the
    wheel is installed with no extra: it imports (its packages are imported when used:
    the widgets), or it raises the ImportError that names the extra to install."""
    modules = [*_modules_of("lldsched/views"), "lldsched.stores.postgres"]
    assert len(modules) > 20 and "lldsched.views.plots.gantt" in modules  # the scan found them
    code = f"""
import importlib
for name in {modules!r}:
    try:
        importlib.import_module(name)
    except ImportError as exc:
        print(name, "|", exc)
    else:
        print(name, "|", "imported")
"""
    run = bare(installed, code, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    said = dict(line.split(" | ", 1) for line in run.stdout.splitlines())
    assert said.keys() == set(modules)
    refused = {name: why for name, why in said.items() if why != "imported"}
    assert "lldsched.views.frames" in refused and "lldsched.stores.postgres" in refused
    for name, why in refused.items():
        extra = "postgres" if name.startswith("lldsched.stores") else EXTRA_OF["lldsched/views"]
        assert f"install the extra: pip install 'lldsched[{extra}]'" in why, (name, why)
    assert said["lldsched.views.report"] == "imported"  # standard library only: the README's


def _requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip())[0].lower()


def _third_party_imports(path: Path) -> set[str]:
    """The top-level names of what the module at ``path`` imports from outside the
    standard library and lldsched, at any depth (inside functions too)."""
    return imported(path) - set(sys.stdlib_module_names) - {"lldsched", "__future__"}


def _extra_requirements(extra: str) -> set[str]:
    """The distributions ``extra`` installs, through the extras it includes too."""
    names: set[str] = set()
    for requirement in PYPROJECT["project"]["optional-dependencies"][extra]:
        included = re.fullmatch(r"lldsched\[([a-z0-9_-]+)\]", requirement)
        names |= _extra_requirements(included[1]) if included else {_requirement_name(requirement)}
    return names


def test_every_extra_a_message_or_a_document_names_exists(dist: Dist) -> None:
    declared = set(dist.metadata.get_all("Provides-Extra") or [])
    assert {"views", "notebook", "postgres"} <= declared
    texts = [*(ROOT / "lldsched").rglob("*.py"), ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    named = {name for path in texts for name in EXTRA_IN_TEXT.findall(path.read_text())}
    assert {"views", "postgres"} <= named  # the scan found them
    assert named <= declared, f"named but not declared: {sorted(named - declared)}"
    assert EXTRA_IN_TEXT.findall(VIEWS_EXTRA) == [EXTRA_OF["lldsched/views"]]


@pytest.mark.parametrize("folder", sorted(EXTRA_OF))
def test_each_extra_brings_what_its_modules_import(folder: str) -> None:
    modules = (ROOT / folder).rglob("*.py")
    needed = {PROVIDED_BY.get(n, n).lower() for p in modules for n in _third_party_imports(p)}
    assert needed, f"{folder} imports no third-party package: the scan is broken"
    missing = needed - _extra_requirements(EXTRA_OF[folder])
    assert not missing, f"{folder} imports {sorted(missing)}, not in [{EXTRA_OF[folder]}]"


def test_the_rest_of_the_package_imports_only_the_standard_library() -> None:
    folders = [ROOT / folder for folder in EXTRA_OF]
    outside = [
        path
        for path in (ROOT / "lldsched").rglob("*.py")
        if not any(path.is_relative_to(folder) for folder in folders)
    ]
    assert len(outside) > 50  # the scan found them
    offenders = {str(p.relative_to(ROOT)): _third_party_imports(p) for p in outside}
    assert not {path: names for path, names in offenders.items() if names}


def test_binder_installs_the_dependencies_and_the_notebook_extras() -> None:
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    binder = sorted(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    extras = PYPROJECT["project"]["optional-dependencies"]
    wanted = [*PYPROJECT["project"]["dependencies"], *extras["views"], *extras["notebook"]]
    pyproject = sorted(r.split("#")[0].strip() for r in wanted if not r.startswith("lldsched["))
    assert binder == pyproject

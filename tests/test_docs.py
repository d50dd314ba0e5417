"""The documents stay true: what they show runs, and what they draw is the code.

* the package diagram of docs/ARCHITECTURE.md is the package's real imports;
* the README's ``make demo`` transcript is what the demo prints (``tests/test_demo.py``
  runs the demo against the same text);
* the command transcripts of docs/CRON.md are what ``python -m lldsched cron`` prints;
* every Python block of docs/*.md runs, unless the line above it says
  ``<!-- not run: ... -->`` (a deployment example that needs a server or an app).
"""

from __future__ import annotations

import re
import shlex
import sys
import types
from pathlib import Path

import pytest

from tests.test_demo import EXPECTED as DEMO_OUTPUT
from tests.test_layering import MODULES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "lldsched"


# --- the package diagram -------------------------------------------------------------

NODE = re.compile(r'^\s*(\w+)\["(.*)"\]\s*$')
ARROW = re.compile(r"^\s*(\w+)\s*-->\s*(\w+)\s*$")
# Every box imports these two; the diagram leaves those arrows out (its text says so).
IMPLIED = {"vocab", "schedules"}


def diagram() -> tuple[dict[str, str], dict[str, list[str]], set[tuple[str, str]]]:
    """The mermaid block of ARCHITECTURE.md: each box's package or modules (a folder
    box maps ``lldsched.<folder>``; another box maps each module it names), the names
    each box lists, and the arrows."""
    text = (DOCS / "ARCHITECTURE.md").read_text()
    (block,) = re.findall(r"```mermaid\n(.*?)```", text, flags=re.DOTALL)
    owners: dict[str, str] = {}
    listed: dict[str, list[str]] = {}
    arrows: set[tuple[str, str]] = set()
    for line in block.splitlines():
        if node := NODE.match(line):
            box, label = node.groups()
            head, *rest = label.split("<br/>")
            if head.endswith("/"):
                owners[f"lldsched.{head.rstrip('/')}"] = box
                names = " · ".join(rest)
                listed[box] = [name.strip() for name in names.split("·")] if "·" in names else []
            else:
                for name in head.split("·"):
                    owners[f"lldsched.{name.strip()}"] = box
        elif arrow := ARROW.match(line):
            arrows.add((arrow.group(1), arrow.group(2)))
    return owners, listed, arrows


def box_of(module: str, owners: dict[str, str]) -> str | None:
    if module == "lldsched.__main__":
        return owners.get("lldsched.cli")
    for prefix in sorted(owners, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return owners[prefix]
    return None


def test_every_module_of_the_package_is_in_a_box_of_the_diagram() -> None:
    owners, _, _ = diagram()
    outside = sorted(m for m in MODULES if m != "lldsched" and box_of(m, owners) is None)
    assert outside == [], "modules the package diagram does not place"


def test_every_name_in_a_box_is_a_module_of_its_folder() -> None:
    owners, listed, _ = diagram()
    stale = []
    for package, box in owners.items():
        folder = PACKAGE.joinpath(*package.split(".")[1:])
        if not folder.is_dir() and not folder.with_suffix(".py").is_file():
            stale.append(package)
        for name in listed.get(box, []):
            if not (folder / f"{name}.py").is_file() and not (folder / name).is_dir():
                stale.append(f"{package}: {name}")
    assert stale == []


def test_the_arrows_of_the_diagram_are_the_imports_between_its_boxes() -> None:
    owners, _, arrows = diagram()
    found: dict[tuple[str, str], str] = {}
    for module, imported in MODULES.items():
        source = box_of(module, owners)
        for name in imported:
            if name not in MODULES or name == "lldsched" or module == "lldsched":
                continue
            target = box_of(name, owners)
            if source and target and source != target:
                found.setdefault((source, target), f"{module} imports {name}")
    undrawn = sorted(
        f"{a} --> {b} ({why})"
        for (a, b), why in found.items()
        if (a, b) not in arrows and b not in IMPLIED
    )
    assert undrawn == [], "imports between boxes that the diagram has no arrow for"
    drawn_not_made = sorted(f"{a} --> {b}" for a, b in arrows if (a, b) not in found)
    assert drawn_not_made == [], "arrows that no module makes"


# --- transcripts ---------------------------------------------------------------------


def test_the_readmes_demo_transcript_is_what_the_demo_prints() -> None:
    readme = (ROOT / "README.md").read_text()
    after = readme.split("`make demo` prints", 1)[1]
    (transcript,) = re.findall(r"```\n(.*?)```", after, flags=re.DOTALL)[:1]
    assert transcript == DEMO_OUTPUT


def cron_transcripts() -> list[tuple[str, str]]:
    text = (DOCS / "CRON.md").read_text()
    found = []
    for block in re.findall(r"```\n(\$ python -m lldsched cron .*?)```", text, flags=re.DOTALL):
        command, _, output = block.partition("\n")
        found.append((command.removeprefix("$ python -m lldsched "), output))
    return found


@pytest.mark.parametrize(("command", "output"), cron_transcripts())
def test_the_cron_commands_of_cron_md_print_what_it_shows(
    command: str, output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from lldsched.cli import main

    assert main(shlex.split(command)) in (0, None)
    assert capsys.readouterr().out == output


def test_cron_md_shows_its_command_transcripts() -> None:
    assert len(cron_transcripts()) == 2


# --- Python blocks of docs/ ----------------------------------------------------------


def python_blocks() -> list[tuple[str, str]]:
    blocks = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text()
        for match in re.finditer(
            r"(?:^([^\n]*)\n)?```python\n(.*?)```", text, flags=re.MULTILINE | re.DOTALL
        ):
            if match.group(1) and match.group(1).startswith("<!-- not run"):
                continue
            line = text[: match.start(2)].count("\n")
            blocks.append((f"{path.name}:{line}", match.group(2)))
    return blocks


@pytest.mark.parametrize(("where", "block"), python_blocks(), ids=[w for w, _ in python_blocks()])
def test_every_python_block_of_the_docs_runs(
    where: str, block: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module of its own, as a reader's script is: a dataclass defined in a block looks
    # its module up in sys.modules.
    module = types.ModuleType("docs")
    monkeypatch.setitem(sys.modules, "docs", module)
    exec(compile(block, where, "exec"), module.__dict__)

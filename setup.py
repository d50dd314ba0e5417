"""The one field the build computes: the long description, README.md with every link
made an address (docs/decisions/packaging.md, "Packaging"); the rest is pyproject.toml's.

README.md's links are relative to the tree (``docs/GUIDE.md``, ``#before-you-trust-it``,
``docs/img/gantt.png``): GitHub and a clone resolve them. A package index's page, and
whatever reads the installed metadata (``importlib.metadata``), has no tree, so the
sdist's and the wheel's description gives each one its address in the repository
pyproject names (``[project.urls]`` Homepage), as its main branch has it: a page on
GitHub, an image by its bytes (an index shows an image from its address).
tests/test_packaging.py checks every link of the description a wheel carries.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
IMAGE = re.compile(r"(!\[[^\]]*\]\()([^)\s]+)\)")
LINK = re.compile(r"(\]\()([^)\s]+)\)")
ABSOLUTE = re.compile(r"[a-z][a-z0-9+.-]*:", flags=re.I)  # https:, mailto:


def repository() -> str:
    """The repository's address: pyproject's Homepage."""
    pyproject = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    homepage: str = pyproject["project"]["urls"]["Homepage"]
    return homepage.rstrip("/")


def absolute_links(text: str, home: str) -> str:
    """``text`` (README.md) with each relative link given its address under ``home``:
    an image its bytes' (``raw.githubusercontent.com``), a file or an anchor of the README
    its page's (``blob/main``, GitHub's view, which sends a folder on to ``tree``)."""
    raw = home.replace("//github.com/", "//raw.githubusercontent.com/") + "/main/"
    page = f"{home}/blob/main/"

    def made_absolute(base: str) -> Callable[[re.Match[str]], str]:
        def absolute(match: re.Match[str]) -> str:
            target = match.group(2)
            if ABSOLUTE.match(target):
                return match.group(0)
            where = f"README.md{target}" if target.startswith("#") else target.removeprefix("./")
            return f"{match.group(1)}{base}{where})"

        return absolute

    return LINK.sub(made_absolute(page), IMAGE.sub(made_absolute(raw), text))


if __name__ == "__main__":  # as setuptools runs it
    setup(
        long_description=absolute_links((HERE / "README.md").read_text("utf-8"), repository()),
        long_description_content_type="text/markdown",
    )

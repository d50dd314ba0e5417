"""``python -m lldsched``: the command line of :mod:`lldsched.cli`.

``python -m lldsched.__main__`` runs this module too, the same way (:mod:`lldsched.startup`
knows both).  Run by its path (``python lldsched/__main__.py``, ``python lldsched/``), it
refuses, before importing anything of the package: Python puts the package's own folder
on ``sys.path`` then, and the ``lldsched`` it imports is whichever ``sys.path`` finds,
maybe not the one whose file was named, or none (docs/decisions/command-line.md, "The command
line").
"""

import contextlib
import sys

if __name__ == "__main__" and (__spec__ is None or __spec__.name != "lldsched.__main__"):
    if sys.stderr is not None:  # a closed stderr (2>&-): the line is lost, not the status
        with contextlib.suppress(OSError):  # a stderr nobody reads, a full disk: likewise
            print(
                "error: run the command line as 'python -m lldsched' or the 'lldsched' "
                f"script, not by the path of its file ({sys.argv[0]!r})",
                file=sys.stderr,
            )
    sys.exit(2)  # bad arguments: refused before any work

from lldsched.cli import main  # after the refusal: this imports the package

if __name__ == "__main__":
    sys.exit(main(prog="python -m lldsched"))

"""Views: what a run looks like to a person.

:mod:`~lldsched.views.report` (text summaries, standard library only),
:mod:`~lldsched.views.frames`, :mod:`~lldsched.views.tables` and
:mod:`~lldsched.views.cluster` (pandas), :mod:`~lldsched.views.plots` (matplotlib),
:mod:`~lldsched.views.widgets` and :mod:`~lldsched.views.interact` (ipywidgets).
Each is typed
against the runtime protocols of :mod:`lldsched.runtime`, never a concrete
runtime, and each third-party import fails with an error naming the extra to
install.  Nothing here is imported by ``import lldsched``.
"""

from __future__ import annotations

__all__ = ["VIEWS_EXTRA", "missing_extra"]

VIEWS_EXTRA = "pip install 'lldsched[views]'"
"""What installs the views' third-party packages (pandas, numpy, matplotlib, ipywidgets):
the ``views`` extra of pyproject.toml (``notebook`` includes it)."""


def missing_extra(module: str, packages: str, exc: ImportError) -> ImportError:
    """The error a view raises when a package it needs is missing: the view, the
    packages, why the import failed, and the extra that installs them."""
    return ImportError(f"{module} needs {packages} ({exc}); install the extra: {VIEWS_EXTRA}")

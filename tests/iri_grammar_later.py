"""jsonschema's IRI grammar, built when an IRI is first checked rather than as each
pytest process starts (a plugin loaded with ``-p tests.iri_grammar_later``: the
Makefile's ``pytest``).

nbval's import of nbformat imports jsonschema, whose format checkers import
``rfc3987_syntax``, which builds some forty Earley parsers from its grammar as it is
imported: 1.8 s of CPU in every pytest process of a run (the controller's before any
worker starts, then each worker's), where no test of the suite checks an IRI. A
``-p`` plugin is imported before the plugins of installed packages (nbval's), so this
one puts a stand-in for ``rfc3987_syntax`` in ``sys.modules`` first: jsonschema takes
its ``is_valid_syntax`` from it, and the first call imports the real module (its
grammar and parsers, built as before) and answers with it, as every later call does.
What any check answers is unchanged (``tests/test_iri_grammar_later.py``); only when
the grammar is built moves (docs/decisions/parallel-tests.md, "The IRI grammar is
built when an IRI is checked").
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

NAME = "rfc3987_syntax"


class GrammarLater(types.ModuleType):
    """The stand-in: every name but :func:`is_valid_syntax` is the real module's, which
    naming it imports.  Not a module's own attributes (``__file__``, ``__loader__``,
    which the import system asks for): those are the stand-in's, or it would import the
    real module at jsonschema's import after all."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(real(), name)


def real() -> types.ModuleType:
    """The real ``rfc3987_syntax``, imported (its grammar built) the first time."""
    if isinstance(sys.modules.get(NAME), GrammarLater):
        del sys.modules[NAME]
    return importlib.import_module(NAME)


def is_valid_syntax(term: str, value: str) -> bool:
    """``rfc3987_syntax.is_valid_syntax``: what jsonschema's ``iri`` and
    ``iri-reference`` format checks call."""
    return bool(real().is_valid_syntax(term, value))


def install() -> bool:
    """Put the stand-in in ``sys.modules``; False, changing nothing, where jsonschema or
    ``rfc3987_syntax`` is imported already, or ``rfc3987_syntax`` is not installed."""
    if NAME in sys.modules or "jsonschema" in sys.modules:
        return False
    spec = importlib.util.find_spec(NAME)
    if spec is None:
        return False
    stand_in = GrammarLater(NAME, "rfc3987_syntax, imported when first used")
    stand_in.__spec__ = spec
    stand_in.__path__ = list(spec.submodule_search_locations or ())  # its submodules
    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[NAME] = stand_in
    return True


install()

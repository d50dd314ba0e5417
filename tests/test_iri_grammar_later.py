"""jsonschema's IRI checks answer the same with ``tests/iri_grammar_later.py``'s stand-in
as without it, and the grammar is built at the first check, not at jsonschema's import
(docs/decisions/parallel-tests.md, "The IRI grammar is built when an IRI is checked").
Each side runs in an interpreter of its own: in this one jsonschema is imported
already."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Valid and invalid IRIs and IRI references: an absolute IRI with non-ASCII letters, an
# IPv6 host, a query and a fragment; a relative reference; a space, a bad
# percent-escape, a scheme-less "IRI", an unclosed IPv6 literal.
VALUES = [
    "https://example.org/straße?ä=1#ö",
    "http://[::1]:8080/a/b",
    "urn:isbn:0451450523",
    "../relative/path?x#y",
    "",
    "http://exa mple.org/",
    "http://example.org/%zz",
    "no scheme here",
    "http://[::1/",
]

PROGRAM = """
import json, sys
sys.path.insert(0, {root!r})
if {stand_in!r}:
    import tests.iri_grammar_later as later
    assert later.install() is False  # the import installed it already
import jsonschema
built_at_import = "lark" in sys.modules
checker = jsonschema.FormatChecker()
verdicts = [
    [form, value, checker.conforms(value, form)]
    for form in ("iri", "iri-reference")
    for value in {values!r}
]
print(json.dumps({{"built_at_import": built_at_import, "verdicts": verdicts,
                  "built_after": "lark" in sys.modules}}))
"""


def checked(*, stand_in: bool) -> dict[str, Any]:
    program = PROGRAM.format(root=str(ROOT), stand_in=stand_in, values=VALUES)
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_iri_checks_answer_as_without_the_stand_in_and_build_the_grammar_when_used() -> None:
    real = checked(stand_in=False)
    later = checked(stand_in=True)
    assert real["built_at_import"] is True  # the cost the stand-in moves
    assert later["built_at_import"] is False
    assert later["verdicts"] == real["verdicts"]
    verdicts = {(form, value): answer for form, value, answer in real["verdicts"]}
    assert verdicts["iri", "https://example.org/straße?ä=1#ö"] is True
    assert verdicts["iri", "http://exa mple.org/"] is False
    assert verdicts["iri", "../relative/path?x#y"] is False
    assert verdicts["iri-reference", "../relative/path?x#y"] is True
    assert later["built_after"] is True

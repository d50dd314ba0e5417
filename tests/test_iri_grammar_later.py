"""jsonschema's IRI checks answer with ``tests/iri_grammar_later.py``'s stand-in what the
real grammar answers, and the grammar is built at the first check, not at jsonschema's
import (docs/decisions/parallel-tests.md, "The IRI grammar is built when an IRI is
checked").  In an interpreter of its own: in this one jsonschema is imported already."""

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
import tests.iri_grammar_later as later
assert later.install() is False  # the import installed it already
import jsonschema
built_at_import = "lark" in sys.modules
checker = jsonschema.FormatChecker()
checked = [
    [form, value, checker.conforms(value, form)]
    for form in ("iri", "iri-reference")
    for value in {values!r}
]
import rfc3987_syntax  # the real module now, its grammar built by the first check
parsed = [
    [form, value, rfc3987_syntax.is_valid_syntax(form.replace("-", "_"), value)]
    for form in ("iri", "iri-reference")
    for value in {values!r}
]
print(json.dumps({{"built_at_import": built_at_import, "checked": checked,
                  "parsed": parsed, "real": type(rfc3987_syntax).__name__}}))
"""


def test_iri_checks_answer_as_the_grammar_does_and_build_it_when_first_used() -> None:
    """One interpreter (jsonschema's import with the grammar is 1.8 s of CPU): the
    stand-in installed as ``-p`` installs it, jsonschema imported without the grammar,
    its checks answering what the real module's parser answers.  Had jsonschema not
    found ``is_valid_syntax`` (the stand-in's import failing), it would check no IRI:
    every value would pass, the invalid ones too."""
    program = PROGRAM.format(root=str(ROOT), values=VALUES)
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    assert answer["built_at_import"] is False
    assert answer["real"] == "module"
    assert answer["checked"] == answer["parsed"]
    verdicts = {(form, value): verdict for form, value, verdict in answer["checked"]}
    assert verdicts["iri", "https://example.org/straße?ä=1#ö"] is True
    assert verdicts["iri", "http://exa mple.org/"] is False
    assert verdicts["iri", "../relative/path?x#y"] is False
    assert verdicts["iri-reference", "../relative/path?x#y"] is True

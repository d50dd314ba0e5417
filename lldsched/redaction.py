"""Passwords out of what a message shows: the one rule, for every message of the package.

:func:`hide_passwords` replaces the password of a URI's user part
(``scheme://user:secret@host``) and the value of a password-like key (``password=``, a
misspelt ``pasword=``: :data:`PASSWORD_KEY`; a libpq key/value dsn's, a URI query's)
with ``***``, by pattern, in any text: what the PostgreSQL store shows of a dsn libpq
cannot parse (:func:`~lldsched.stores.postgres.redact.redact`), a
URL given to the SQLite store as a path (:mod:`~lldsched.stores.sqlite.file`), and a
dsn or path given to a runtime as its ``store`` (:mod:`~lldsched.core.machine`).  The
patterns are exported for the PostgreSQL store, which finds the password itself to
scrub it from libpq's own words.
"""

from __future__ import annotations

import re

__all__ = ["PASSWORD_IN_URI", "PASSWORD_KEY", "hide_passwords"]

PASSWORD_IN_URI = re.compile(r"(://[^:/?#]*:)(.*?)@(?=[^@/?#]*(?:[/?#]|$))")
"""A URI's password: group 1 is what comes before it, group 2 the password, up to the
``@`` after which the host holds none (a password may hold an ``@`` or a ``/`` not
percent-encoded)."""

PASSWORD_KEY = re.compile(
    r"((?<![A-Za-z0-9_])[A-Za-z0-9_]*(?:pas|pss|pw|wrd|word|secret|token)[A-Za-z0-9_]*"
    r"\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)",
    re.IGNORECASE,
)
"""A password-like key's value (quoted or not): group 1 the key, group 2 the value.  A
key is password-like if its name holds ``pas``, ``pss``, ``pw``, ``wrd``, ``word``,
``secret`` or ``token``: ``password``, ``sslpassword``, ``PGPASSWORD``, and the ways it
is misspelt (``pasword``, ``passwd``, ``pssword``, ``paswrd``, ``pwd``), whose value is
the password all the same (was ``password`` alone: ``Scheduler(store="host=h
pasword=s3cret")`` quoted it)."""


def hide_passwords(text: str) -> str:
    """``text`` with every password the patterns find replaced by ``***``."""
    return PASSWORD_KEY.sub(r"\1***", PASSWORD_IN_URI.sub(r"\1***@", text))

"""What a message of the PostgreSQL store shows of a dsn: its passwords hidden.

:func:`redact` is the dsn as every message, log line and ``repr`` names it (parsed by
libpq, or by pattern when it cannot be: :func:`redact_by_pattern`), and :func:`scrubbed`
is a psycopg error's words with the dsn's secrets replaced by ``***``, since libpq
quotes the part of a dsn it cannot parse (and, for a server in a state an operator put it
in, what that means: :func:`_advice`).  The rule is one for both: a message shows the
value of a key libpq itself displays (:func:`shown_keys`), and no other
(:func:`_secrets`).  The pattern that finds a password in any text is
:mod:`lldsched.redaction`'s; psycopg's import is
:mod:`~lldsched.stores.postgres.driver`'s.
"""

from __future__ import annotations

import functools
import re

from lldsched.redaction import PASSWORD_IN_URI, PASSWORD_KEY, hide_passwords
from lldsched.stores.postgres.driver import conninfo, pq, psycopg

__all__ = ["libpq_keys", "redact", "redact_by_pattern", "scrubbed", "shown_keys"]


def redact(dsn: str) -> str:
    """``dsn`` with every value a message may not show replaced by ``***`` (key/value or
    URI form, parsed or not): see :func:`_secrets`.  Any ``str`` will do: one libpq
    cannot be given (a NUL, a lone surrogate) is redacted by pattern, as one it cannot
    parse, the NUL and the surrogate ending a key or a value as a blank does.

    Every message that names the dsn goes through here: a password never reaches
    a log or an exception.
    """
    parts = _parsed(dsn)
    if parts is None:
        return redact_by_pattern(dsn)
    shown = shown_keys()
    return conninfo.make_conninfo(
        "", **{key: value if key in shown else "***" for key, value in parts.items()}
    )


def redact_by_pattern(dsn: str) -> str:
    """:func:`redact` of a dsn libpq cannot parse, or should not be asked to: one the
    store refuses because libpq would misread it (a URI whose password holds an ``@``:
    libpq takes what follows it for the host, and would show it)."""
    return _tokens(dsn).sub(_hide_token, hide_passwords(dsn))


def _parsed(dsn: str) -> dict[str, str | int | None] | None:
    """libpq's keys and values of ``dsn``; None for one it cannot parse, or cannot be
    given at all: a NUL would end its C string there (libpq would read what comes
    before it alone), and a lone surrogate cannot be encoded (``UnicodeEncodeError``)."""
    if _UNGIVEN.search(dsn):
        return None
    try:
        return conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return None


@functools.cache
def shown_keys() -> frozenset[str]:
    """The libpq keys whose values a message may show: those libpq itself displays
    (not ``password``, ``sslpassword``, ``oauth_client_secret``, marked ``*``, nor the
    debug keys, such as ``scram_client_key``, marked ``D``)."""
    return frozenset(
        option.keyword.decode() for option in pq.Conninfo.get_defaults() if not option.dispchar
    )


@functools.cache
def libpq_keys() -> frozenset[str]:
    """Every key libpq knows: a word of a dsn libpq cannot parse that is one of them is
    a key that lost its ``=``, which a message may name (not its value)."""
    return frozenset(option.keyword.decode() for option in pq.Conninfo.get_defaults())


_UNGIVEN = re.compile(r"[\x00\ud800-\udfff]")
"""What libpq cannot be given: a NUL, a lone surrogate (an undecodable byte of a file
name or an environment variable, as Python decodes one)."""

_URI = re.compile(r"\s*postgres(?:ql)?://", re.IGNORECASE)
"""The start of a libpq URI (the rest is key/value form)."""

# A key/value pair of a dsn libpq cannot parse: a key/value dsn's, or a URI query's.
# A blank, a NUL or a lone surrogate ends a key or a value (a URI query's '&' and '#'
# too), and may begin the next.
_PAIR = (
    r"(?:^|(?<=[\s?&\x00\ud800-\udfff]))([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"
    r"('(?:[^'\\]|\\.)*'|[^\s&#\x00\ud800-\udfff]+)"
)

# A word of a key/value dsn libpq cannot parse that is no key=value pair (a key that
# lost its '=', or a value whose key did: ``password secret``): _PAIR or this, the first
# that matches, from left to right (a quoted value's words are its pair's).
_PAIR_OR_WORD = (
    rf"{_PAIR}|(?:^|(?<=[\s\x00\ud800-\udfff]))([^\s=\x00\ud800-\udfff]+)"
    r"(?=[\s\x00\ud800-\udfff]|$)"
)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """:data:`_PAIR` or :data:`_PAIR_OR_WORD` compiled, once, when a dsn libpq cannot
    parse first needs it.  Not at import: their classes that negate ``\\s`` beside the
    surrogates' range take about 14 ms of CPU to compile, nearly all of this module's
    import, in every process that opens a PostgreSQL store (one whose dsn parses never
    uses them)."""
    return re.compile(pattern)


def _tokens(dsn: str) -> re.Pattern[str]:
    """What :func:`redact` and :func:`_secrets` find in ``dsn``, which libpq cannot
    parse: a URI's query pairs, or a key/value dsn's pairs and words."""
    return _compiled(_PAIR if _URI.match(dsn) else _PAIR_OR_WORD)


def _hide_token(token: re.Match[str]) -> str:
    """A pair :data:`_PAIR` found, its value hidden unless libpq displays its key's; a
    word :data:`_PAIR_OR_WORD` found, shown if it is a key libpq knows (``password``
    that lost its ``=``) or ``***``, hidden otherwise (the value after such a key, or a
    key and its value run together: ``passwordsecret``)."""
    if token.group(1) is not None:
        return token.group(0) if token.group(1) in shown_keys() else f"{token.group(1)}=***"
    return token.group(0) if token.group(3) in libpq_keys() | {"***"} else "***"


def _secrets(dsn: str) -> list[str]:
    """The values ``dsn`` holds that no message shows: the password, and the value of
    every key but those libpq displays (:func:`shown_keys`), a key libpq does not know
    included (a misspelled ``pasword=``, whose value is the password), and, in a
    key/value dsn libpq cannot parse, every word that is not a key libpq knows.  For a
    dsn libpq cannot parse, found by pattern; longest first, so none is left half
    hidden."""
    parts = _parsed(dsn)
    if parts is None:
        values = [found.group(2).strip("'") for found in PASSWORD_IN_URI.finditer(dsn)]
        values += [found.group(2).strip("'") for found in PASSWORD_KEY.finditer(dsn)]
        for token in _tokens(dsn).finditer(dsn):
            key, value = token.group(1, 2)
            if key is not None:  # a pair (_PAIR's groups); else a word (the third)
                if key not in shown_keys():
                    values.append(value.strip("'"))
            elif token.group(3) not in libpq_keys():
                values.append(token.group(3))
    else:
        shown = shown_keys()
        values = [str(value) for key, value in parts.items() if key not in shown]
    return sorted({value for value in values if value}, key=len, reverse=True)


def scrubbed(exc: BaseException, dsn: str) -> str:
    """``str(exc)`` with the password ``dsn`` carries replaced by ``***``: libpq quotes
    the part of a dsn it cannot parse, which may be the password.  Every message and
    log line that shows a psycopg error goes through here, so it also adds what an
    error whose cause PostgreSQL's words leave out means (:func:`_advice`: a standby, the
    store's tables dropped, a lock held).  A secret shorter than
    :data:`_SHORT` characters is replaced where it stands alone, not inside a word:
    ``pasword=a`` made libpq's ``invalid connection option`` ``inv***lid``."""
    reason = str(exc).strip()
    for secret in _secrets(dsn):
        if len(secret) >= _SHORT:
            reason = reason.replace(secret, "***")
        else:
            reason = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", "***", reason)
    first, newline, rest = reason.partition("\n")  # psycopg's LINE and caret after it
    return first + _advice(exc) + newline + rest


def _advice(exc: BaseException) -> str:
    """What an error of the server that PostgreSQL's words leave unexplained means for a
    store, and what to do ("" for any other): the server's state an operator changed
    under a running store, found by the error's SQLSTATE.  PostgreSQL says "cannot
    execute UPDATE in a read-only transaction", not that the dsn now reaches a standby;
    "relation does not exist", not that the store's own tables were dropped under it;
    "canceling statement due to statement timeout", not that a statement waits for a
    lock the store's own statements never hold that long."""
    state = getattr(exc, "sqlstate", None)
    primary = str(getattr(getattr(exc, "diag", None), "message_primary", None) or "")
    if state == "25006":  # read_only_sql_transaction
        return (
            " (the server takes no writes: a standby, as a failover leaves the dsn reaching, "
            "or default_transaction_read_only on for the role or the database; nothing is "
            "written until the dsn reaches a primary)"
        )
    if state == "42P01":  # undefined_table
        return (
            " (the store's tables are gone from the schema its sessions use: dropped, or the "
            "database or schema recreated, since the store was opened; restore them from a "
            "backup, or restart the service to create them empty)"
        )
    if state == "57014" and "statement timeout" in primary:  # query_canceled
        return (
            " (the statement ran past the store's timeout: a lock another session holds on "
            "the store's tables, as LOCK TABLE takes (pg_locks names it), or a server too "
            "busy to answer in time)"
        )
    if state == "55P03":  # lock_not_available: a lock_timeout the store does not set
        return (
            " (a lock_timeout set for the role or the database ran out: another session "
            "holds a lock on the store's tables (pg_locks names it))"
        )
    return ""


_SHORT = 4
"""The length from which a secret is replaced wherever it is in libpq's words (inside a
word too: libpq may quote a password run into other text); a shorter one is a part of
too many words."""

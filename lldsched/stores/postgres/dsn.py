"""The dsn a :class:`~lldsched.stores.postgres.PostgresTaskStore` is given, checked at
open: one libpq cannot be given (not a ``str``, a NUL, a lone surrogate, a URI's user
or password holding an ``@`` or a ``/`` not percent-encoded) is refused with a
:class:`~lldsched.errors.ValidationError` naming it, its passwords hidden
(:func:`check_dsn`).  How a dsn is shown in every message (the passwords as ``***``) is
:func:`~lldsched.stores.postgres.redact.redact`'s, which this module uses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lldsched.errors import ValidationError
from lldsched.redaction import hide_passwords
from lldsched.stores.postgres.redact import redact, redact_by_pattern, shown_keys

__all__ = ["check_dsn"]


def _shown(dsn: object) -> str:
    """A dsn of the wrong type as an error names it: its repr, any password in it
    replaced by ``***`` as in every message that names a dsn (a ``bytes`` dsn is read as
    the text it holds, a mapping's values hidden but for the keys libpq displays)."""
    if isinstance(dsn, bytes | bytearray):
        return f"{type(dsn).__name__} {redact(bytes(dsn).decode('utf-8', 'replace'))!r}"
    if isinstance(dsn, Mapping):
        return repr({key: value if key in shown_keys() else "***" for key, value in dsn.items()})
    return repr(dsn)


_URI_BEFORE_QUERY = re.compile(r"\s*postgres(?:ql)?://([^?#]*)", re.IGNORECASE)
"""A libpq URI's user, password, hosts, ports and database (group 1)."""

_OTHER_SCHEME = re.compile(r"\s*([A-Za-z][A-Za-z0-9+.-]*)://")
"""A URI's scheme (group 1), any: one other than libpq's two (SQLAlchemy's
``postgresql+psycopg://``, a ``mysql://`` given by mistake) was refused by libpq as
``missing "=" after "***" in connection info string``, the dsn hidden whole (it parses as
no dsn, so every value of it was a possible password): nothing named what was wrong."""

_POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})


def _meant(scheme: str) -> str:
    """What a scheme close to libpq's was meant as, after the refusal ("" if none)."""
    base, plus, driver = scheme.partition("+")
    if base.lower() not in _POSTGRES_SCHEMES:
        return ""
    if plus:
        return (
            f" (the '+{driver}' naming a driver is SQLAlchemy's: write {base.lower()}:// "
            "and the rest as it is)"
        )
    return f" (in lower case: {base.lower()}://)"


def check_dsn(dsn: object) -> None:
    """Refuse, as every store refuses a malformed argument (a :class:`ValidationError`
    naming it, its password hidden), a dsn that is not a connection string libpq can be
    given: not a ``str``; one holding a NUL, at which libpq's C string ends (the rest was
    dropped unseen, and a store opened what came before it); one holding a lone surrogate,
    which UTF-8 cannot encode (a bare ``UnicodeEncodeError`` naming no dsn); a URI whose
    user or password holds an ``@`` or a ``/`` not percent-encoded (libpq took the rest
    for the host, port or database, and its error quoted it).  The dsn is shown as
    :func:`~lldsched.stores.postgres.redact.redact_by_pattern` hides it: every value but
    those libpq displays, a misspelt key's (``pasword=``) included (was: the password's
    alone, and a misspelt key's value shown), and the bad part is named by its place,
    not shown: it may be inside a password."""
    if not isinstance(dsn, str):
        raise ValidationError(f"dsn must be a libpq connection string (a str), got {_shown(dsn)}")
    if "\x00" in dsn:
        raise ValidationError(
            f"dsn {redact_by_pattern(dsn)!r} holds a NUL (character {dsn.index(chr(0)) + 1} of "
            f"{len(dsn)}), where libpq would end it: remove it and what follows it if that was "
            "not meant"
        )
    other = _OTHER_SCHEME.match(dsn)
    if other is not None and other.group(1) not in _POSTGRES_SCHEMES:
        raise ValidationError(
            f"dsn {hide_passwords(dsn)!r} is a URI of the scheme {other.group(1)!r}, which "
            f"libpq does not read: a PostgreSQL URI begins postgresql:// or postgres://"
            f"{_meant(other.group(1))}"
        )
    uri = _URI_BEFORE_QUERY.match(dsn)
    authority, _, path = uri.group(1).partition("/") if uri is not None else ("", "", "")
    if authority.count("@") > 1 or "@" in path:  # a user part holds one '@', before the '/'
        raise ValidationError(
            f"dsn {redact_by_pattern(dsn)!r} holds an '@' or a '/' in its user or password that "
            "is not percent-encoded: libpq ends the user part at the first '@', the hosts at "
            "the first '/', and takes the rest for the host, port or database; write each "
            "'@' of the user and the password as %40, each '/' as %2F"
        )
    try:
        dsn.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"dsn {redact_by_pattern(dsn)!r} holds a lone surrogate (character "
            f"{exc.start + 1} of {len(dsn)}), which is not text UTF-8 can encode: a "
            "connection string is sent as UTF-8 (an undecodable byte of a file or an "
            "environment variable is read as one: decode it as its encoding is)"
        ) from None

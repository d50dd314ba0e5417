"""A dsn that is a URI of another scheme than libpq's is refused naming the scheme.

A user trial gave ``PostgresTaskStore`` the SQLAlchemy URL its application already had
(``postgresql+psycopg://app:secret@db/app``): libpq refused it as ``missing "=" after
"***" in connection info string``, the dsn hidden whole (it parsed as no dsn, so every
value in it could have been a password), as a ``StoreError`` "cannot connect": nothing
said what was wrong.  So did ``mysql://...`` and an upper-case ``POSTGRESQL://``.  Now a
``ValidationError`` at construction names the scheme, shows the dsn with its password
hidden, and says what was meant when the scheme is close to libpq's.  No server is
needed: the check comes before any connection.
"""

from __future__ import annotations

import pytest

from lldsched import ValidationError
from lldsched.stores.postgres import PostgresTaskStore


@pytest.mark.parametrize(
    ("dsn", "says"),
    [
        (
            "postgresql+psycopg://app:s3cret@db.internal/app",
            "dsn 'postgresql+psycopg://app:***@db.internal/app' is a URI of the scheme "
            "'postgresql+psycopg', which libpq does not read: a PostgreSQL URI begins "
            "postgresql:// or postgres:// (the '+psycopg' naming a driver is SQLAlchemy's: "
            "write postgresql:// and the rest as it is)",
        ),
        (
            "mysql://root:s3cret@db/app",
            "dsn 'mysql://root:***@db/app' is a URI of the scheme 'mysql', which libpq does "
            "not read: a PostgreSQL URI begins postgresql:// or postgres://",
        ),
        (
            "POSTGRES://app:s3cret@db/app",
            "dsn 'POSTGRES://app:***@db/app' is a URI of the scheme 'POSTGRES', which libpq "
            "does not read: a PostgreSQL URI begins postgresql:// or postgres:// (in lower "
            "case: postgres://)",
        ),
    ],
    ids=["sqlalchemy", "mysql", "upper case"],
)
def test_a_uri_of_another_scheme_is_refused_naming_it_its_password_hidden(
    dsn: str, says: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        PostgresTaskStore(dsn)
    assert str(refused.value) == says
    assert "s3cret" not in str(refused.value)

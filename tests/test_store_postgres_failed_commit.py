"""A PostgreSQL write whose transaction fails after its row's statement (its COMMIT: the
connection lost, a deferred check; or a later statement of it: a record refused) stores
nothing, and the store's cache of the definitions it wrote must say so.

Before, the store noted the definition as written as soon as its statement ran, inside
the transaction: rolled back, the cache still held it.  A registration refused so and
made again (the same task) wrote a bare ``UPDATE`` of a row that was not there: nothing
stored, no error, and the task gone at the next start.  A replacement refused so and made
again wrote its state alone: the row kept the old definition, which the next start
loaded.  The SQLite store notes a definition once its transaction committed."""

from __future__ import annotations

import psycopg
import pytest

from lldsched import StoreError
from lldsched.stores.postgres import PostgresTaskStore
from tests.test_store_sqlite import record, snapshot, task

FAIL_ONCE = """
CREATE SEQUENCE failures;
CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.name = 'refused once' AND pg_catalog.nextval('failures') = 1 THEN
        RAISE EXCEPTION 'refused at commit, once';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER fail_once AFTER INSERT OR UPDATE ON tasks
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_once();
"""


def fail_the_first_commit(dsn: str) -> None:
    """The first transaction writing a task named "refused once" fails at its COMMIT."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(FAIL_ONCE)


def test_a_registration_whose_commit_failed_is_stored_when_made_again(postgres_dsn: str) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        fail_the_first_commit(postgres_dsn)
        new = snapshot(task(id="new", name="refused once"))
        with pytest.raises(StoreError, match="refused at commit, once"):
            store.save(new)
        assert store.get("new") is None  # rolled back
        store.save(new)  # registered again
        stored = store.get("new")  # before: None, the save an UPDATE of no row
        assert stored is not None and stored.task.name == "refused once"
    with PostgresTaskStore(postgres_dsn) as store:
        assert [s.task.id for s in store.load_all()] == ["new"]


def test_a_replacement_whose_commit_failed_writes_its_definition_when_made_again(
    postgres_dsn: str,
) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept", name="before")))
        fail_the_first_commit(postgres_dsn)
        replaced = snapshot(task(id="kept", name="refused once"))
        with pytest.raises(StoreError, match="refused at commit, once"):
            store.save(replaced)
        store.save(replaced)  # replaced again
        stored = store.get("kept")  # before: "before", the save its state alone
        assert stored is not None and stored.task.name == "refused once"


def test_a_new_task_whose_record_was_refused_is_stored_when_saved_again(
    postgres_dsn: str,
) -> None:
    """A later statement of the transaction failing (a record refused by a check of the
    database's own) rolls the row back too."""
    with PostgresTaskStore(postgres_dsn) as store:
        with psycopg.connect(postgres_dsn, autocommit=True) as connection:
            connection.execute(
                "ALTER TABLE records ADD CONSTRAINT no_boom CHECK (error IS DISTINCT FROM 'boom')"
            )
        new = snapshot(task(id="new"))
        with pytest.raises(StoreError, match="no_boom"):
            store.save(new, record("new", 1)._replace(ok=False, error="boom"))
        assert store.get("new") is None
        store.save(new)
        assert store.get("new") is not None  # before: None


def test_a_removal_whose_commit_failed_leaves_the_task_written_as_this_nodes(
    postgres_dsn: str,
) -> None:
    """A removal refused at its COMMIT left the row; the task, still registered, is
    written on as this node's task, not refused as another node's registration."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept")))
        with psycopg.connect(postgres_dsn, autocommit=True) as connection:
            connection.execute(
                FAIL_ONCE.replace("NEW.name = 'refused once' AND ", "").replace(
                    "AFTER INSERT OR UPDATE ON tasks", "AFTER INSERT ON removals"
                )
            )
        with pytest.raises(StoreError, match="refused at commit, once"):
            store.delete("kept")
        store.save(snapshot(task(id="kept"))._replace(run_count=1))  # before: ValidationError
        stored = store.get("kept")
        assert stored is not None and stored.run_count == 1

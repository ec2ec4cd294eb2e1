"""Open the results store: SQLite (WAL, one writer at a time, waiting its turn) or
PostgreSQL by URL, its schema migrated on open.

The schema's revisions are Alembic migrations shipped in `sparring/store/migrations`
(`0001`, `0002`, ...); no alembic.ini is needed. A store at an older revision is migrated
when opened; one at a newer revision (written by a newer sparring) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError, OperationalError

from sparring.errors import UserError
from sparring.results import SCHEMA_VERSION
from sparring.store.location import shown_url

HEAD_REVISION = "0006"
"""The newest store schema revision this sparring knows (`migrations/versions`)."""
_MIGRATION_LOCK = 7_370_001
"""PostgreSQL advisory lock id held while a store is checked and migrated."""
SQLITE_BUSY_TIMEOUT_S = 60
"""How long an SQLite writer waits for another process's write to end, in seconds."""


class StoreError(UserError):
    """The store cannot be used: a bad URL, an unreachable server, a missing driver, or a
    schema newer than this sparring's. The message says which store and what to do."""


@dataclass(frozen=True)
class Store:
    """An open results store. `url` is as given (see `shown_url` for messages)."""

    engine: Engine
    url: str

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def open_store(url: str) -> Store:
    """Open (creating when missing) the store at the SQLAlchemy `url` and bring its schema
    to `HEAD_REVISION`.

    Raises:
        StoreError: the URL is malformed, its driver is not installed (PostgreSQL needs
            the `postgres` extra), the database cannot be reached, an SQLite file is not a
            sparring store (not a database, damaged, or another program's database), or
            its schema revision is newer than `HEAD_REVISION`.
    """
    engine = _engine(url)
    try:
        with engine.begin() as conn:
            _migrate(conn, url)
    except DatabaseError as e:  # OperationalError among them
        engine.dispose()
        file = _sqlite_file(url)
        if file is None or isinstance(e, OperationalError):
            raise StoreError(
                f"cannot open the results store {shown_url(url)}: {e.orig}; check the "
                "`store` setting (or SPARRING_STORE, --store), or run with --no-store"
            ) from None
        raise _not_a_store(file, f"not a database or a damaged one ({e.orig})") from None
    except BaseException:
        engine.dispose()
        raise
    return Store(engine=engine, url=url)


def _sqlite_file(url: str) -> str | None:
    """The file of an SQLite store `url`; `None` for another database or `:memory:`."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return parsed.database


def _not_a_store(file: str, what: str) -> StoreError:
    """The error for an SQLite `file` that is not a sparring store: `what` it is instead,
    and the ways out."""
    return StoreError(
        f"the results store {file} is not a sparring store: {what}. Move the file away "
        f"(mv {file} {file}.broken; the next run starts a new store), keep this run "
        "elsewhere with --store OTHER.db, or run with --no-store"
    )


def _engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(
            f"the store {shown_url(url)!r} is not a database URL; use e.g. "
            "sqlite:///path/to/sparring.db or postgresql+psycopg://user@host/db"
        ) from None
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database)
    try:
        return create_engine(url, pool_pre_ping=True)
    except (NoSuchModuleError, ModuleNotFoundError) as e:
        extra = ' pip install "sparring[postgres]"' if "postgres" in url else ""
        raise StoreError(
            f"cannot open the results store {shown_url(url)}: no driver ({e}).{extra}"
        ) from None


def _sqlite_engine(url: str, database: str | None) -> Engine:
    """An SQLite engine in WAL mode whose transactions take the write lock when they begin
    (`BEGIN IMMEDIATE`), so writers from several processes queue instead of failing."""
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        dbapi_connection.isolation_level = None  # transactions are begun below
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")  # durable across crashes of the process
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:  # pyright: ignore[reportUnusedFunction]
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _migrate(conn: Connection, url: str) -> None:
    """Bring the schema to `HEAD_REVISION` inside `conn`'s transaction (which holds the
    write lock, so concurrent openers migrate once).

    Raises:
        StoreError: the store's revision is newer than `HEAD_REVISION`, or an SQLite file
            holds tables but no sparring schema revision.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _MIGRATION_LOCK})
    current = _revision(conn)
    if current == HEAD_REVISION:
        return
    file = _sqlite_file(url)
    if current is None and file is not None and (tables := inspect(conn).get_table_names()):
        raise _not_a_store(file, f"an SQLite database of something else (tables {tables})")
    if current is not None and not _older(current):
        raise StoreError(
            f"the results store {shown_url(url)} has schema revision {current}, newer than "
            f"this sparring's {HEAD_REVISION} (JSON report schema {SCHEMA_VERSION}): a newer "
            "sparring wrote it. Upgrade sparring (pip install -U sparring), or use another "
            "store (--store URL, or --no-store)"
        )
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    config.attributes["connection"] = conn
    command.upgrade(config, "head")


def _revision(conn: Connection) -> str | None:
    """The store's schema revision; `None` for an empty database."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _older(revision: str) -> bool:
    return revision.isdigit() and int(revision) < int(HEAD_REVISION)

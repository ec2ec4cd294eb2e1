"""The results store: every run, as it happens, in SQLite (default) or PostgreSQL.

`location` (which database, no SQLAlchemy import) is cheap; `database` opens it (SQLAlchemy,
Alembic migrations on open), `writer` streams one run into it, `reading` lists and loads runs.
Nothing here is imported by `import sparring` or `sparring --help`.
"""

"""The results store: every run, as it happens, in SQLite (default) or PostgreSQL.

`location` (which database, no SQLAlchemy import) is cheap; `database` opens it (SQLAlchemy,
Alembic migrations on open), `writer` streams one run into it, `reading` lists and loads runs
(with `overrides`, people's corrections of verdicts, applied). The platform the dashboard
works on: `assets` (agents, simulated users, agent evaluations with revisions; contents
checked by `asset_specs`), `suites` and `suite_status` (test suites, their runs and
statuses), `accounts` (local accounts and roles).
Nothing here is imported by `import sparring` or `sparring --help`.
"""

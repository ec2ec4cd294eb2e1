"""Alembic migrations of the results store, run on open (`sparring.store.database`)."""

"""Alembic environment: migrates the connection `sparring.store.database` hands over, inside
its transaction (so processes opening one store at once migrate it once)."""

from alembic import context

context.configure(connection=context.config.attributes["connection"])
with context.begin_transaction():
    context.run_migrations()

"""`python -m sparring.cli` runs the `sparring` command."""

from sparring.cli.main import main

main()

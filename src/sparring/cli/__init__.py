"""The `sparring` command line. `main.py` defines commands; their work lives beside it."""

"""Ways to write tests in Python: `Suite`, `Session`, `Response`, steps and `unfold`.

Public through `sparring.api` (and lazily through `sparring`); this package imports the
runner, never the reverse.
"""

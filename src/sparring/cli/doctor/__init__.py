"""`sparring doctor`: send one message to a target and diagnose what came back.

`probe.py` sends it and records every exchange; `diagnosis.py` turns what happened into
findings with fixes; `command.py` prints them.
"""

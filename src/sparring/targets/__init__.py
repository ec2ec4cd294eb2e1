"""Targets: the agent under test, reached through a transport. See `base.Target`."""

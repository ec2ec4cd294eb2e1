"""Earlier import path of `sparring.targets.adapters.smolagents.SmolagentsAdapter`."""

from sparring.targets.adapters.smolagents import SmolagentsAdapter

__all__ = ["SmolagentsAdapter"]

"""Earlier import path of `sparring.targets.adapters.pydantic_ai.PydanticAIAdapter`."""

from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter

__all__ = ["PydanticAIAdapter"]

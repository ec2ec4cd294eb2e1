"""Earlier import path of `sparring.targets.adapters.openai_agents.OpenAIAgentsAdapter`."""

from sparring.targets.adapters.openai_agents import OpenAIAgentsAdapter

__all__ = ["OpenAIAgentsAdapter"]

"""Earlier import path of `sparring.targets.adapters.langchain.LangChainAdapter`."""

from sparring.targets.adapters.langchain import LangChainAdapter

__all__ = ["LangChainAdapter"]

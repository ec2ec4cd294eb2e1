"""sparring: test conversational AI agents in conversations.

A simulated or scripted user talks to the target (the agent under test); checks and an
LLM judge score each conversation; trials and thresholds turn it into a CI verdict.
"""

__version__ = "0.1.0"

"""Framework adapters: agents built with a framework, wrapped as callable targets.

Each adapter is an async callable `adapter(history) -> Message` that runs the framework's
agent for one user message and returns its reply with every tool call of that turn (name,
arguments, result) and the token counts the framework reports. Use one as a callable target:
in Python `CallableTarget(PydanticAIAdapter(agent))`, in YAML
`target: {type: callable, ref: "my_agent:target"}` where `my_agent.py` holds
`target = PydanticAIAdapter(agent)`.

- `sparring.targets.adapters.pydantic_ai.PydanticAIAdapter`: a pydantic-ai `Agent`
  (extra `pydantic-ai`);
- `sparring.targets.adapters.langchain.LangChainAdapter`: a LangChain Runnable or LangGraph graph
  over `{"messages": [...]}` (extra `langchain`);
- `sparring.targets.adapters.openai_agents.OpenAIAgentsAdapter`: an OpenAI Agents SDK `Agent`
  (extra `openai-agents`);
- `sparring.targets.adapters.smolagents.SmolagentsAdapter`: a smolagents `ToolCallingAgent` or
  `CodeAgent` (extra `smolagents`).

`sparring.targets.adapters.livekit.LiveKitAdapter` (extra `livekit`) is a voice target of its
own, not a callable: it plays each user message as audio into a LiveKit `AgentSession`.

Multi-turn conversations continue with the framework's own messages: after each turn an
adapter remembers them (`remember=` conversations, least recently used dropped), so the next
turn sees earlier tool calls and results. A history the adapter did not produce (an unfold
preload, written agent turns) is converted from its text. Importing this package imports no
framework; each module imports only its own.
"""

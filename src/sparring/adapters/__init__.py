"""The framework adapters' earlier import path, kept working: they live in
`sparring.targets.adapters` (e.g. `from sparring.targets.adapters.pydantic_ai import
PydanticAIAdapter`)."""

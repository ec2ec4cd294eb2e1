"""What `sparring generate` writes scenarios from: the files given to `--from`, read and
summarised for the model.

A source is one of:
- `text`: requirements, behaviours or an agent's system prompt (Markdown or plain text);
- `parlant`: Parlant guidelines and journeys exported as JSON (`guidelines`, `journeys`);
- `tools`: an OpenAPI document (`openapi:` key) or a tool list (OpenAI's `tools` shape or a
  list of `{name, description, parameters}`);
- `tests`: an existing sparring test file (`scenarios:`), to vary.
Each summary is cut to `PER_SOURCE` characters so the prompt stays lean.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from sparring.errors import UserError

SourceKind = Literal["text", "parlant", "tools", "tests"]
PER_SOURCE = 6000
"""Characters of one source's summary the model sees (a longer one is cut, marked)."""

_LABELS: dict[SourceKind, str] = {
    "text": "Requirements, behaviours or the agent's instructions",
    "parlant": "The agent's Parlant guidelines and journeys",
    "tools": "The agent's tools",
    "tests": "Existing tests to vary (new personas, phrasings, edge cases; do not repeat them)",
}


@dataclass(frozen=True, slots=True)
class Source:
    """One `--from` file: its path as given, its kind, and the summary the model reads."""

    path: str
    kind: SourceKind
    summary: str
    target: dict[str, Any] | None = None
    """A `tests` source's file-level `target:` (raw), reused for the generated file."""
    examples: tuple[dict[str, Any], ...] = ()
    """A `tests` source's scenarios (their persona, goal, prompt, turns...), so generated
    ones that nearly repeat them are dropped."""

    @property
    def heading(self) -> str:
        """`<label> (<path>)`, the source's heading in the prompt."""
        return f"{_LABELS[self.kind]} ({self.path})"


def read_sources(paths: list[str]) -> list[Source]:
    """Read and summarise every `--from` file.

    Raises:
        UserError: a file is missing, not UTF-8, or structured data of no known kind (the
            message lists the kinds that are understood).
    """
    if not paths:
        raise UserError("give at least one --from FILE (requirements, a prompt, tools, tests)")
    return [_read(path) for path in paths]


def _read(path: str) -> Source:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"--from {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"--from {path}: cannot read it ({e}); give a UTF-8 text file") from None
    if not text.strip():
        raise UserError(f"--from {path}: the file is empty")
    if file.suffix.lower() not in (".json", ".yaml", ".yml"):
        return Source(path, "text", _cut(text.strip()))
    return _structured(path, _parse(path, text))


def _parse(path: str, text: str) -> Any:
    from sparring.loaders._parse import parse_documents

    if path.lower().endswith(".json"):
        try:
            return json.loads(text)
        except ValueError as e:
            raise UserError(f"--from {path}: not valid JSON ({e})") from None
    documents = parse_documents(text, path=path)
    return documents[0].data if documents else None


def _structured(path: str, data: Any) -> Source:
    if isinstance(data, dict):
        mapping = cast(dict[str, Any], data)
        if "scenarios" in mapping:
            return _tests(path, mapping)
        if "openapi" in mapping or "swagger" in mapping:
            return Source(path, "tools", _cut(_openapi(mapping)))
        if "guidelines" in mapping or "journeys" in mapping:
            return Source(path, "parlant", _cut(_parlant(mapping)))
        if isinstance(mapping.get("tools"), list):
            return Source(path, "tools", _cut(_tools(cast(list[Any], mapping["tools"]))))
    if isinstance(data, list):
        return Source(path, "tools", _cut(_tools(cast(list[Any], data))))
    raise UserError(
        f"--from {path}: structured data of no known kind; give a test file (`scenarios:`), "
        "an OpenAPI document (`openapi:`), a tool list (`tools:` or a list of {name, "
        "description, parameters}), or Parlant guidelines/journeys (`guidelines:`, "
        "`journeys:`); requirements and prompts go in .md or .txt files"
    )


def _tests(path: str, data: dict[str, Any]) -> Source:
    examples = tuple(
        {k: scenario[k] for k in _TEST_KEYS if k in scenario}
        for scenario in _dicts(data.get("scenarios"))
    )
    lines = [json.dumps(example, ensure_ascii=False, default=str) for example in examples]
    target = data.get("target")
    return Source(
        path,
        "tests",
        _cut("\n".join(lines)),
        target=cast(dict[str, Any], target) if isinstance(target, dict) else None,
        examples=examples,
    )


_TEST_KEYS = (
    "id",
    "persona",
    "goal",
    "prompt",
    "turns",
    "criteria",
    "restrictions",
    "expected_output",
)


def _openapi(data: dict[str, Any]) -> str:
    lines: list[str] = []
    for route, operations in cast(dict[str, Any], data.get("paths") or {}).items():
        if not isinstance(operations, dict):
            continue
        for method, operation in cast(dict[str, Any], operations).items():
            if isinstance(operation, dict):
                op = cast(dict[str, Any], operation)
                about = op.get("summary") or op.get("description") or ""
                lines.append(f"- {method.upper()} {route} ({op.get('operationId', '')}): {about}")
    return "\n".join(lines) or json.dumps(data.get("info", {}), ensure_ascii=False)


def _tools(items: list[Any]) -> str:
    lines: list[str] = []
    for tool in _dicts(items):
        function = cast(dict[str, Any], tool.get("function") or tool)
        parameters: Any = function.get("parameters") or function.get("input_schema") or {}
        names = [str(n) for n in cast(dict[str, Any], parameters).get("properties", {})]
        about = function.get("description", "")
        lines.append(f"- {function.get('name', '?')}({', '.join(names)}): {about}")
    return "\n".join(lines)


def _parlant(data: dict[str, Any]) -> str:
    lines = ["Guidelines:"]
    for rule in _dicts(data.get("guidelines")):
        lines.append(f"- when {rule.get('condition', '?')}: {rule.get('action', '?')}")
    lines.append("Journeys:")
    for journey in _dicts(data.get("journeys")):
        given: Any = journey.get("conditions") or []
        conditions = "; ".join(str(c) for c in cast(list[Any], given))
        lines.append(
            f"- {journey.get('title', '?')}: {journey.get('description', '')}"
            + (f" (when: {conditions})" if conditions else "")
        )
    return "\n".join(lines)


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The mappings in `value` when it is a list (anything else in it skipped), else []."""
    items: list[Any] = cast(list[Any], value) if isinstance(value, list) else []
    return [cast(dict[str, Any], item) for item in items if isinstance(item, dict)]


def _cut(text: str) -> str:
    if len(text) <= PER_SOURCE:
        return text
    return text[:PER_SOURCE] + f"\n[... cut: {len(text) - PER_SOURCE} more characters]"

"""What `sparring generate` writes scenarios from: the files given to `--from`, read and
summarised for the model.

A source is one of:
- `text`: requirements, behaviours or an agent's system prompt (Markdown or plain text);
- `parlant`: Parlant guidelines and journeys exported as JSON: Parlant's lists of
  `{condition, action}` and `{title, description, conditions}`, or a mapping with
  `guidelines` and `journeys`;
- `tools`: an OpenAPI document (`openapi:` key) or a tool list (OpenAI's `tools` shape or a
  list of `{name, description, parameters}`);
- `tests`: any other YAML/JSON file, read by the test-file loader (native sparring YAML, one
  scenario at top level, a pytest-agent-eval transcript, a Plainwright JSON test), to vary.
Each summary is cut to `PER_SOURCE` characters so the prompt stays lean.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from sparring.errors import UserError

if TYPE_CHECKING:
    from sparring.loaders._parse import Document, Loc
    from sparring.scenario import AnyScenario
    from sparring.targets.registry import AnyTargetSpec

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
    """A `tests` source's target (of its first scenario that has one) as a `target:`
    mapping, reused for the generated file."""
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
        UserError: a file is missing, empty or not UTF-8; a list that is neither tools nor
            Parlant guidelines and journeys; any other YAML/JSON file that does not load as
            a test file (the message names the file, the place and the accepted shapes).
        ConfigError: a YAML/JSON file that does not parse (at file:line:column).
    """
    if not paths:
        raise UserError("give at least one --from FILE (requirements, a prompt, tools, tests)")
    return [_read(path) for path in paths]


ACCEPTED = (
    "give a test file to vary (sparring YAML, a pytest-agent-eval transcript or a Plainwright "
    "JSON test), an OpenAPI document (`openapi:`), a tool list (`tools:`, or a list of "
    "{name, description, parameters}), or Parlant guidelines and journeys (a list of "
    "{condition, action} and {title, description, conditions}, or `guidelines:` / "
    "`journeys:`); requirements and prompts go in .md or .txt files"
)
"""The structured `--from` files understood, for error messages."""


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
    from sparring.loaders._parse import parse_documents

    documents = [d for d in parse_documents(text, path=path) if d.data is not None]
    if not documents:
        raise UserError(f"--from {path}: the file holds no data")
    return _configuration(path, documents[0]) or _tests(path)


def _configuration(path: str, doc: Document) -> Source | None:
    """`doc` as an agent's configuration (OpenAPI, tools, Parlant), or None (a test file,
    or nothing known, such as a list of scenarios: the loader says what to write)."""
    data: Any = doc.data
    if isinstance(data, list):  # of nothing known: the loader says what a test file is
        known = any(_item_kind(item) for item in cast(list[Any], data))
        return _listed(path, doc, ()) if known else None
    if not isinstance(data, dict):
        return None
    mapping = cast(dict[str, Any], data)
    if "openapi" in mapping or "swagger" in mapping:
        return Source(path, "tools", _cut(_openapi(mapping)))
    if "guidelines" in mapping or "journeys" in mapping:
        summary = _parlant(_dicts(mapping.get("guidelines")), _dicts(mapping.get("journeys")))
        return Source(path, "parlant", _cut(summary))
    if isinstance(mapping.get("tools"), list):
        return _listed(path, doc, ("tools",))
    return None


def _listed(path: str, doc: Document, at: Loc) -> Source:
    """A list of tools, or of Parlant guidelines and journeys, at `at` in `doc`.

    Raises:
        UserError: the list is empty, mixes the two, or holds an item of neither shape (at
            its line and column).
    """
    items = cast(list[Any], doc.data if not at else doc.data[at[0]])
    found = [_item_kind(item) for item in items]
    where = ":".join(map(str, doc.position(at)))
    if not items:
        raise UserError(f"--from {path}:{where}: the list is empty; {ACCEPTED}")
    if None in found:
        n = found.index(None)
        line, column = doc.position((*at, n))
        raise UserError(
            f"--from {path}:{line}:{column}: item {n + 1} of the list is neither a tool "
            "({name, description, parameters}) nor a Parlant guideline ({condition, action}) "
            f"or journey ({{title, description, conditions}}); {ACCEPTED}"
        )
    kinds = set(found)
    if kinds != {"tool"} and (at or "tool" in kinds):
        what = "`tools:` holds" if at else "the list mixes tools with"
        raise UserError(
            f"--from {path}:{where}: {what} Parlant guidelines or journeys; give tools and "
            "Parlant's guidelines and journeys in separate files"
        )
    if found[0] == "tool":
        return Source(path, "tools", _cut(_tools(items)))
    guidelines = [i for i, kind in zip(items, found, strict=True) if kind == "guideline"]
    journeys = [i for i, kind in zip(items, found, strict=True) if kind == "journey"]
    return Source(path, "parlant", _cut(_parlant(guidelines, journeys)))


def _item_kind(item: Any) -> Literal["tool", "guideline", "journey"] | None:
    """What one list item is: a Parlant guideline (`condition`, optional `action`), a
    journey (`title` with `description` or `conditions`), a tool (OpenAI's `{type,
    function}`, or `name` with a description or a parameter schema), else None."""
    if not isinstance(item, dict):
        return None
    entry = cast(dict[str, Any], item)
    if isinstance(entry.get("condition"), str):
        return "guideline"
    if isinstance(entry.get("title"), str) and ("description" in entry or "conditions" in entry):
        return "journey"
    function: Any = entry.get("function", entry)
    if isinstance(function, dict) and isinstance(cast(dict[str, Any], function).get("name"), str):
        described = cast(dict[str, Any], function).keys() & _TOOL_KEYS
        return "tool" if described else None
    return None


_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema")
"""Where a tool's parameter schema is: OpenAI's, Anthropic's and MCP's key."""
_TOOL_KEYS = frozenset({"description", *_SCHEMA_KEYS})


def _tests(path: str) -> Source:
    """A test file to vary, read with the test-file loader (native sparring YAML, one
    scenario at top level, or another tool's dialect).

    Raises:
        UserError: the file does not load (the loader's problems, then the accepted
            shapes) or holds no scenario.
    """
    from sparring.errors import ConfigError
    from sparring.loaders import load_paths

    try:
        scenarios = load_paths([path])
    except ConfigError as e:
        raise UserError(
            f"--from {path}: not agent configuration, and it does not load as a test file:"
            f"\n{e}\n{ACCEPTED}"
        ) from None
    if not scenarios:
        raise UserError(f"--from {path}: holds no scenario to vary (a library file?)")
    examples = tuple(_example(scenario) for scenario in scenarios)
    lines = [json.dumps(example, ensure_ascii=False, default=str) for example in examples]
    first = next((s.target for s in scenarios if s.target is not None), None)
    return Source(
        path,
        "tests",
        _cut("\n".join(lines)),
        target=None if first is None else target_mapping(first),
        examples=examples,
    )


def _example(scenario: AnyScenario) -> dict[str, Any]:
    """What a loaded scenario tests, for the model and for dedupe: its id, persona, goal,
    prompt, turns, expected output, and its criteria and restrictions as texts."""
    data = scenario.model_dump(mode="json", include=set(_TEST_KEYS), exclude_defaults=True)
    for key in ("criteria", "restrictions"):
        if key in data:
            data[key] = [c["text"] for c in data[key]]
    return data


_TEST_KEYS = (
    "id",
    "persona",
    "goal",
    "opening_message",
    "prompt",
    "turns",
    "criteria",
    "restrictions",
    "expected_output",
)


def target_mapping(spec: AnyTargetSpec) -> dict[str, Any]:
    """`spec` as a test file's `target:` mapping: its `type` and what differs from the
    defaults."""
    return {"type": spec.type, **spec.model_dump(mode="json", exclude_defaults=True)}


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
    """One line per tool: `- name(param, ...): description`."""
    lines: list[str] = []
    for tool in _dicts(items):
        function = cast(dict[str, Any], tool.get("function") or tool)
        schema: Any = next((function[k] for k in _SCHEMA_KEYS if function.get(k)), None)
        given = cast(dict[str, Any], schema).get("properties") if isinstance(schema, dict) else None
        names = [str(n) for n in cast(dict[str, Any], given)] if isinstance(given, dict) else []
        about = function.get("description", "")
        lines.append(f"- {function.get('name', '?')}({', '.join(names)}): {about}")
    return "\n".join(lines)


def _parlant(guidelines: list[dict[str, Any]], journeys: list[dict[str, Any]]) -> str:
    """Guidelines as `when <condition>: <action>`, journeys as `<title>: <description>
    (when: ...)`; a journey's condition that is a guideline's id (Parlant's API gives ids)
    is that guideline's condition."""
    conditions = {str(g.get("id")): str(g.get("condition")) for g in guidelines if "id" in g}
    lines = ["Guidelines:"]
    for rule in guidelines:
        lines.append(f"- when {rule.get('condition', '?')}: {rule.get('action') or '(observe)'}")
    lines.append("Journeys:")
    for journey in journeys:
        given: Any = journey.get("conditions") or []
        when = "; ".join(conditions.get(str(c), str(c)) for c in cast(list[Any], given))
        lines.append(
            f"- {journey.get('title', '?')}: {journey.get('description', '')}"
            + (f" (when: {when})" if when else "")
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

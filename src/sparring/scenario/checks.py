"""The deterministic checks of test files, as specs: `contains`, `regex`, `tool_args`, ...

Each check type is a frozen pydantic model validated when the file loads (patterns compile,
JSON Schemas are checked, `$ref`s resolve); `sparring.judging.checks` runs them."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeGuard
from urllib.parse import unquote

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    field_validator,
    model_validator,
)

from sparring.target_specs import (
    FROZEN,
    is_raw_mapping,
)


def is_raw_list(value: object) -> TypeGuard[list[Any]]:
    """`isinstance(value, list)` for raw YAML/JSON data, whose items are untyped."""
    return isinstance(value, list)


# --- checks ----------------------------------------------------------------------------


class _Check(BaseModel):
    model_config = FROZEN
    turn: int | None = None
    """1-based turn the check looks at (negative counts from the end); `None` means the
    reply it is attached to, or the whole conversation for scenario-level checks."""

    @field_validator("turn")
    @classmethod
    def _not_zero(cls, turn: int | None) -> int | None:
        if turn == 0:
            raise ValueError(
                "there is no turn 0: turns count from 1 (the first reply), and "
                "negative numbers count from the end (-1 is the last reply)"
            )
        return turn


def _texts_to_find(value: str | list[str], *, key: str, never: str) -> str | list[str]:
    """`value` unchanged unless it is empty or holds an empty text (found in every reply)."""
    if value == []:
        raise ValueError(
            f"`{key}: []` lists no text, so this check could never {never}; "
            f'list at least one text, e.g. `{key}: ["refund"]`'
        )
    if "" in ([value] if isinstance(value, str) else value):
        raise ValueError(
            f"every reply contains the empty text, so this check could never "
            f'{never}; give the text to look for, e.g. `{key}: "refund"`'
        )
    return value


LookIn = Literal["text", "tool_args", "all"]
"""Where a text check looks in each reply: its `text` (default), the arguments of its tool
calls (`tool_args`: a leak can hide there), or both (`all`)."""


class ContainsCheck(_Check):
    """Reply text contains `value` (any of the list, or all with `match: all`)."""

    type: Literal["contains"] = "contains"
    value: str | list[str]
    match: Literal["any", "all"] = "any"
    case_sensitive: bool = False
    look_in: LookIn = "text"

    @field_validator("value")
    @classmethod
    def _not_empty(cls, value: str | list[str]) -> str | list[str]:
        return _texts_to_find(value, key="contains", never="fail")


class NotContainsCheck(_Check):
    """Reply text contains none of `value`."""

    type: Literal["not_contains"] = "not_contains"
    value: str | list[str]
    case_sensitive: bool = False
    look_in: LookIn = "text"

    @field_validator("value")
    @classmethod
    def _not_empty(cls, value: str | list[str]) -> str | list[str]:
        never = "fail" if value == [] else "pass"
        return _texts_to_find(value, key="not_contains", never=never)


class _PatternCheck(_Check):
    pattern: str
    ignore_case: bool = False
    look_in: LookIn = "text"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        if not pattern:
            key = cls.model_fields["type"].default
            never = "fail" if key == "regex" else "pass"
            raise ValueError(
                f"an empty pattern matches every reply, so this check could never {never}; "
                f'write the pattern to look for, e.g. `{key}: "\\d{{5}}"`'
            )
        import regex

        try:
            regex.compile(pattern)
        except regex.error as e:
            raise ValueError(f"invalid regular expression {pattern!r}: {e}") from None
        return pattern


class RegexCheck(_PatternCheck):
    """Reply text matches the regular expression `pattern` (`re.search` syntax).

    Compiled with the `regex` package, the engine the check runs on, so a pattern accepted
    here is one the check can run.
    """

    type: Literal["regex"] = "regex"


class NotRegexCheck(_PatternCheck):
    """No reply text matches the regular expression `pattern` (`re.search` syntax)."""

    type: Literal["not_regex"] = "not_regex"


PiiKind = Literal["card", "email", "phone"]
"""Personal data the `not_pii` check finds."""


class NotPiiCheck(_Check):
    """No reply holds personal data of `kinds` (default all): a payment card number (13-19
    digits starting 2-6 that pass the Luhn check), an email address or a phone number (10
    digits), except the values in `allow` (the agent's own support line or address)."""

    type: Literal["not_pii"] = "not_pii"
    kinds: list[PiiKind] = Field(
        default_factory=lambda: list[PiiKind](["card", "email", "phone"]), min_length=1
    )
    allow: list[str] = Field(default_factory=list[str])
    look_in: LookIn = "text"

    @field_validator("kinds", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class EqualsCheck(_Check):
    """Reply text equals `value` after stripping surrounding whitespace."""

    type: Literal["equals"] = "equals"
    value: str
    case_sensitive: bool = True


class JsonSchemaCheck(_Check):
    """Reply text parses as JSON and validates against `schema` (JSON Schema)."""

    type: Literal["json_schema"] = "json_schema"
    schema_: dict[str, JsonValue] = Field(alias="schema")
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, schema: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """The schema checked against its dialect's metaschema (`$schema`, else 2020-12)."""
        from jsonschema import Draft202012Validator, exceptions, validators

        validator: Any = Draft202012Validator
        if isinstance(schema.get("$schema"), str):
            validator = validators.validator_for(schema, default=Draft202012Validator)
        try:
            validator.check_schema(schema)
        except exceptions.SchemaError as e:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.path)
            at = f" at `schema{where}`" if where else ""
            raise ValueError(
                f"invalid JSON Schema{at}: {e.message}; fix it so it follows "
                "https://json-schema.org (e.g. `{type: object, required: [id]}`)"
            ) from None
        problem = _unresolvable_ref(schema)
        if problem is not None:
            raise ValueError(f"invalid JSON Schema: {problem}")
        return schema


_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})  # data, not schemas


def _unresolvable_ref(schema: dict[str, Any]) -> str | None:
    """Why a `$ref` in `schema` cannot be resolved, or `None`: only `#` and `#/...` pointers
    into the schema (or the enclosing subschema with an `$id`) are accepted, never URLs."""
    stack: list[tuple[Any, dict[str, Any]]] = [(schema, schema)]
    while stack:
        node, root = stack.pop()
        if is_raw_list(node):
            stack.extend((item, root) for item in node)
        if not is_raw_mapping(node):
            continue
        if node is not schema and isinstance(node.get("$id"), str):
            root = node
        ref = node.get("$ref")
        problem = _ref_problem(ref, root) if isinstance(ref, str) else None
        if problem is not None:
            return problem
        stack.extend((v, root) for k, v in node.items() if k not in _DATA_KEYWORDS)
    return None


def _ref_problem(ref: str, root: dict[str, Any]) -> str | None:
    fix = 'put the referenced schema under `$defs` and write `$ref: "#/$defs/<name>"`'
    if not ref.startswith("#"):
        return (
            f"`$ref: {ref!r}` points outside the schema, and sparring does not fetch "
            f"schemas from files or URLs; {fix}"
        )
    if ref == "#":
        return None
    if not ref.startswith("#/"):
        return f"`$ref: {ref!r}` is not a `#/...` JSON pointer into the schema; {fix}"
    node: Any = root
    parts = [unquote(p).replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/")]
    for depth, part in enumerate(parts, start=1):
        if is_raw_mapping(node) and part in node:
            node = node[part]
        elif is_raw_list(node) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            where = "/".join(ref[2:].split("/")[:depth])
            return f"`$ref: {ref!r}` points to nothing: the schema has no `#/{where}`; {fix}"
    return None


class ToolCalledCheck(_Check):
    """Tools called: every `include` name, no `exclude` name; `ordered` keeps `include` order.

    `include` and `exclude` take a list of tool names or one name (`tool_called: lookup_order`).
    """

    type: Literal["tool_called"] = "tool_called"
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    ordered: bool = False

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _names_a_tool(self) -> ToolCalledCheck:
        if "" in self.include or "" in self.exclude:
            raise ValueError("tool_called has an empty tool name; write each tool's name")
        if self.include or self.exclude:
            return self
        raise ValueError(
            "tool_called names no tool in `include` or `exclude`, so it could "
            "never fail; name the tools, e.g. `tool_called: [lookup_order]` or "
            "`tool_called: {exclude: [refund]}`"
        )


class ToolArgsCheck(_Check):
    """Some call of `tool` has `args` (a subset of its arguments, or exactly them)."""

    type: Literal["tool_args"] = "tool_args"
    tool: str
    args: dict[str, JsonValue]
    match: Literal["subset", "exact"] = "subset"

    @field_validator("tool")
    @classmethod
    def _names_a_tool(cls, tool: str) -> str:
        if not tool.strip():
            raise ValueError(
                "`tool` is empty; name the tool whose arguments are checked, e.g. "
                '`tool_args: {tool: lookup_order, args: {order_id: "10234"}}`'
            )
        return tool


class LatencyBelowCheck(_Check):
    """Every reply looked at arrived in under `ms` milliseconds."""

    type: Literal["latency_below"] = "latency_below"
    ms: float = Field(gt=0)


ConversationEnd = Literal["goal_achieved", "user_gave_up", "max_turns", "script_done"]
"""End reasons a conversation that ran to its end can have (`end_reason` checks)."""


class EndReasonCheck(_Check):
    """The conversation ended for one of the reasons in `value` (e.g. `goal_achieved`).

    Looks at how the whole conversation ended, so it belongs in a scenario's `checks:`,
    without `turn`.
    """

    type: Literal["end_reason"] = "end_reason"
    value: list[ConversationEnd] = Field(min_length=1)

    @field_validator("value", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _no_turn(self) -> EndReasonCheck:
        if self.turn is not None:
            raise ValueError(
                "end_reason looks at how the whole conversation ended, not at one turn; "
                "remove `turn`"
            )
        return self


_SHORTHAND_FIELD = {
    "contains": "value",
    "not_contains": "value",
    "regex": "pattern",
    "not_regex": "pattern",
    "not_pii": "kinds",
    "equals": "value",
    "json_schema": "schema",
    "tool_called": "include",
    "tool_args": None,
    "latency_below": "ms",
    "end_reason": "value",
}
CHECK_TYPES = tuple(_SHORTHAND_FIELD)


def expand_check_shorthand(value: Any) -> Any:
    """Turn `{contains: "x", turn: 2}` into `{type: contains, value: "x", turn: 2}`.

    A check written with `type:` is returned unchanged; so is anything that is not a mapping
    with exactly one check-type key (validation then reports it).
    """
    if not is_raw_mapping(value) or "type" in value:
        return value
    keys = [k for k in value if k in _SHORTHAND_FIELD]
    if len(keys) != 1:
        return value
    kind = keys[0]
    rest = {k: v for k, v in value.items() if k != kind}
    body = value[kind]
    if is_raw_mapping(body) and (kind != "json_schema" or "schema" in body):
        return {"type": kind, **body, **rest}
    return {"type": kind, _SHORTHAND_FIELD[kind] or "args": body, **rest}


def _check_type(value: Any) -> str | None:
    if is_raw_mapping(value):
        return value.get("type")
    return getattr(value, "type", None)


Check = Annotated[
    Annotated[ContainsCheck, Tag("contains")]
    | Annotated[NotContainsCheck, Tag("not_contains")]
    | Annotated[RegexCheck, Tag("regex")]
    | Annotated[NotRegexCheck, Tag("not_regex")]
    | Annotated[NotPiiCheck, Tag("not_pii")]
    | Annotated[EqualsCheck, Tag("equals")]
    | Annotated[JsonSchemaCheck, Tag("json_schema")]
    | Annotated[ToolCalledCheck, Tag("tool_called")]
    | Annotated[ToolArgsCheck, Tag("tool_args")]
    | Annotated[LatencyBelowCheck, Tag("latency_below")]
    | Annotated[EndReasonCheck, Tag("end_reason")],
    Discriminator(
        _check_type,
        custom_error_type="check_type",
        custom_error_message="a check is one of: " + ", ".join(CHECK_TYPES),
    ),
]

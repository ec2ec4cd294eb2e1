"""The editors' form fields, read into what the store keeps (and back, to fill the forms).

Simulated user: `name`, `job_title`, `description`, `system_prompt`, `mode`, `evaluations`
(repeated). Agent evaluation: `name`, `description`, `prompt`, then per insight `i` the
fields `insight-i-name`, `-type`, `-description`, `-options` (comma-separated), `-pass_when`
(`true`, `false`, `>= 0.7`, or options comma-separated), `-weight`, `-group`, `-featured`;
a row without a name is left out. Agent: `name` and `target`, the `target:` mapping of a
test file in YAML. Test suite: `name`, then per test case `i` the fields `case-i-agent`,
`-agent_revision` (`latest` or a number), `-user`, `-user_revision`, `-timeout_s`,
`-max_turns` (empty: none), `-sessions`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from starlette.datastructures import FormData

from sparring.errors import UserError
from sparring.store.assets import parse_revision_ref
from sparring.store.suites import DEFAULT_SESSIONS, DEFAULT_TIMEOUT_S, SuiteCase

FormValues = Mapping[str, Any]
"""A form as the templates fill it: field name -> value (a list for repeated fields)."""


def text(form: FormData, field: str) -> str:
    """Field `field` as stripped text (`""` when absent)."""
    value = form.get(field)
    return value.strip() if isinstance(value, str) else ""


def user_content(form: FormData) -> tuple[str, dict[str, Any]]:
    """`(name, content)` of a simulated user's form."""
    content = {
        "job_title": text(form, "job_title"),
        "description": text(form, "description"),
        "system_prompt": text(form, "system_prompt") or None,
        "mode": text(form, "mode") or "text",
        "evaluations": [v for v in form.getlist("evaluations") if isinstance(v, str) and v],
    }
    return text(form, "name"), content


def evaluation_content(form: FormData) -> tuple[str, dict[str, Any]]:
    """`(name, content)` of an agent evaluation's form.

    Raises:
        UserError: a weight is not a number (naming the insight).
    """
    insights = [_insight(form, i) for i in range(insight_rows(form))]
    content = {
        "description": text(form, "description"),
        "prompt": text(form, "prompt"),
        "insights": [i for i in insights if i["name"]],
    }
    return text(form, "name"), content


def insight_rows(form: FormData) -> int:
    """How many insight rows the form has (the highest `insight-i-name` index + 1)."""
    indexes = [int(k.split("-")[1]) for k in form if k.startswith("insight-") and "-name" in k]
    return max(indexes, default=-1) + 1


def _insight(form: FormData, i: int) -> dict[str, Any]:
    field = f"insight-{i}-"
    name = text(form, field + "name")
    options = [o.strip() for o in text(form, field + "options").split(",") if o.strip()]
    weight = text(form, field + "weight") or "1"
    try:
        weight_value = float(weight)
    except ValueError:
        raise UserError(f"insight {name or i + 1}: weight {weight!r} is not a number") from None
    return {
        "name": name,
        "type": text(form, field + "type") or "boolean",
        "description": text(form, field + "description"),
        "options": options,
        "weight": weight_value,
        "pass_when": pass_when(text(form, field + "pass_when")),
        "group": text(form, field + "group") or None,
        "featured": bool(text(form, field + "featured")),
    }


def pass_when(value: str) -> bool | str | list[str] | None:
    """An insight's pass rule as typed: blank -> none, `true`/`false` -> a boolean, a
    comparison (`>= 0.7`) as is, else options comma-separated -> a list."""
    if not value:
        return None
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if value[0] in "<>=!":
        return value
    return [o.strip() for o in value.split(",") if o.strip()]


def pass_when_text(rule: Any) -> str:
    """`pass_when` as the form shows it (the inverse of `pass_when`)."""
    if rule is None:
        return ""
    if isinstance(rule, bool):
        return "true" if rule else "false"
    if isinstance(rule, list):
        return ", ".join(str(o) for o in rule)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return str(rule)


def agent_content(form: FormData) -> tuple[str, dict[str, Any]]:
    """`(name, content)` of an agent's form: its `target` YAML read as a mapping (with the
    limits of test files: no alias bombs, no deep nesting).

    Raises:
        UserError: the YAML does not parse (with the line), or is not one mapping.
    """
    from sparring.loaders._parse import is_mapping, parse_documents

    documents = parse_documents(text(form, "target"), path="the agent's target")
    data = documents[0].data if len(documents) == 1 else None
    if not is_mapping(data):
        raise UserError(
            "the agent's target must be one mapping, e.g. `type: http` and `url: ...` on "
            "their own lines (as under `target:` in a test file)"
        )
    return text(form, "name"), data


def target_yaml(content: Mapping[str, Any]) -> str:
    """An agent revision's target as the form's YAML (empty and unset fields left out)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    shown = {k: v for k, v in content.items() if v not in (None, {}, [])}
    yaml.dump(shown, out)  # pyright: ignore[reportUnknownMemberType]
    return out.getvalue()


def case_rows(form: FormData) -> int:
    """How many test case rows the form has (the highest `case-i-agent` index + 1)."""
    indexes = [int(k.split("-")[1]) for k in form if k.startswith("case-") and k.endswith("-agent")]
    return max(indexes, default=-1) + 1


def suite_cases(form: FormData) -> tuple[str, list[SuiteCase]]:
    """`(name, test cases)` of a suite's form; a row with no agent or simulated user is
    left out.

    Raises:
        UserError: a revision, timeout, max turns or session count that is not one,
            naming the test case.
    """
    cases: list[SuiteCase] = []
    for i in range(case_rows(form)):
        field = f"case-{i}-"
        if not text(form, field + "agent") or not text(form, field + "user"):
            continue
        where = f"test case {len(cases) + 1}"
        cases.append(
            SuiteCase(
                agent_id=_number(form, field + "agent", where, int),
                user_id=_number(form, field + "user", where, int),
                agent_revision=parse_revision_ref(text(form, field + "agent_revision")),
                user_revision=parse_revision_ref(text(form, field + "user_revision")),
                timeout_s=_number(form, field + "timeout_s", where, float, DEFAULT_TIMEOUT_S),
                max_turns=_number(form, field + "max_turns", where, int, None),
                sessions=_number(form, field + "sessions", where, int, DEFAULT_SESSIONS),
            )
        )
    return text(form, "name"), cases


def _number(form: FormData, field: str, where: str, kind: type, default: Any = None) -> Any:
    value = text(form, field)
    if not value:
        return default
    try:
        return kind(value)
    except ValueError:
        what = field.split("-", 2)[2].replace("_", " ")
        raise UserError(f"{where}: {what} {value!r} is not a number") from None

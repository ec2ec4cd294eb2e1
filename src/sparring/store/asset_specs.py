"""Asset contents as specs: an agent revision is a `target:` spec, a simulated user's a
`SimulatedUser`, an agent evaluation's an `Evaluation`, each named by the asset's
`spec_name` (pydantic is imported only when a content is checked or built).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args

from sparring.errors import UserError

if TYPE_CHECKING:
    from pydantic import ValidationError

    from sparring.scenario.evaluations import Evaluation, SimulatedUser
    from sparring.store.assets import Asset, Revision
    from sparring.target_specs import TargetSpec

AssetKind = Literal["agent", "simulated_user", "evaluation"]
ASSET_KINDS: tuple[AssetKind, ...] = get_args(AssetKind)
KIND_LABELS: dict[AssetKind, str] = {
    "agent": "agent",
    "simulated_user": "simulated user",
    "evaluation": "agent evaluation",
}
_SPEC_NAME_MAX = 64


class AssetError(UserError):
    """An asset operation cannot be done: invalid content, a taken name, an archived asset,
    a revision in the wrong state. The message says what and how to fix it."""


def spec_name(name: str) -> str:
    """`name` as test files and verdict ids know it: runs of characters other than letters,
    digits, `_` and `-` become `-` (so `Frustrated customer, late delivery` is
    `Frustrated-customer-late-delivery`), at most 64 characters."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:_SPEC_NAME_MAX].strip("-")
    return slug or "unnamed"


def validate_content(kind: AssetKind, name: str, content: Mapping[str, Any]) -> dict[str, Any]:
    """`content` of a `kind` asset named `name`, validated with its spec and normalised
    (every field, JSON-ready; no `name`, which is the asset's).

    Raises:
        AssetError: `content` is not a valid spec; the message lists each problem with
            where it is (e.g. `insights.0.type: ...`); an agent's holds a literal
            credential (see `_no_literal_credentials`).
    """
    from pydantic import TypeAdapter, ValidationError

    from sparring.scenario.evaluations import Evaluation, SimulatedUser
    from sparring.target_specs import TargetSpec

    data = dict(content)
    try:
        if kind == "agent":
            target = TypeAdapter(TargetSpec).validate_python(data).model_dump(mode="json")
            _no_literal_credentials(name, target)
            return target
        if "name" in data:
            raise AssetError(f"the content of {KIND_LABELS[kind]} {name!r} has no `name` key")
        model = SimulatedUser if kind == "simulated_user" else Evaluation
        checked = model.model_validate({**data, "name": spec_name(name)})
        return checked.model_dump(mode="json", exclude={"name"})
    except ValidationError as e:
        raise AssetError(f"{KIND_LABELS[kind]} {name!r} is not valid: {_problems(e)}") from None


_CREDENTIAL_WORDS = ("auth", "key", "token", "secret", "password", "cookie", "signature")


def _no_literal_credentials(name: str, target: dict[str, Any]) -> None:
    """Refuse an agent whose `api_key`, credential-like headers (Authorization, X-API-Key,
    ...) or URL (a password, a `key`/`token` query value) hold a value written out rather
    than a `{{secrets.NAME}}` placeholder: the store keeps contents in clear and the
    dashboard shows them."""
    from urllib.parse import parse_qsl, urlsplit

    found: list[str] = []
    if "api_key" in target and "{{" not in str(target["api_key"]):
        found.append("api_key")
    headers: dict[str, str] = target.get("headers") or {}
    for header, value in headers.items():
        if _credential_like(header) and "{{" not in value:
            found.append(f"header {header!r}")
    url = urlsplit(str(target.get("url") or target.get("base_url") or ""))
    if url.password and "{{" not in url.password:
        found.append("the password in its URL")
    found += [
        f"URL query {k!r}" for k, v in parse_qsl(url.query) if _credential_like(k) and "{{" not in v
    ]
    if found:
        raise AssetError(
            f"agent {name!r} holds a credential written out ({', '.join(found)}); the store "
            "keeps agents in clear and the dashboard shows them. Write it as "
            "{{secrets.NAME}} and give NAME's value in the secrets file or the environment"
        )


def _credential_like(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _CREDENTIAL_WORDS)


def _problems(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in item['loc']) or 'content'}: {item['msg']}"
        for item in error.errors()
    )


def target_spec(revision: Revision) -> TargetSpec:
    """An agent revision's `target:` spec."""
    from pydantic import TypeAdapter

    from sparring.target_specs import TargetSpec

    return TypeAdapter(TargetSpec).validate_python(revision.content)


def simulated_user_spec(asset: Asset, revision: Revision) -> SimulatedUser:
    """A simulated user revision as the spec scenarios use; its `evaluations` are the
    `spec_name`s of the attached agent evaluations."""
    from sparring.scenario.evaluations import SimulatedUser

    content = dict(revision.content)
    content["evaluations"] = [spec_name(e) for e in content.get("evaluations", [])]
    return SimulatedUser.model_validate({**content, "name": asset.spec_name})


def evaluation_spec(asset: Asset, revision: Revision) -> Evaluation:
    """An agent evaluation revision as the spec scenarios use (named `asset.spec_name`)."""
    from sparring.scenario.evaluations import Evaluation

    return Evaluation.model_validate({**revision.content, "name": asset.spec_name})

"""Sessions outside a Suite's own runs: the targets Python code may give, `open_session`,
and the judge model it resolves."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ValidationError

from sparring.errors import UserError
from sparring.judging.should import JudgeSettings
from sparring.models.base import Model
from sparring.runner.context import (
    TrialContext,
    TrialLog,
    UserPlay,
    current_trial,
)
from sparring.target_specs import TargetSpec
from sparring.targets.base import Target

if TYPE_CHECKING:
    from sparring.config import Settings
    from sparring.secrets import Secrets
    from sparring.targets.registry import AnyTargetSpec

from sparring.authoring.blocking import BlockingSession, SyncSession
from sparring.authoring.session import Session

TargetLike = Target | Mapping[str, Any] | str | Callable[..., Any] | BaseModel
"""What a Suite or `open_session` accepts as target: a `Target`, a target spec (a mapping as
under `target:` in YAML, or a spec model), an `http(s)://` URL, or a function
`agent(history)`."""


def coerce_target(value: TargetLike, *, timeout_s: float = 60) -> Target | AnyTargetSpec:
    """`value` as a Target (objects and functions) or a validated target spec.

    Args:
        value: See `TargetLike`.
        timeout_s: The reply timeout of a function target, and of a spec given as a URL.

    Raises:
        UserError: anything else, or a spec that does not validate.
    """
    from sparring.targets.callable import CallableTarget

    if isinstance(value, Target | BaseModel):
        return cast("Target | AnyTargetSpec", value)
    if isinstance(value, str):
        value = {"type": "http", "url": value, "timeout_s": timeout_s}
    if isinstance(value, Mapping):
        data = {"target": dict(cast(Mapping[str, Any], value))}
        try:
            return _TargetEntry.model_validate(data).target
        except ValidationError as e:
            raise UserError(
                f"invalid target {data['target']!r}: {_target_problems(e, data)}"
            ) from None
    if callable(value):
        return CallableTarget(value, timeout_s=timeout_s)
    raise UserError(
        f"a target is a URL, a target spec mapping, a function agent(history) or "
        f"a sparring Target; got {type(value).__name__}"
    )


class _TargetEntry(BaseModel):
    """A target spec under `target:`, so validation errors read as in a YAML test file."""

    target: TargetSpec


def _target_problems(error: ValidationError, data: dict[str, Any]) -> str:
    """`error` (from validating `data`, `{"target": spec}`) worded as the YAML loader words
    it, with did-you-mean for unknown keys, e.g. `unknown key 'respons_path' in target (http
    target); did you mean 'response_path'?`."""
    from sparring.loaders._parse import Document
    from sparring.loaders.errors import validation_problems

    problems = validation_problems(error, doc=Document(data), path="", single=False)
    return "; ".join(p.message for p in problems)


class SessionContext:
    """What `open_session` returns: `async with open_session(...) as session:`. Used with a
    plain `with`, it says how to write it instead of a bare TypeError."""

    def __init__(self, opening: AbstractAsyncContextManager[Session]) -> None:
        self._opening = opening
        self._sync: SyncSession | None = None

    async def __aenter__(self) -> Session:
        return await self._opening.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._opening.__aexit__(*exc)

    def __enter__(self) -> BlockingSession:
        """`with open_session(...) as session:` in a sync test or hook sparring runs.

        Raises:
            UserError: anywhere else (write `async with`)."""
        self._sync = SyncSession(self)
        return self._sync.__enter__()

    def __exit__(self, *exc: Any) -> bool | None:
        return self._sync.__exit__(*exc) if self._sync is not None else None


def open_session(
    target: TargetLike, *, model: Model | str | None = None, response_timeout: float = 60
) -> SessionContext:
    """A session on `target` for code that runs outside a Suite (scripts, notebooks, the
    pytest plugin's fixture).

    Inside a run's trial it records into that trial and uses the run's judge model unless
    `model` is given; outside one it keeps its own record (`session.trial.recorder`, a
    `TrialLog`) and judges with `model` (a `Model`, `"provider:name"`, or `None` for
    SPARRING_MODEL / `[tool.sparring]`; with none, `should` verdicts are `skipped`).

    Raises:
        UserError: a target or model that cannot be used, invalid settings, or a secrets
            file that cannot be read.
    """
    return SessionContext(_opened(target, model=model, response_timeout=response_timeout))


@asynccontextmanager
async def _opened(
    target: TargetLike, *, model: Model | str | None, response_timeout: float
) -> AsyncGenerator[Session]:
    from sparring.config import load_settings
    from sparring.secrets import Secrets

    async with AsyncExitStack() as stack:
        current = current_trial()
        judge_model = await resolve_judge_model(model, stack, fallback=current is None)
        built = coerce_target(target, timeout_s=response_timeout)
        settings = load_settings({})  # the secrets file and model key, as a run reads them
        secrets = Secrets.load(file=settings.secrets_file, api_key=settings.api_key)
        if not isinstance(built, Target):
            built = await _built(built, stack, current, secrets)
        if current is None:  # the judge and the record see secrets masked, as in a run
            trial = TrialContext(
                scenario_id="session",
                target=built,
                judge=JudgeSettings(model=judge_model, scrub=secrets.scrub),
                reply_timeout_s=response_timeout,
                recorder=TrialLog(scrub=secrets.scrub),
                user=UserPlay(model=judge_model, scrub=secrets.scrub),  # plays the user too
            )
        else:
            trial = (
                current
                if judge_model is None
                else replace(current, judge=replace(current.judge, model=judge_model))
            )
        async with Session(built, trial=trial) as session:
            yield session


async def resolve_judge_model(
    model: Model | str | None,
    stack: AsyncExitStack,
    *,
    fallback: bool,
    settings: Settings | None = None,
) -> Model | None:
    """The judge model `model` names (a string is resolved, and closed by `stack`); with
    `None` and `fallback`, the configured one (SPARRING_MODEL, `[tool.sparring]`), if any.

    Args:
        model: A `Model` (returned as is), a `"provider:name"` spec, or `None`.
        stack: Closes a model this call makes.
        fallback: With `model=None`, take the configured judge model.
        settings: Connect the model with these (`base_url`, `api_key`, timeouts, prices)
            and take the configured one from them; `None`: read the environment and files.

    Raises:
        UserError: an unknown provider or invalid settings.
    """
    if isinstance(model, Model):
        return model
    if model is None and not fallback:
        return None
    from sparring.config import load_settings
    from sparring.models.registry import model_from_settings

    settings = settings or load_settings({})
    spec = model or settings.resolved_judge_model
    if spec is None:
        return None
    made = model_from_settings(spec, settings)
    stack.push_async_callback(made.aclose)
    return made


async def _built(
    spec: AnyTargetSpec, stack: AsyncExitStack, current: TrialContext | None, secrets: Secrets
) -> Target:
    if current is not None and current.build_target is not None:
        return current.build_target(spec)
    import httpx

    from sparring.targets.registry import build_target

    client = httpx.AsyncClient(follow_redirects=False)
    stack.push_async_callback(client.aclose)
    target = build_target(spec, client=client, secrets=secrets)
    stack.push_async_callback(target.aclose)
    return target

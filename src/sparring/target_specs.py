"""How to reach a target: the `target:` specs of test files (http, openai_chat, callable,
a2a, parlant, voice, browser).

Part of the test-file schema (see `sparring.scenario`); `sparring.targets.registry` turns a
spec into a live Target.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeGuard

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sparring.errors import UserError
from sparring.targets.response_paths import ResponsePath

FROZEN = ConfigDict(frozen=True, extra="forbid")
"""Model config of every test-file model: immutable, unknown keys rejected."""


def is_raw_mapping(value: object) -> TypeGuard[dict[Any, Any]]:
    """`isinstance(value, dict)` for raw YAML/JSON data, whose keys and values are untyped."""
    return isinstance(value, dict)


def check_http_url(url: str, *, key: str) -> str:
    """`url` unchanged when it starts with `http://`, `https://` or a `{{placeholder}}`.

    Raises:
        ValueError: any other start (no scheme, `ftp://`, ...), naming `key` and the fix.
    """
    if url.startswith("{{"):
        return url
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in ("http", "https"):
        if not rest or rest.startswith("/"):
            raise ValueError(
                f"{key} {url!r} has no host after {scheme}://; write it like "
                "'http://localhost:8000/chat'"
            )
        return url
    host = rest if sep else url.strip()
    local = host.startswith(("localhost", "127.", "0.0.0.0", "["))
    example = f"'{'http' if local else 'https'}://{host}'"
    found = f"it starts with {scheme}://" if sep else "it has no scheme"
    raise ValueError(
        f"{key} {url!r} is not an HTTP address ({found}); start the url with "
        f"http:// or https://, e.g. {example}"
    )


HttpAddress = Annotated[
    str, AfterValidator(lambda url, info: check_http_url(url, key=info.field_name or "url"))
]
"""A `str` field holding an HTTP address, checked by `check_http_url` (errors name the field)."""


def _check_response_path(path: str, info: ValidationInfo) -> str:
    try:
        ResponsePath(path, option=info.field_name or "response_path")
    except UserError as e:
        raise ValueError(str(e)) from None
    return path


ResponsePathText = Annotated[str, AfterValidator(_check_response_path)]
"""A `str` field holding a response path (`sparring.targets.response_paths`), parsed at load time so
a wrong path is reported with the test file's line, not on the first reply."""


_FRAMING_HEADERS = ("content-length", "transfer-encoding")


def _check_headers(headers: dict[str, str]) -> dict[str, str]:
    for name in headers:
        if name.strip().lower() in _FRAMING_HEADERS:
            raise ValueError(
                f"header {name!r} cannot be set: the HTTP client sets it from the body "
                "each request sends (a fixed value would not match the filled-in "
                "body_template); remove it from `headers`"
            )
    return headers


Headers = Annotated[dict[str, str], AfterValidator(_check_headers)]
"""The `headers` of a target: sent with every request; may use `{{secrets.NAME}}`. The
headers that frame the body (`Content-Length`, `Transfer-Encoding`) are refused at load."""


class HttpTargetSpec(BaseModel):
    """An agent behind a JSON-over-HTTP endpoint (DESIGN.md section 4, `http`).

    Placeholders `{{input}}` / `{{message}}`, `{{history}}` and `{{secrets.NAME}}` are filled
    in `url`, `headers` and `body_template`; `{{files}}` (the message's files) in
    `body_template`. `response_path` picks the reply text;
    `tool_calls_path` (optional) picks a list of tool calls, each an object with `name` and
    `arguments` (a JSON object or string).
    """

    model_config = FROZEN
    type: Literal["http"] = "http"
    url: HttpAddress
    method: Literal["POST", "PUT", "PATCH", "GET", "HEAD"] = "POST"
    headers: Headers = Field(default_factory=dict[str, str])
    body_template: JsonValue = Field(default_factory=lambda: {"message": "{{input}}"})
    response_path: ResponsePathText = "$"
    tool_calls_path: ResponsePathText | None = None
    timeout_s: float = Field(default=60, gt=0, le=3600)


class OpenAIChatTargetSpec(BaseModel):
    """An agent behind an OpenAI-compatible chat completions endpoint (`openai_chat`).

    The whole conversation is sent as `messages` each turn (with `system_prompt` first when
    given); tool calls in the reply are recorded.
    """

    model_config = FROZEN
    type: Literal["openai_chat"] = "openai_chat"
    base_url: HttpAddress
    model: str
    api_key: str = "{{secrets.OPENAI_API_KEY}}"
    system_prompt: str | None = None
    headers: Headers = Field(default_factory=dict[str, str])
    temperature: float | None = None
    timeout_s: float = Field(default=60, gt=0, le=3600)


class CallableTargetSpec(BaseModel):
    """A Python function `agent(history) -> reply`, named by import path `module:attribute`."""

    model_config = FROZEN
    type: Literal["callable"] = "callable"
    ref: str = Field(pattern=r"^[\w.]+:[\w.]+$")
    timeout_s: float = Field(default=60, gt=0, le=3600)


class A2ATargetSpec(BaseModel):
    """An agent speaking the A2A protocol (DESIGN.md section 4, `a2a`; extra `a2a`).

    `url` is the agent's base address: its card is read from `url` + `card_path` (default
    `/.well-known/agent-card.json`; agents on A2A 0.2 serve `/.well-known/agent.json`), and
    messages go to the endpoint the card names. One A2A context per conversation;
    `streaming: true` uses streaming (`SendStreamingMessage`, `message/stream` in A2A 0.3)
    when the card says the agent streams. `headers` may use `{{secrets.NAME}}` (e.g. an
    Authorization header); they go with every request, the card's included.

    A2A has no standard place for tool calls: `tool_calls_path` (optional) picks them from
    the final task (or the agent's direct message) as A2A JSON, camelCase as on the wire,
    e.g. `metadata.toolCalls`; items as for http (`name` and `arguments`).
    """

    model_config = FROZEN
    type: Literal["a2a"]
    url: HttpAddress
    card_path: str = "/.well-known/agent-card.json"
    headers: Headers = Field(default_factory=dict[str, str])
    streaming: bool = False
    tool_calls_path: ResponsePathText | None = None
    timeout_s: float = Field(default=60, gt=0, le=3600)

    @field_validator("url")
    @classmethod
    def _no_placeholders(cls, url: str) -> str:
        if "{{" in url:
            raise ValueError(
                f"url {url!r} cannot use placeholders on an a2a target; put "
                "credentials in `headers`, e.g. Authorization: Bearer "
                "{{secrets.AGENT_TOKEN}}"
            )
        return url

    @field_validator("card_path")
    @classmethod
    def _card_path(cls, path: str) -> str:
        if not path.startswith("/") or any(c.isspace() for c in path):
            raise ValueError(
                f"card_path {path!r} must be a path after `url`, starting with "
                "'/' and without spaces, e.g. /.well-known/agent.json"
            )
        return path


class ParlantTargetSpec(BaseModel):
    """An agent on a Parlant server (DESIGN.md section 4, `parlant`): one Parlant session per
    conversation with `agent_id` (and `customer_id` when given); the reply is every agent
    message the server emits for a customer message, until it goes idle."""

    model_config = FROZEN
    type: Literal["parlant"]
    url: HttpAddress
    agent_id: str = Field(min_length=1)
    customer_id: str | None = None
    headers: Headers = Field(default_factory=dict[str, str])
    timeout_s: float = Field(default=60, gt=0, le=3600)


_REF = r"^[\w.]+:[\w.]+$"


class VoiceTargetSpec(BaseModel):
    """A voice agent (DESIGN.md section 4, `voice`; `sparring.targets.voice`): each user
    message is played to it as a WAV (the turn's `audio:`, or its text spoken by `speech`).

    Exactly one of `callable` (a function `agent(audio, history) -> reply`, as
    `module:function`) and `livekit` (a function returning a LiveKit `(AgentSession,
    Agent)`, extra `livekit`). `speech` / `speech_voice` pick the synthesis of messages
    without a WAV (`espeak` or `openai`; default: openai with OPENAI_API_KEY, else espeak).
    `sample_rate` (Hz), `frame_ms` and `grace_period_s` (the quiet time after the agent's
    last output that ends its reply) are LiveKit's streaming settings.
    """

    model_config = FROZEN
    type: Literal["voice"]
    callable: str | None = Field(default=None, pattern=_REF)
    livekit: str | None = Field(default=None, pattern=_REF)
    speech: Literal["espeak", "openai"] | None = None
    speech_voice: str | None = None
    sample_rate: int = Field(default=24000, ge=8000, le=48000)
    frame_ms: int = Field(default=20, ge=10, le=100)
    grace_period_s: float = Field(default=1.0, ge=0, le=30)
    timeout_s: float = Field(default=60, gt=0, le=3600)

    @model_validator(mode="after")
    def _one_agent(self) -> VoiceTargetSpec:
        if (self.callable is None) == (self.livekit is None):
            raise ValueError(
                "a voice target needs exactly one of `callable: module:function` (a function "
                "agent(audio, history)) and `livekit: module:function` (returning a LiveKit "
                "(AgentSession, Agent))"
            )
        return self


Selector = Annotated[str, Field(min_length=1)]
"""A Playwright selector: CSS (`#chat textarea`, piercing open shadow roots), `text=Ask Nora`,
`role=button[name="Send"]`, ..."""


class BrowserTargetSpec(BaseModel):
    """A chat widget on a web page, driven in headless Chromium (DESIGN.md section 4,
    `browser`; extra `browser`).

    `chat_url` is the page: a path such as `/support` is joined to the `site_url` setting, a
    full URL is used as is, and left out it is `site_url` itself. The widget is found on the
    page: opened from `chat_hint` ("Click the chat bubble, bottom right") or a bubble /
    launcher button, its input in the page, in an iframe or in a shadow root. `open`,
    `input`, `send` and `messages` are Playwright selectors for pages the finder cannot read.
    `device` emulates a Playwright device (e.g. "iPhone 13"; default: the `browser_device`
    setting, else desktop Chromium).
    `screenshots`: after `every_turn`, only for trials that did not pass (`failures`, the
    default), or `none`. `timeout_s` is how long a reply may take to begin, in seconds;
    `settle_s` how long it must stay unchanged to be complete.
    """

    model_config = FROZEN
    type: Literal["browser"] = "browser"
    chat_url: str = ""
    chat_hint: str | None = None
    open: Selector | None = None
    input: Selector | None = None
    send: Selector | None = None
    messages: Selector | None = None
    device: str | None = Field(default=None, min_length=1)
    screenshots: Literal["every_turn", "failures", "none"] = "failures"
    timeout_s: float = Field(default=60, gt=0, le=3600)
    settle_s: float = Field(default=1.0, gt=0, le=60)

    @field_validator("chat_url")
    @classmethod
    def _chat_url(cls, url: str) -> str:
        if url.startswith("/") and not any(c.isspace() for c in url):
            return url
        if not url:
            return url
        if url.startswith("{{"):
            raise ValueError(
                f"chat_url {url!r} cannot use placeholders; give a path such as /support "
                "(joined to the site_url setting) or a full URL"
            )
        return check_http_url(url, key="chat_url")


def _target_type(value: Any) -> str | None:
    if is_raw_mapping(value):
        if "type" in value:
            return value["type"]
        if "url" in value:
            return "http"
        if "ref" in value:
            return "callable"
        if "base_url" in value:
            return "openai_chat"
        if set(value) <= set(BrowserTargetSpec.model_fields):
            return "browser"  # no address at all: the website chat on the site_url setting
        return None  # e.g. a misspelt `url`: the error lists the keys of every target
    return getattr(value, "type", None)


TargetSpec = Annotated[
    Annotated[HttpTargetSpec, Tag("http")]
    | Annotated[OpenAIChatTargetSpec, Tag("openai_chat")]
    | Annotated[CallableTargetSpec, Tag("callable")]
    | Annotated[A2ATargetSpec, Tag("a2a")]
    | Annotated[ParlantTargetSpec, Tag("parlant")]
    | Annotated[VoiceTargetSpec, Tag("voice")]
    | Annotated[BrowserTargetSpec, Tag("browser")],
    Discriminator(
        _target_type,
        custom_error_type="target_type",
        custom_error_message="target needs `type` (http, openai_chat, callable, "
        "a2a, parlant, voice, browser) or a `url` (http), `ref` (callable) or `base_url` "
        "(openai_chat); without any of them it is a website chat (browser)",
    ),
]

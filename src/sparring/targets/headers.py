"""`HeaderTemplate`: one request header of an HTTP-style target, checked before it is sent.

HTTP header names are tokens (letters, digits and ``!#$%&'*+-.^_`|~``) and values are
printable ASCII on one line (tabs allowed). The template text and the secrets it uses are
checked when the target is built (`UserError`); values inserted per turn, such as the
user's message, are checked when the header is filled (`TargetError`), so a bad header
never reaches the HTTP library as an unexplained encoding or protocol error.
"""

from __future__ import annotations

import re

from sparring.errors import TargetError, UserError
from sparring.secrets import Secrets
from sparring.targets.templates import History, TextTemplate, placeholder_names

_TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_BAD_VALUE_CHAR = re.compile(r"[^\t\x20-\x7e]")
_RULE = "HTTP header values must be printable ASCII on one line"


def _problem(char: str) -> str:
    if char in "\r\n":
        return "a line break"
    if ord(char) < 0x20 or char == "\x7f":
        return f"a control character ({char!r})"
    return f"a non-ASCII character ({char!r})"


class HeaderTemplate:
    """A header name and value template, validated (see module docstring).

    Args:
        name: The header name as written in `headers`.
        text: The value template, e.g. `Bearer {{secrets.BOT_KEY}}`.
        secrets: Looked up now for the `{{secrets.NAME}}` the value uses, to check them.

    Raises:
        UserError: the name is not a valid header name, the template text has a line
            break, control or non-ASCII character, or a secret it uses does (the secret's
            value is never shown), or a secret it uses is not set.
    """

    __slots__ = ("_placeholders", "_template", "name")

    def __init__(self, name: str, text: str, *, secrets: Secrets) -> None:
        if not _TOKEN.fullmatch(name):
            raise UserError(
                f"header name {name!r} is not a valid HTTP header name: use "
                "letters, digits and '-' only (e.g. X-Api-Key), no spaces or ':'"
            )
        bad = _BAD_VALUE_CHAR.search(text)
        if bad is not None:
            raise UserError(
                f"header {name!r}: the value has {_problem(bad.group())} at "
                f"position {bad.start()}; {_RULE}: remove it, or percent-encode "
                "it if the agent expects that"
            )
        self.name, self._template = name, TextTemplate(text)
        names = placeholder_names(text)
        for secret in sorted(n[8:] for n in names if n.startswith("secrets.")):
            value = _BAD_VALUE_CHAR.search(secrets.get(secret))
            if value is not None:
                kind = _problem(value.group()).split(" (", 1)[0]
                raise UserError(
                    f"header {name!r}: secret {secret!r} holds {kind}, which a "
                    f"header cannot carry ({_RULE}); check the secret's value "
                    "(a trailing newline from a file?)"
                )
        self._placeholders = ", ".join(f"{{{{{n}}}}}" for n in sorted(names))

    def fill(self, *, message: str, history: History, secrets: Secrets) -> str:
        """The header value for one request.

        Raises:
            TargetError: a filled-in value (e.g. the user's message) put a line break,
                control or non-ASCII character into the header.
        """
        value = self._template.fill(message=message, history=history, secrets=secrets)
        bad = _BAD_VALUE_CHAR.search(value)
        if bad is not None:
            raise TargetError(
                secrets.scrub(
                    f"header {self.name!r} cannot be sent: after filling {self._placeholders}, "
                    f"its value has {_problem(bad.group())}; {_RULE}. Send that text in "
                    "`body_template` instead of `headers`"
                )
            )
        return value

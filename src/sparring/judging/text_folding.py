"""Text as the checks compare it: without invisible format characters, NFKC-normalised and
case-folded, with a map back to the original text so that evidence quotes what was said.

`contains` / `not_contains` (without `case_sensitive`) and `not_pii` read replies this way,
so `re\u00adfund`, `r\u200befund` and full-width `Ｒｅｆｕｎｄ` all hold "refund", and
`４１１１\u00a01111...` is a card number.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache


@lru_cache(maxsize=16)  # a reply is folded once for all the values checked on it
def folded(text: str) -> tuple[str, list[int], list[int]]:
    """`text` without invisible format characters (zero-width, soft hyphen: Unicode category
    Cf), NFKC-normalised and case-folded one character with its combining marks at a time
    (`_fold`); and, per character of the result, where in `text` its source starts and ends.

    Returns:
        `(folded text, starts, ends)`: `text[starts[i]:ends[i]]` is what the folded text's
        character `i` came from. The lists are shared by callers (cached): do not change
        them.
    """
    clusters: list[list[str]] = []
    spans: list[tuple[int, int]] = []
    for index, char in enumerate(text):
        if unicodedata.category(char) == "Cf":
            continue
        if clusters and unicodedata.combining(char):
            clusters[-1].append(char)
            spans[-1] = (spans[-1][0], index + 1)
        else:
            clusters.append([char])
            spans.append((index, index + 1))
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for cluster, (start, end) in zip(clusters, spans, strict=True):
        part = _fold("".join(cluster))
        parts.append(part)
        starts += [start] * len(part)
        ends += [end] * len(part)
    return "".join(parts), starts, ends


def _fold(text: str) -> str:
    """NFKC, case-folded, NFKC again; the dotted capital İ folds to a plain i."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return folded.replace("i\u0307", "i")

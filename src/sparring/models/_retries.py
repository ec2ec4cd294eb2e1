"""The retries an SDK made before it gave up, worded for `ModelError` messages.

The OpenAI and Anthropic SDKs send the count on every attempt as the request header
`x-stainless-retry-count`, and their errors keep that request (and the response, for an
HTTP status error), so the count is read from there rather than assumed from `max_retries`:
a server answering `x-should-retry: false` is not retried at all.
"""

from __future__ import annotations

from collections.abc import Mapping


def retries_text(
    request_headers: Mapping[str, str],
    response_headers: Mapping[str, str] | None,
    *,
    max_retries: int,
) -> str:
    """How often the failed call was retried, to follow "failed" or "no answer within 5 s".

    Args:
        request_headers: Headers of the last attempt (the SDK error's `request.headers`).
        response_headers: Headers of its response; `None` when there was none (a timeout,
            a connection error).
        max_retries: The client's limit, used when the count is not in `request_headers`.

    Returns:
        `after 2 retries`, `after 1 retry`, `(no retries)`, `(not retried: the server
        answered x-should-retry: false)`, or `after up to 4 retries` when the count is
        unknown.
    """
    taken = request_headers.get("x-stainless-retry-count", "")
    if not taken.isdigit():
        return f"after up to {max_retries} retries" if max_retries else "(no retries)"
    count = int(taken)
    if count:
        return f"after {count} {'retry' if count == 1 else 'retries'}"
    refused = (
        response_headers is not None
        and response_headers.get("x-should-retry", "").lower() == "false"
    )
    if refused and max_retries:
        return "(not retried: the server answered x-should-retry: false)"
    return "(no retries)"

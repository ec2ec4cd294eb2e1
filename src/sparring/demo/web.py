"""The demo shop's web pages: a product page with a chat widget (static HTML/JS in `web/`).

`GET /shop` serves the page with the widget in it; `/shop/iframe`, `/shop/shadow`,
`/shop/silent` and `/shop/custom` serve the same page, and the widget script reads the path
to pick its variant (inside an iframe, inside a shadow root, an assistant that never
answers, markup without chat words). The widget sends each message to the demo agent's
`POST /chat/stream` and shows the reply in pieces after a typing indicator. `GET /web/NAME`
serves the files themselves.
"""

from __future__ import annotations

from importlib import resources

SHOP_PAGES = ("/shop", "/shop/iframe", "/shop/shadow", "/shop/silent", "/shop/custom")
"""The paths of the shop page, one per widget variant."""
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


def web_file(path: str) -> tuple[str, bytes] | None:
    """`(content type, body)` of the page or file at `path` (a URL path without query or
    trailing slash), `None` when `path` is not one of them."""
    if path in SHOP_PAGES:
        name = "shop.html"
    elif path.startswith("/web/"):
        name = path.removeprefix("/web/")
    else:
        return None
    files = resources.files("sparring.demo").joinpath("web")
    suffix = name[name.rfind(".") :] if "." in name else ""
    if "/" in name or suffix not in _TYPES or not files.joinpath(name).is_file():
        return None
    return _TYPES[suffix], files.joinpath(name).read_bytes()

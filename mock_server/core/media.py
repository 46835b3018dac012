"""Content-Type headers, read one way wherever the mock reads one: a media type and a charset.

The request validation, the response validation, the drift check and the proxy all ask the
same two questions of a header (what media type, what charset) and whether a body is JSON.
python-multipart's parser (Connexion's own dependency) reads the header as RFC 9110 writes
it: parameters after `;` with optional spaces, quoted values, the type case-insensitive.
"""

from __future__ import annotations

import functools

from python_multipart.multipart import parse_options_header

__all__ = ["content_type", "is_json", "media_type"]


@functools.lru_cache(maxsize=128)
def content_type(value: str | bytes) -> tuple[str, str | None]:
    """A Content-Type's media type, lower-cased ('' for an empty header), and its charset,
    lower-cased, or None when it names none. Clients send a handful of distinct values:
    each is parsed once."""
    media, options = parse_options_header(value)
    charset = options.get(b"charset")
    return media.decode("latin-1"), charset.decode("latin-1").lower() if charset else None


def media_type(value: str | bytes) -> str:
    """A Content-Type's media type alone, lower-cased ('' for an empty header)."""
    return content_type(value)[0]


def is_json(media: str) -> bool:
    """Whether a media type (as `content_type` gives it) is JSON: `application/json` or a
    `+json` type such as `application/problem+json`."""
    return media == "application/json" or media.endswith("+json")

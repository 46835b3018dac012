"""Content-Type headers read one way (mock_server/core/media.py): media type and charset."""

from __future__ import annotations

import pytest

from mock_server.core.media import content_type, is_json, media_type


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param("application/json", ("application/json", None), id="plain"),
        pytest.param("APPLICATION/JSON", ("application/json", None), id="upper-case"),
        pytest.param(
            "application/json; charset=UTF-8", ("application/json", "utf-8"), id="charset"
        ),
        pytest.param(
            "application/json;charset=utf-8", ("application/json", "utf-8"), id="no-space"
        ),
        pytest.param('text/plain; charset="latin-1"', ("text/plain", "latin-1"), id="quoted"),
        pytest.param("text/plain ; charset = utf-8", ("text/plain", "utf-8"), id="spaced"),
        pytest.param(b"application/json", ("application/json", None), id="bytes"),
        pytest.param("", ("", None), id="empty"),
    ],
)
def test_a_content_type_is_read_as_its_media_type_and_charset(header, expected):
    assert content_type(header) == expected


def test_the_media_type_alone_drops_the_parameters():
    assert media_type("Application/Problem+JSON; charset=utf-8") == "application/problem+json"


@pytest.mark.parametrize(
    ("media", "json"),
    [
        pytest.param("application/json", True, id="json"),
        pytest.param("application/problem+json", True, id="plus-json"),
        pytest.param("text/plain", False, id="text"),
        pytest.param("", False, id="none"),
    ],
)
def test_json_is_application_json_or_a_plus_json_type(media, json):
    assert is_json(media) is json

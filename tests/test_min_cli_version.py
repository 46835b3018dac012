"""GET /api/svc/v1/min-cli-version (`getMinCliVersion`): what the platform's CLI and library
ask first, without a token, answered so that every published version runs."""

from __future__ import annotations

import pytest

from tests.conftest import CONTROL_PLANE, assert_error

PATH = CONTROL_PLANE + "/min-cli-version"


def test_answers_without_a_token(anonymous):
    response = anonymous.get(PATH)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "minVersion": "0.1.0",
        "truefoundryCliMinVersion": "0.1.0",
        "useSFYServerAuthAPIs": False,
        "pythonBuildDefaultImageTag": "3.11",
    }


def test_a_token_sent_anyway_is_not_read(anonymous):
    # A client that sends its (here malformed) token everywhere still gets its answer.
    response = anonymous.get(PATH, headers={"Authorization": "Bearer not-a-jwt"})
    assert response.status_code == 200, response.text


@pytest.mark.platform_mock(expect_violations=True)
def test_takes_no_query_parameter(anonymous):
    body = assert_error(anonymous.get(PATH, params={"version": "1"}), 400, 40001)
    assert [d["field"] for d in body["details"]] == ["version"]


def test_is_journaled_without_a_caller(anonymous, mock):
    anonymous.get(PATH)
    mock.journal.assert_called("getMinCliVersion", times=1, status=200)

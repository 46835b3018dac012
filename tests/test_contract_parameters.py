"""The contract's one parameter check (`mock_server.contract.parameters`), without HTTP: what the
mock's request validation and the drift proxy both read a request's parameters by."""

from __future__ import annotations

import pytest

from mock_server.contract import documents as contract
from mock_server.contract.parameters import ParameterCheck, query_pairs
from mock_server.core import errors


def _check(operation_id: str) -> ParameterCheck:
    return ParameterCheck(contract.definitions()[operation_id].get("parameters", []))


def _runs(query: bytes) -> dict:
    return _check("listJobRuns").parse(query_pairs(query), {"jobId": "j-1"}, {})


def _refused(query: bytes) -> list[tuple[str, str]]:
    with pytest.raises(errors.InvalidRequest) as refused:
        _runs(query)
    return [(d["location"], d["field"]) for d in refused.value.details]


@pytest.mark.parametrize(
    ("query", "name", "expected"),
    [
        pytest.param(
            b"status=FAILED&status=FINISHED", "status", ["FAILED", "FINISHED"], id="repeated-keys"
        ),
        pytest.param(b"limit=20", "limit", 20, id="integer"),
        pytest.param(
            b"versionNumbers=1&versionNumbers=2.5", "versionNumbers", [1.0, 2.5], id="numbers"
        ),
        pytest.param(b"", "offset", 0, id="default"),
    ],
)  # fmt: skip
def test_a_query_value_is_read_in_the_contracts_type(query, name, expected):
    assert _runs(query)[name] == expected


def test_a_nullable_text_sent_as_null_is_left_out():
    assert "searchPrefix" not in _runs(b"searchPrefix=null")


def test_a_path_value_is_given_to_the_handler():
    assert _runs(b"")["jobId"] == "j-1"


@pytest.mark.parametrize(
    ("query", "where"),
    [
        pytest.param(b"status=FAILED,FINISHED", ("query", "status[0]"), id="commas-are-one-value"),
        pytest.param(b"limit=1_0", ("query", "limit"), id="underscore-digits"),
        pytest.param(b"limit=%201", ("query", "limit"), id="space-before"),
        pytest.param(b"limit=1&limit=2", ("query", "limit"), id="one-value-given-twice"),
        pytest.param(b"limt=1", ("query", "limt"), id="unknown-key"),
        pytest.param(b"limit=0", ("query", "limit"), id="below-minimum"),
    ],
)
def test_a_query_the_contract_refuses_names_the_field(query, where):
    assert where in _refused(query)


def test_a_boolean_is_read_from_true_or_false_only():
    check = _check("listArtifactVersions")
    pairs = query_pairs(b"include_internal_metadata=yes")
    with pytest.raises(errors.InvalidRequest) as refused:
        check.parse(pairs, {}, {})
    assert [d["field"] for d in refused.value.details] == ["include_internal_metadata"]


def test_a_path_number_is_read_by_the_contracts_grammar():
    check = ParameterCheck(
        contract.spec(contract.ADMIN_SPEC)["paths"]["/requests/{id}"]["get"]["parameters"]
    )
    with pytest.raises(errors.InvalidRequest) as refused:
        check.parse([], {"id": "1_0"}, {})
    assert [(d["location"], d["field"]) for d in refused.value.details] == [("path", "id")]

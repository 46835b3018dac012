"""A record's wire form: written under its TypedDict's camelCase keys, in order, and read back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import pytest

from mock_server.core import camel


@dataclass
class Rule:
    rule_id: str
    delay_ms: int = 0
    match: dict[str, str] = field(default_factory=dict)
    seen: int = 0  # not on the wire

    @property
    def always(self) -> bool:
        return self.delay_ms == 0


class RuleWire(TypedDict):
    delayMs: int
    ruleId: str
    match: dict[str, str]
    always: bool


@pytest.mark.parametrize(
    ("key", "attribute"),
    [
        pytest.param("seq", "seq", id="one-word"),
        pytest.param("operationId", "operation_id", id="two-words"),
        pytest.param("p50Ms", "p50_ms", id="with-a-digit"),
        pytest.param("headersDropped", "headers_dropped", id="long"),
    ],
)
def test_a_key_is_read_from_its_attribute_in_snake_case(key: str, attribute: str):
    assert camel.snake(key) == attribute


def test_the_wire_form_holds_the_typeddicts_keys_in_their_order():
    wire = camel.to_wire(Rule("fault-1", 250, {"limit": "5"}), RuleWire)
    assert list(wire) == ["delayMs", "ruleId", "match", "always"]


def test_the_wire_form_reads_a_property_as_a_field():
    assert camel.to_wire(Rule("fault-1"), RuleWire)["always"] is True


def test_the_wire_form_holds_the_records_own_values_not_copies():
    rule = Rule("fault-1", match={"limit": "5"})
    assert camel.to_wire(rule, RuleWire)["match"] is rule.match


def test_a_wire_form_of_one_key_is_refused():
    class One(TypedDict):
        seq: int

    with pytest.raises(TypeError, match="needs no converter"):
        camel.to_wire(Rule("fault-1"), One)


def test_a_record_read_back_is_the_record_written():
    rule = Rule("fault-1", 250, {"limit": "5"})
    assert camel.from_wire(Rule, camel.to_wire(rule, RuleWire)) == rule


def test_a_field_missing_from_the_wire_form_takes_its_default():
    assert camel.from_wire(Rule, {"ruleId": "fault-1"}) == Rule("fault-1")


def test_a_field_given_wins_over_the_wire_form():
    read = camel.from_wire(Rule, {"ruleId": "fault-1", "delayMs": 5}, delay_ms=7)
    assert read.delay_ms == 7


def test_a_key_no_field_takes_is_left_out():
    read = camel.from_wire(Rule, {"ruleId": "fault-1", "always": False, "id": "w"})
    assert read == Rule("fault-1")

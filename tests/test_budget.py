"""The tests' time budget: scaled to the machine, never below the reference bounds."""

from __future__ import annotations

import os

import pytest

from tests import budget


def test_the_scale_can_be_set_for_a_slow_runner(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TESTS_TIME_SCALE", "4")
    assert budget._scale() == 4.0


def test_a_busy_machine_waits_longer_never_shorter(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TESTS_TIME_SCALE", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 0.0, 0.0))
    busy = budget._scale()
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert (busy, budget._scale()) == (4.0, 1.0)


def test_fewer_cores_than_the_reference_wait_longer(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TESTS_TIME_SCALE", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert budget._scale() == 2.0

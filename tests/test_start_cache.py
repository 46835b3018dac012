"""The start cache: the contract's parsed documents and Connexion's verdict on them, kept by
content hash, give what the work gives, and a cache that is missing, broken, stale or
unwritable only costs the work again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import yaml

from mock_server.contract import documents as contract
from mock_server.core import start_cache
from mock_server.core.resources import package_file
from mock_server.fixtures import loader
from tests.budget import budget

# Each child process reads its own documents and reports them, so no process-wide @cache hides
# a miss.
READ = (
    "from mock_server.contract import documents as contract\n"
    "import orjson, sys\n"
    "sys.stdout.buffer.write(orjson.dumps([contract.spec(n) for n in "
    "(contract.CONTROL_PLANE_SPEC, contract.GATEWAY_SPEC, contract.ADMIN_SPEC)]))\n"
)
NAMES = (contract.CONTROL_PLANE_SPEC, contract.GATEWAY_SPEC, contract.ADMIN_SPEC)


def parsed_afresh() -> list[dict]:
    return [yaml.safe_load((package_file("spec") / name).read_text()) for name in NAMES]


def read_in_child(folder: Path) -> list[dict]:
    import orjson

    env = {**os.environ, start_cache.DIRECTORY_VARIABLE: str(folder)}
    done = subprocess.run(
        [sys.executable, "-c", READ], capture_output=True, env=env, check=True, timeout=budget(300)
    )
    documents: list[dict] = orjson.loads(done.stdout)
    return documents


def test_a_first_start_writes_the_parsed_documents_and_a_second_reads_them_the_same(
    tmp_path: Path,
):
    first = read_in_child(tmp_path)
    kept = sorted(path.name for path in tmp_path.iterdir())
    second = read_in_child(tmp_path)
    assert (len(kept), first, second) == (3, parsed_afresh(), parsed_afresh())


def test_a_broken_cache_file_is_parsed_again_and_rewritten(tmp_path: Path):
    read_in_child(tmp_path)
    for path in tmp_path.iterdir():
        path.write_bytes(b'{"half": ')
    assert read_in_child(tmp_path) == parsed_afresh()
    assert all(path.read_bytes() != b'{"half": ' for path in tmp_path.iterdir())


def test_an_unwritable_cache_costs_only_the_work(tmp_path: Path):
    blocked = tmp_path / "a-file-not-a-folder"
    blocked.write_text("")
    assert read_in_child(blocked / "cache") == parsed_afresh()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(("spec", b"a: 1"), ("spec", b"a: 2"), id="another-text"),
        pytest.param(("spec", b"a: 1", "6.0"), ("spec", b"a: 1", "6.1"), id="another-parser"),
        pytest.param(("spec", b"ab", b"c"), ("spec", b"a", b"bc"), id="parts-not-joined"),
    ],
)
def test_another_input_or_version_of_the_code_is_another_name(first: tuple, second: tuple):
    assert start_cache.key(*first) != start_cache.key(*second)


def test_a_write_leaves_no_part_file_and_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(start_cache.DIRECTORY_VARIABLE, str(tmp_path / "made"))
    start_cache.write("one.json", b"[1]")
    assert (start_cache.read("one.json"), os.listdir(tmp_path / "made")) == (
        b"[1]",
        ["one.json"],
    )


def test_connexion_validates_each_document_once_then_the_mark_of_its_verdict_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from mock_server import PlatformMock
    from mock_server.http import app

    validated: list[str] = []
    validate = app._connexion_validate_spec

    def counted(cls: type, spec: dict) -> None:
        validated.append(spec["info"]["title"])
        validate(cls, spec)

    monkeypatch.setenv(start_cache.DIRECTORY_VARIABLE, str(tmp_path))
    monkeypatch.setattr(app, "_connexion_validate_spec", counted)
    counts = []
    for _ in range(2):  # two starts: nothing validated in this process before either
        monkeypatch.setattr(app, "_VALIDATED", set())
        PlatformMock()
        counts.append(len(validated))
    assert counts == [3, 3]
    assert len(list(tmp_path.glob("valid-openapi-*"))) == 3


# -- fixtures' text, kept once read -------------------------------------------------------------

RUNS_LINE = '      - {status: FAILED, createdAt: "2025-01-01T00:00:00Z", durationSeconds: 5}\n'


def large_fixture(runs: int = 4_000, extra: str = "") -> str:
    """A fixture past `KEEP_OVER`: one job of the default world's workspace with many runs."""
    head = (
        "applications:\n  - name: big-job\n    type: job\n    workspace: ml-team\n"
        "    deployments:\n      - manifest:\n"
        '          image: {type: image, image_uri: "registry.acme.example/big:1"}\n'
        "          trigger: {type: manual}\n"
        "          resources: {cpu_request: 1, cpu_limit: 2, memory_request: 2000,"
        " memory_limit: 4000}\n"
        f"    description: {extra or 'plain'}\n    runs:\n"
    )
    text = head + RUNS_LINE * runs
    assert len(text) > loader.KEEP_OVER
    return text


def test_a_large_fixture_read_again_is_read_from_the_cache_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv(start_cache.DIRECTORY_VARIABLE, str(tmp_path))
    text = large_fixture()
    first = loader.parse(text, "runs.yaml").data
    (kept,) = tmp_path.glob("fixture-*")
    monkeypatch.setattr(loader, "_read", lambda *_: pytest.fail("parsed again"))
    assert loader.parse(text, "runs.yaml").data == first
    assert kept.exists()


@pytest.mark.parametrize(
    "extra",
    ["2025-01-01", ".inf"],
    ids=["timestamp-no-response-carries", "float-json-has-not"],
)
def test_a_large_fixture_json_cannot_give_back_is_not_kept(tmp_path, monkeypatch, extra):
    monkeypatch.setenv(start_cache.DIRECTORY_VARIABLE, str(tmp_path))
    with pytest.raises(loader.FixtureError):  # neither is a text, as a description must be
        loader.parse(large_fixture(extra=extra), "runs.yaml")
    assert list(tmp_path.glob("fixture-*")) == []


def test_a_broken_kept_fixture_is_read_afresh(tmp_path, monkeypatch):
    monkeypatch.setenv(start_cache.DIRECTORY_VARIABLE, str(tmp_path))
    text = large_fixture()
    first = loader.parse(text, "runs.yaml").data
    (kept,) = tmp_path.glob("fixture-*")
    kept.write_bytes(b'{"half": ')
    assert loader.parse(text, "runs.yaml").data == first


def test_only_the_newest_kept_fixtures_stay(tmp_path, monkeypatch):
    monkeypatch.setenv(start_cache.DIRECTORY_VARIABLE, str(tmp_path))
    monkeypatch.setattr(loader, "KEPT_FIXTURES", 2)
    texts = [large_fixture(extra=f"edit-{n}") for n in range(3)]  # a fixture edited twice
    for text in texts:
        loader.parse(text, "runs.yaml")
    kept = {path.read_bytes() for path in tmp_path.glob("fixture-*")}
    newest = {orjson.dumps(loader.parse(text, "runs.yaml").data) for text in texts[1:]}
    assert kept == newest


def test_the_kept_fixtures_are_those_used_last(tmp_path, monkeypatch):
    # Kept by when they were written, nine large fixtures loaded in turn with eight kept
    # never hit: each load wrote its own and pushed out the next one to be loaded.
    monkeypatch.setenv(start_cache.DIRECTORY_VARIABLE, str(tmp_path))
    monkeypatch.setattr(loader, "KEPT_FIXTURES", 2)
    first, second, third = (large_fixture(extra=f"file-{n}") for n in range(3))
    loader.parse(first, "first.yaml")
    time.sleep(0.01)
    loader.parse(second, "second.yaml")
    time.sleep(0.01)
    loader.parse(first, "first.yaml")  # used again: now the newest
    time.sleep(0.01)
    loader.parse(third, "third.yaml")
    monkeypatch.setattr(loader, "_read", lambda *_: pytest.fail("parsed again"))
    loader.parse(first, "first.yaml")

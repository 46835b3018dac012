"""The start cache: the contract's parsed documents and Connexion's verdict on them, kept by
content hash, give what the work gives, and a cache that is missing, broken, stale or
unwritable only costs the work again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mock_server.contract import documents as contract
from mock_server.core import start_cache
from mock_server.core.resources import package_file
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

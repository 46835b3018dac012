"""The curl of every operation (`docs/curl.md`) runs as written: the real `curl`, from a
shell, against the session's server over TCP with the world reset, with only
`$PLATFORM_MOCK_URL` and `$PLATFORM_MOCK_TOKEN` set, as the page tells a reader to set them.
Each answers the status the page writes above it, and reaches the operation it is written
for."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from mock_server.contract import documents as contract
from tools import curls, tables

TEXT = tables.CURL_PAGE.read_text()
WRITTEN = curls.BLOCK.findall(TEXT)
# curl prints this after the body (a config file it reads at start, so that the command
# run is the page's, word for word): the status on a line of its own.
CURLRC = 'write-out = "\\n%{http_code}"\n'


def test_the_page_is_written_from_the_contract():
    assert tables.curl_page(TEXT) == TEXT, "run `python -m tools.tables` to write it"


def test_every_operation_of_the_contract_has_one_curl():
    assert sorted(op for op, *_ in WRITTEN) == sorted(contract.operations())


def test_curl_is_on_this_machine():
    assert shutil.which("curl"), "install curl (.ci/run does where it is missing)"


@pytest.mark.parametrize(
    ("operation_id", "status", "command"), [pytest.param(*w, id=w[0]) for w in WRITTEN]
)
def test_the_curl_answers_its_documented_status(
    operation_id, status, command, server, mock, tmp_path
):
    (tmp_path / ".curlrc").write_text(CURLRC)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "CURL_HOME": str(tmp_path),
        "PLATFORM_MOCK_URL": server.url,
        "PLATFORM_MOCK_TOKEN": mock.auth.dev_token(),
    }
    done = subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60
    )
    body, _, answered = done.stdout.rpartition("\n")
    assert done.returncode == 0, done.stderr
    assert answered == status, body[-2000:]
    assert mock.journal.last is not None and mock.journal.last.operation_id == operation_id

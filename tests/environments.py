"""Environments the tests build (a virtual environment a reader or a user would make), built
once and kept in pytest's cache directory by a hash of their inputs, for later sessions.

Building one costs tens of seconds of pip; its inputs (the requirements, the project's files
it installs, the Python) change far less often than the suite runs. A kept environment is
used while the hash of its inputs is the same; a change of any input is another name, built
afresh, and the older ones are removed. A file lock makes the build one at a time: a second
pytest-xdist worker, or a second session, waits for the first and then uses what it built. A
build that did not finish leaves no `complete` mark and is built again. `--cache-clear`, a
fresh clone or `-p no:cacheprovider` (this session's temporary folder then) build anew.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from uv import find_uv_bin

from tests.budget import budget

ROOT = Path(__file__).resolve().parent.parent
COMPLETE = "complete"  # written last: the environment in its folder is whole


def install(python: Path, *requirements: str) -> None:
    """Install `requirements` into the environment of `python` with uv's pip, for an
    environment that is a client's or a wheel's, not a test of pip itself (the README's
    lines run pip as they say): seconds where pip takes most of a minute."""
    done = subprocess.run(
        [find_uv_bin(), "pip", "install", "--quiet", "--python", str(python), *requirements],
        capture_output=True,
        text=True,
        timeout=budget(900),
    )
    assert done.returncode == 0, done.stderr[-3000:]


def files_digest(paths: Iterable[Path]) -> str:
    """The SHA-256 of the files (names relative to the checkout, and contents)."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def project_files() -> list[Path]:
    """The files of the checkout that an install of the project reads: those git tracks, and
    those not yet added (every file in the checkout when git cannot tell)."""
    done = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        timeout=budget(60),
    )
    if done.returncode != 0:
        return [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]
    names = [name for name in done.stdout.decode().split("\0") if name]
    return [ROOT / name for name in names if (ROOT / name).is_file()]


def kept(
    config: pytest.Config,
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    inputs: object,
    build: Callable[[Path], None],
) -> Path:
    """The folder of environment `name` built by `build(folder)` from `inputs` (anything
    JSON holds: what it installs and from where); the Python running the tests is an input
    of every one."""
    key = hashlib.sha256(json.dumps([inputs, sys.version], sort_keys=True).encode()).hexdigest()
    cache = getattr(config, "cache", None)
    root = cache.mkdir(name) if cache is not None else tmp_path_factory.mktemp(name)
    folder = root / key[:16]
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker or session may be building it
        if not (folder / COMPLETE).exists():
            for stale in root.iterdir():  # an older build, or a part of one
                if stale.is_dir():
                    shutil.rmtree(stale, ignore_errors=True)
            build(folder)
            (folder / COMPLETE).write_text(json.dumps(inputs, indent=1, sort_keys=True))
    return folder

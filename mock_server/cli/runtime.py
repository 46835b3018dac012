"""The runtime files: each running `serve` records where it is and its tokens in a file of
its own, which `platform-mock token` reads to ask it for a token, with no key shared.

Jupyter's runtime files are the model (`jupyter server list`): one JSON file per server,
named by its process id, in a per-user directory: `$PLATFORM_MOCK_RUNTIME_DIR` if set, else
`$XDG_RUNTIME_DIR/platform-mock` (the per-user directory the login session provides, on
Linux), else `$XDG_DATA_HOME/platform-mock/runtime` (`~/.local/share/...`, where Jupyter
falls back to as well). A file holds the admin token: the directory is the user's own and
no one else's (0700, refused if another user owns it), each file is written whole and
read-write for the user alone (0600) before it gets its name, and the server removes it as
it stops. A file left by a server that ended without stopping (SIGKILL, a crash) is removed
by the first reader that finds its process gone or its port answered by another.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

VARIABLE = "PLATFORM_MOCK_RUNTIME_DIR"
PREFIX, SUFFIX = "server-", ".json"


def directory() -> Path:
    """Where this user's servers record themselves."""
    given = os.environ.get(VARIABLE)
    if given:
        return Path(given)
    session = os.environ.get("XDG_RUNTIME_DIR")
    if session and os.path.isabs(session):
        return Path(session) / "platform-mock"
    data = os.environ.get("XDG_DATA_HOME")
    base = Path(data) if data and os.path.isabs(data) else Path.home() / ".local" / "share"
    return base / "platform-mock" / "runtime"


@dataclass(frozen=True)
class ServerFile:
    """A running server: its process, base URL (as a client on this machine reaches it),
    the default user's token as it started (None in a world without users), its admin
    token, its world's seed, the mock's version and when it started (seconds since the
    epoch)."""

    pid: int
    url: str
    token: str | None
    admin_token: str
    seed: int
    version: str
    started: float

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def started_at(self) -> str:
        return time.strftime("%H:%M:%S", time.localtime(self.started))


class UnsafeDirectory(OSError):
    """The runtime directory cannot hold tokens: another user owns it, or it is no directory."""


def _own_directory(create: bool) -> Path | None:
    """The runtime directory, made if `create` and missing, and closed to others; None when
    it does not exist. Raises UnsafeDirectory when another user owns it."""
    found = directory()
    if create:
        found.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        status = found.stat()
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(status.st_mode):
        raise UnsafeDirectory(f"{found} is not a directory")
    if status.st_uid != os.getuid():
        raise UnsafeDirectory(f"{found} belongs to another user")
    if stat.S_IMODE(status.st_mode) & 0o077:
        found.chmod(0o700)  # made by an older umask, or by hand: the tokens are the user's
    return found


def write(record: ServerFile) -> Path:
    """Record a server: its file, written whole, readable by the user alone. Raises OSError
    when the directory cannot be made or written."""
    found = _own_directory(create=True)
    assert found is not None
    path = found / f"{PREFIX}{record.pid}{SUFFIX}"
    descriptor, temporary = tempfile.mkstemp(dir=found, prefix=".server-", suffix=".tmp")
    try:
        os.fchmod(descriptor, 0o600)  # mkstemp's already; said again, as the tokens are in it
        with os.fdopen(descriptor, "w") as out:
            json.dump(asdict(record), out, indent=1)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


def remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def recorded() -> Iterator[tuple[Path, ServerFile]]:
    """Each server recorded, with its file, whether it still runs or not. Files that are not
    a record (unreadable, not one's JSON) are passed over. Raises UnsafeDirectory when the
    directory is another user's."""
    found = _own_directory(create=False)
    if found is None:
        return
    for path in sorted(found.glob(f"{PREFIX}*{SUFFIX}")):
        try:
            with path.open() as file:
                record = ServerFile(**json.load(file))
        except (OSError, ValueError, TypeError):
            continue
        yield path, record


def process_runs(pid: int) -> bool:
    """Whether a process of this user has this id (a server that ended leaves none)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has the id now: ours has ended
        return False
    return True

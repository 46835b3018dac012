"""The start's work kept on disk by the content hash of what it was done on.

Parsing the contract's YAML and checking it against the OpenAPI schema cost most of a start,
and the documents only change with a release (or an edit of a checkout). What that work
produced is written once, under `$XDG_CACHE_HOME/platform-mock` (or `~/.cache/platform-mock`),
in a file named by the SHA-256 of the input and of the code that did the work: a changed
document, or another version of PyYAML or Connexion, is a name not yet written, and is done
afresh. A file is written aside and renamed into place, so that two processes starting at once
never read half of one. A cache that cannot be read or written (a read-only home, a full disk)
only costs the work again: nothing here fails a start.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
import yaml

# Set to a folder to keep the cache there (tests give each session its own).
DIRECTORY_VARIABLE = "PLATFORM_MOCK_CACHE_DIR"


def directory() -> Path:
    """The folder of the cache (not made until something is written)."""
    chosen = os.environ.get(DIRECTORY_VARIABLE)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "platform-mock"


def key(kind: str, *parts: bytes | str) -> str:
    """The name of what `kind` of work made of `parts` (its inputs and the versions of the
    code that does it)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little") + data)
    return f"{kind}-{digest.hexdigest()}"


def read(name: str, *, used: bool = False) -> bytes | None:
    """What was kept under `name`, or None when nothing (readable) was. `used` marks it as
    just used, so that what `write(..., keep=)` keeps is what was used last, not what was
    written last (nine large fixtures loaded in turn, with eight kept, would never hit)."""
    path = directory() / name
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if used:
        with contextlib.suppress(OSError):
            os.utime(path)
    return data


def write(name: str, data: bytes, *, keep: int | None = None) -> None:
    """Keep `data` under `name`, written whole or not at all; with `keep`, only the `keep`
    newest of its kind are kept (what a user's edits of a large fixture would otherwise pile
    up, a file per edit)."""
    folder = directory()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, aside = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
        try:
            with os.fdopen(handle, "wb") as written:
                written.write(data)
            os.replace(aside, folder / name)
        except BaseException:
            Path(aside).unlink(missing_ok=True)
            raise
        if keep is not None:
            kind = name.split("-", 1)[0] + "-"
            kept = sorted(folder.glob(kind + "*"), key=_age)
            for older in kept[:-keep]:
                older.unlink(missing_ok=True)
    except OSError:
        return


def _age(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile (by another process)
        return 0.0


# PyYAML's C parser where it was built with libyaml (about six times faster), else its own.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_document(path: Path) -> tuple[Any, bytes | None]:
    """A YAML file as parsed, and as JSON when JSON gives back the same (a fresh copy is then
    a JSON parse, ten times a deep copy's speed). The JSON is kept by the text's hash: a file
    parsed before is read back as JSON, not parsed again."""
    text = path.read_bytes()
    kept = key("yaml", text, yaml.__version__, _LOADER.__name__) + ".json"
    data = read(kept)
    if data is not None:
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(data), data
    parsed = yaml.load(text, Loader=_LOADER)  # a safe loader, C or not
    try:
        data = orjson.dumps(parsed)
    except TypeError:  # a key JSON cannot hold
        return parsed, None
    if orjson.loads(data) != parsed:  # a value JSON gives back otherwise (a YAML date)
        return parsed, None
    write(kept, data)
    return parsed, data

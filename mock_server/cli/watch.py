"""`serve --watch`: the fixture files given with `--fixtures`, reloaded as they are edited.

A thread follows the files' folders with watchfiles (the operating system's file events, so an
editor that saves by writing a new file and renaming it is seen too). After an edit, every
fixture file is read again, and if each loads and the world they make can be built, that
world replaces the running one (`Store.replace`): the journal, the fault rules and the
contract report are kept, the log says so in a line, and the live view hears a `reload`
event. An edit that cannot load changes nothing: every problem of every file, each with its
file, line and field, goes to the terminal and to the live view. The bundled defaults are
package data, never watched.

What goes wrong with the paths themselves is said the same way, and the watcher goes on: a
fixture file that cannot be read (a symlink loop, a directory, no permission), a folder
that is gone (watched again, and the files read again, once it is back), or the file events
failing (watched again after `RETRY_SECONDS`). A name beside the files that no path
resolves (`ln -s loop.yaml loop.yaml`) is none of the files: it changes nothing. If the
watcher ever stops before the server does, it says so on the terminal and in the live view
(a `reload` event with `watching` false): edits are no longer loaded.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from watchfiles import watch

from mock_server.core import escape, masking
from mock_server.fixtures import loader as fixtures
from mock_server.view import browse

if TYPE_CHECKING:
    from mock_server.http.mock import PlatformMock

DEBOUNCE_MS = 200  # an editor's save is several file events: one reload for all of them
RETRY_SECONDS = 1.0  # between two looks for a folder that is gone, or two tries to watch
# A fixture error's line: `file:line: field: message`, the line and the field when known.
# A file's name may hold `: ` itself: a line number, where there is one, ends it.
_PROBLEM = re.compile(
    r"^(?P<file>.+?):(?P<line>[0-9]+): (?P<rest>.*)$|^(?P<unnumbered>.+?): (?P<said>.*)$"
)
_FIELD = re.compile(r"^(?P<field>[A-Za-z0-9_$.\[\]-]+|\(document\)): (?P<message>.*)$")


class FixtureProblem(TypedDict):
    """One problem of a fixture edit refused, as the terminal and the live view show it."""

    file: str  # "" if not known
    line: int | None
    field: str  # "" if none
    message: str


class Reload(TypedDict):
    """What a reload of the fixture files did: the live view's `reload` event, less its type."""

    time: str
    files: list[str]  # the paths whose change set it off
    reloaded: bool
    watching: NotRequired[bool]  # False: the watcher stopped
    errors: list[FixtureProblem]  # of an edit refused
    counts: NotRequired[dict[str, int]]  # the world reloaded: its records of each kind


def said(error: fixtures.FixtureError) -> list[str]:
    """A fixture error's lines as a terminal is shown them: each problem's credentials hidden
    (`masking.masked`: a credential's field quoted in a message too), then escaped."""
    return [escape.text(_line(masking.masked(problem))) for problem in problems(error)]


def problems(error: fixtures.FixtureError) -> list[FixtureProblem]:
    """A fixture error as one record per problem: its file, line (None if not known), field
    ("" if none) and message."""
    found: list[FixtureProblem] = []
    for line in str(error).split("\n"):  # its own lines: a name or a value holds no other
        match = _PROBLEM.match(line)
        if match is None:  # "... and N more problem(s)"
            found.append({"file": "", "line": None, "field": "", "message": line})
            continue
        numbered = match["line"] is not None
        text = match["rest"] if numbered else match["said"]
        rest = _FIELD.match(text)
        found.append(
            {
                "file": match["file"] if numbered else match["unnumbered"],
                "line": int(match["line"]) if match["line"] else None,
                "field": rest["field"] if rest else "",
                "message": rest["message"] if rest else text,
            }
        )
    return found


class FixtureWatcher:
    """Reloads a mock's world when its fixture files change."""

    def __init__(
        self,
        mock: PlatformMock,
        say: Callable[[str], None],
        complain: Callable[[str], None],
    ):
        self.mock = mock
        self.files = [Path(path) for path in mock.config.fixtures]
        # Each file by its name as given and as it resolved: an event names either.
        self._watched = {_absolute(path) for path in self.files} | {
            _resolved(path) for path in self.files
        }
        self._say = say  # a line for the log
        self._complain = complain  # the lines of an edit refused, for the terminal
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fixture-watcher", daemon=True)
        self.ready = threading.Event()  # set once the files are followed (an edit is seen)

    def start(self) -> FixtureWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def __enter__(self) -> FixtureWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            self._follow()
        except BaseException as exc:  # whatever ends the thread early is said, never silently
            self._stopped(f"{type(exc).__name__}: {exc}")

    def _follow(self) -> None:
        """Watch the files' folders until stopped, watching again after any trouble (and
        then reading the files again: they may have changed meanwhile)."""
        said: tuple[str, str] | None = None  # the last trouble said, not said again
        again = False
        while not self._stop.is_set():
            folders = sorted({str(_resolved(path).parent) for path in self.files})
            found = {folder: _identity(folder) for folder in folders}
            gone = [folder for folder, identity in found.items() if identity is None]
            trouble: tuple[str, str] | None = None
            if gone:
                trouble = (gone[0], "the folder is gone; the watcher looks for it again")
            else:
                try:
                    self._watch(folders, found, again)
                except Exception as exc:  # the events failed (a limit of the system, ...)
                    trouble = (folders[0], f"cannot follow the files' events: {exc}")
            again = True
            if trouble is not None:
                if trouble != said:
                    self._trouble([Path(trouble[0]).name], *trouble)
                said = trouble
                self.ready.set()
                self._stop.wait(RETRY_SECONDS)
            else:
                said = None

    def _watch(
        self, folders: list[str], found: dict[str, tuple[int, int] | None], again: bool
    ) -> None:
        """Follow the folders' events, reloading after each edit (and, `again`, once they are
        followed), until stopped or until a folder is gone or replaced (its events end with
        it)."""
        changes = watch(
            *folders,
            watch_filter=lambda _, path: self._ours(path),
            debounce=DEBOUNCE_MS,
            stop_event=self._stop,
            recursive=False,
            raise_interrupt=False,
            yield_on_timeout=True,
            rust_timeout=200,
        )
        for changed in changes:
            self.ready.set()
            names = {Path(path).name for _, path in changed}
            if again:
                names, again = {path.name for path in self.files}, False
            if names:
                self._reload_safely(sorted(names))
            if any(_identity(folder) != identity for folder, identity in found.items()):
                return

    def _ours(self, path: str) -> bool:
        """Whether an event's path is one of the fixture files: never raises (a symlink loop
        beside them resolves to nothing)."""
        return _absolute(Path(path)) in self._watched or _resolved(Path(path)) in self._watched

    def _reload_safely(self, changed: list[str]) -> None:
        try:
            self.reload(changed)
        except Exception as exc:  # a failure of the reload itself: said, and watched on
            self._trouble(changed, "", f"the world could not be reloaded: {exc}")

    def _trouble(self, changed: list[str], file: str, message: str) -> None:
        """A problem of the paths, said as an edit refused is."""
        self.reload(changed, [{"file": file, "line": None, "field": "", "message": message}])

    def _stopped(self, why: str) -> None:
        """Say that edits are no longer loaded: on the terminal and in the live view."""
        names = [escape.text(path.name) for path in self.files]
        message = escape.text(
            f"the fixture watcher stopped ({why}): edits of {', '.join(names)} are no longer "
            "loaded; restart serve to watch them again"
        )
        self._complain(f"platform-mock: {message}")
        outcome: Reload = {
            "time": _now(),
            "files": names,
            "reloaded": False,
            "watching": False,
            "errors": [{"file": "", "line": None, "field": "", "message": message}],
        }
        self.mock.live.reloaded({"type": "reload", **outcome})

    def reload(self, changed: list[str], trouble: list[FixtureProblem] | None = None) -> Reload:
        """Read every fixture file again and, if the world they make can be built, put it in
        place of the running one; what happened, as the live view's `reload` event. A
        `trouble` of the paths, if given, is the first problem of an edit refused."""
        config = self.mock.config
        # Names the mock did not choose.
        changed = [escape.text(masking.masked_text(name)) for name in changed]
        time_ = _now()
        found: list[FixtureProblem] = list(trouble or [])
        documents = fixtures.default_fixtures() if config.default_fixtures else []
        for path in self.files:
            try:
                documents.append(fixtures.load(path))
            except fixtures.FixtureError as exc:
                found += problems(exc)
        started = time.perf_counter()
        if not found:
            try:
                self.mock.store.replace(documents)
            except fixtures.FixtureError as exc:
                found += problems(exc)
        if found:
            # Shown as the view shows any text it did not write.
            shown = [_escaped(problem) for problem in masking.masked(found)]
            outcome: Reload = {
                "time": time_,
                "files": changed,
                "reloaded": False,
                "errors": shown,
            }
            self._complain(
                "\n".join(
                    [
                        f"platform-mock: the edit of {', '.join(changed)} was not loaded; "
                        "the world is as it was:",
                        *(escape.text(_line(p)) for p in masking.masked(found)),
                    ]
                )
            )
        else:
            counts = browse.counts(self.mock.store)
            outcome = {
                "time": time_,
                "files": changed,
                "reloaded": True,
                "errors": [],
                "counts": counts,
            }
            seconds = time.perf_counter() - started
            self._say(
                f"platform-mock: {', '.join(changed)} changed: the world is reloaded "
                f"({counts['users']} users, {counts['applications']} applications, "
                f"{counts['runs']} runs) in {seconds:.2f} s; the journal is kept"
            )
        self.mock.live.reloaded({"type": "reload", **outcome})
        return outcome


def _now() -> str:
    """The time of a reload, as the live view shows it (UTC, to the millisecond)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _escaped(problem: FixtureProblem) -> FixtureProblem:
    """A problem as the view shows any text it did not write."""
    return {
        "file": escape.text(problem["file"]),
        "line": problem["line"],
        "field": escape.text(problem["field"]),
        "message": escape.text(problem["message"]),
    }


def _line(problem: FixtureProblem) -> str:
    where = problem["file"] + (f":{problem['line']}" if problem["line"] else "")
    field = f"{problem['field']}: " if problem["field"] else ""
    return f"{where}: {field}{problem['message']}" if where else problem["message"]


def _absolute(path: Path) -> Path:
    """A path made absolute by its name alone (no link followed)."""
    return Path(os.path.abspath(path))


def _resolved(path: Path) -> Path:
    """A path with its links followed, or by its name alone where they cannot be (a loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: Python 3.11's symlink loop
        return _absolute(path)


def _identity(folder: str) -> tuple[int, int] | None:
    """Which folder a path names now (device and inode), or None if it names none."""
    try:
        found = os.stat(folder)
    except OSError:
        return None
    return (found.st_dev, found.st_ino) if stat.S_ISDIR(found.st_mode) else None

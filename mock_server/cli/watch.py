"""`serve --watch`: the fixture files given with `--fixtures`, reloaded as they are edited.

A thread follows the files' folders with watchfiles (the operating system's file events, so an
editor that saves by writing a new file and renaming it is seen too). After an edit, every
fixture file is read again, and if each loads and the world they make can be built, that
world replaces the running one (`Store.replace`): the journal, the fault rules and the
contract report are kept, the log says so in a line, and the live view hears a `reload`
event. An edit that cannot load changes nothing: every problem of every file, each with its
file, line and field, goes to the terminal and to the live view. The bundled defaults are
package data, never watched.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from watchfiles import watch

from mock_server.core import escape, masking
from mock_server.fixtures import loader as fixtures
from mock_server.view import browse

if TYPE_CHECKING:
    from mock_server.http.mock import PlatformMock

DEBOUNCE_MS = 200  # an editor's save is several file events: one reload for all of them
# A fixture error's line: `file:line: field: message`, the line and the field when known.
# A file's name may hold `: ` itself: a line number, where there is one, ends it.
_PROBLEM = re.compile(
    r"^(?P<file>.+?):(?P<line>[0-9]+): (?P<rest>.*)$|^(?P<unnumbered>.+?): (?P<said>.*)$"
)
_FIELD = re.compile(r"^(?P<field>[A-Za-z0-9_$.\[\]-]+|\(document\)): (?P<message>.*)$")


def said(error: fixtures.FixtureError) -> list[str]:
    """A fixture error's lines as a terminal is shown them: each problem's credentials hidden
    (`masking.masked`: a credential's field quoted in a message too), then escaped."""
    return [escape.text(_line(masking.masked(problem))) for problem in problems(error)]


def problems(error: fixtures.FixtureError) -> list[dict[str, Any]]:
    """A fixture error as one record per problem: its file, line (None if not known), field
    ("" if none) and message."""
    found: list[dict[str, Any]] = []
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
        self._watched = {path.resolve() for path in self.files}
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
        folders = sorted({str(path.resolve().parent) for path in self.files})
        changes = watch(
            *folders,
            watch_filter=lambda _, path: Path(path).resolve() in self._watched,
            debounce=DEBOUNCE_MS,
            stop_event=self._stop,
            recursive=False,
            raise_interrupt=False,
            yield_on_timeout=True,
            rust_timeout=200,
        )
        for changed in changes:
            self.ready.set()
            if changed:
                self.reload(sorted({Path(path).name for _, path in changed}))

    def reload(self, changed: list[str]) -> dict[str, Any]:
        """Read every fixture file again and, if the world they make can be built, put it in
        place of the running one; what happened, as the live view's `reload` event."""
        config = self.mock.config
        # Names the mock did not choose.
        changed = [escape.text(masking.masked_text(name)) for name in changed]
        outcome: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "files": changed,
        }
        found: list[dict[str, Any]] = []
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
            shown = [
                {k: escape.text(v) if isinstance(v, str) else v for k, v in problem.items()}
                for problem in masking.masked(found)
            ]
            outcome.update(reloaded=False, errors=shown)
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
            outcome.update(reloaded=True, errors=[], counts=counts)
            seconds = time.perf_counter() - started
            self._say(
                f"platform-mock: {', '.join(changed)} changed: the world is reloaded "
                f"({counts['users']} users, {counts['applications']} applications, "
                f"{counts['runs']} runs) in {seconds:.2f} s; the journal is kept"
            )
        self.mock.live.reloaded({"type": "reload", **outcome})
        return outcome


def _line(problem: dict[str, Any]) -> str:
    where = problem["file"] + (f":{problem['line']}" if problem["line"] else "")
    field = f"{problem['field']}: " if problem["field"] else ""
    return f"{where}: {field}{problem['message']}" if where else problem["message"]

"""The live view's events: what happens in a mock, pushed to every page that watches it.

`Hub.publish` is called wherever something happens (a request journaled, the world reset or
reloaded, a fault rule added, the journal cleared), from the event loop or from any other
thread (a test's, the fixture watcher's). It never waits: each subscriber has a queue of at
most `QUEUE_BYTES` bytes of events (a budget in bytes, not in events: a thousand requests
of 20 kB each are 20 MB), and an event that finds no room is dropped and counted; the
subscriber's next event is then a `gap` saying how many it missed, and the page reads the
journal again. An event is published once, and its bytes shared by every queue it enters.
With no subscriber, publishing costs a length check.

`mock_server.http.events` serves the stream of a subscriber (`GET /__admin/events`), taking
at most `WRITE_BYTES` of its queue for each write (`take`): a reader that resumes after a
stall is sent its backlog a part at a time, each part waiting on the reader, never copied
whole into one write. `close` ends every stream when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import TypeAlias, TypedDict

from mock_server.core import escape, masking
from mock_server.core.jsonvalue import JsonObject
from mock_server.services.journal import Entry
from mock_server.view.shown import JournalRow

QUEUE_BYTES = 1024 * 1024  # of events kept for a subscriber that does not read; past it, dropped
WRITE_BYTES = 64 * 1024  # of events a stream writes at once (or one event, if larger)
MAX_SUBSCRIBERS = 32  # streams at once; another is refused (503) rather than slowing all


class RequestShown(TypedDict):
    """A `request` event: a request journaled, as the journal's table shows it."""

    request: JournalRow


# What an event says: a request shown, or JSON the hub carries unread (what changed, the
# fixture watcher's word).
Said: TypeAlias = "RequestShown | JsonObject"


def encoded(kind: str, data: Said) -> bytes:
    """One server-sent event: its `event` line and its data as one line of JSON, inert as
    text (`escape.json_bytes`)."""
    line = escape.json_bytes({"type": kind, **data})
    return b"event: " + kind.encode() + b"\ndata: " + line + b"\n\n"


class Subscriber:
    """One stream's queue, filled from any thread and read on its event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.thread = threading.get_ident()
        self.queue: deque[bytes] = deque()
        self.queued = 0  # bytes in the queue
        self.missed = 0  # events dropped since the stream last wrote
        self.ready = asyncio.Event()
        self.closed = False

    def put(self, event: bytes) -> None:
        """Called with the hub's lock held."""
        if self.queued + len(event) > QUEUE_BYTES:
            self.missed += 1
            return
        self.queue.append(event)
        self.queued += len(event)
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if threading.get_ident() == self.thread:
            self.ready.set()
        else:
            with contextlib.suppress(RuntimeError):  # its loop has stopped
                self.loop.call_soon_threadsafe(self.ready.set)


class Hub:
    """The events of one mock, and the streams that watch them."""

    def __init__(self, shown: Callable[[Entry], JournalRow] | None = None):
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self._shown = shown  # a journal entry as an event shows it
        self.last_reload: JsonObject | None = None  # the watcher's last word, for new pages

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def publish(self, kind: str, data: Said) -> None:
        """Send an event to every stream; never waits."""
        if not self._subscribers:
            return
        event = encoded(kind, data)
        with self._lock:
            for subscriber in self._subscribers:
                subscriber.put(event)

    def entry(self, entry: Entry) -> None:
        """A request was journaled."""
        if self._subscribers and self._shown is not None:
            self.publish("request", {"request": self._shown(entry)})

    def reloaded(self, outcome: Mapping[str, object]) -> None:
        """The fixture watcher reloaded the world, or refused an edit (`outcome` says, as
        JSON: what it quotes of the files, credentials hidden)."""
        said: JsonObject = masking.masked(outcome)
        self.last_reload = said
        self.publish("reload", said)

    def subscribe(self) -> Subscriber | None:
        """A new stream's queue; None when MAX_SUBSCRIBERS streams are open."""
        subscriber = Subscriber(asyncio.get_running_loop())
        with self._lock:
            if len(self._subscribers) >= MAX_SUBSCRIBERS:
                return None
            self._subscribers.append(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

    def take(self, subscriber: Subscriber) -> bytes:
        """What a stream writes next (called on its loop): a `gap` saying how many events it
        missed, if it missed any, then the events queued for it, up to WRITE_BYTES (at least
        one). If more are queued, the subscriber stays ready."""
        events: list[bytes] = []
        size = 0
        with self._lock:
            missed, subscriber.missed = subscriber.missed, 0
            if missed:
                events.append(encoded("gap", {"missed": missed}))
                size = len(events[0])
            queue = subscriber.queue
            while queue and (not events or size + len(queue[0]) <= WRITE_BYTES):
                event = queue.popleft()
                subscriber.queued -= len(event)
                events.append(event)
                size += len(event)
            if queue:
                subscriber.ready.set()
        return b"".join(events)

    def close(self) -> None:
        """End every stream: the server is stopping."""
        with self._lock:
            subscribers, self._subscribers = self._subscribers, []
        for subscriber in subscribers:
            subscriber.close()

"""A mock that lives in another process, driven through its admin API as if it were at hand.

`platform-mock run` serves one mock for a whole CI job and hands its coordinates to the
command (`mock_server.core.coordinates`). A pytest session under it uses that mock: `RemoteMock`
gives the pytest plugin what the in-process mock gives it (reset, the test running, faults,
the journal, tokens, the world, the report), each through one admin request. What it returns
is a copy taken then: the journal and the world as they were when asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import orjson

from mock_server.contract import documents as contract
from mock_server.core.coordinates import Coordinates
from mock_server.core.jsonvalue import JsonObject
from mock_server.fixtures import loader as fixtures
from mock_server.services.auth import Signer, new_key
from mock_server.services.faults import Fault, FaultRefused
from mock_server.services.journal import Entry, Journal
from mock_server.state import Store

if TYPE_CHECKING:
    from mock_server.handlers.admin import Minted, ResetBody
    from mock_server.handlers.context import ServedWorld
    from mock_server.reports.report import Report

TIMEOUT_SECONDS = 60.0  # a reset that rebuilds a big world, or a new world, takes seconds


class RemoteError(RuntimeError):
    """The mock of the other process refused a request of its admin API, or is gone."""


class RemoteMock:
    """The admin API of a mock served by another process."""

    def __init__(self, where: Coordinates, *, verify: Any = True):
        self.coordinates = where
        self.seed = where.seed  # of the world as the last reset left it
        self._token = where.token  # the default user's, minted again after a reset
        self._admin = httpx.Client(
            base_url=where.admin_url,
            headers={"Authorization": f"Bearer {where.admin_token}"},
            timeout=TIMEOUT_SECONDS,
            verify=verify,
        )

    def close(self) -> None:
        self._admin.close()

    def _call(self, method: str, path: str, **options: Any) -> Any:
        try:
            response = self._admin.request(method, path, **options)
        except httpx.HTTPError as exc:
            raise RemoteError(
                f"the mock at {self.coordinates.url} did not answer {method} "
                f"{self.coordinates.admin_url}{path}: {exc}"
            ) from None
        if response.status_code >= 400:
            try:
                message = response.json()["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:500]
            raise RemoteError(f"{method} {path}: {response.status_code} {message}")
        return response.json()

    def reset(self, seed: int | None = None, extra: list[fixtures.Fixture] | None = None) -> None:
        """The world back to its initial one (of `seed`, with the `extra` documents), an empty
        journal and no faults."""
        body: ResetBody = {}
        if seed is not None:
            body["seed"] = seed
        if extra:
            body["fixtures"] = [document.data for document in extra]
        # orjson: a fixture read from YAML may hold dates, which JSON writes as text.
        self._call(
            "POST",
            "/reset",
            content=orjson.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        if seed is not None:
            self.seed = seed
        self._token = None

    @property
    def token(self) -> str:
        """The default user's token in the world as it is."""
        if self._token is None:
            self._token = self.token_for(None)
        return self._token

    def begin_test(self, name: str, *, expecting: bool = False) -> None:
        self._call("PUT", "/test", json={"test": name, "expectViolations": expecting})

    def violations(self, test: str) -> list[Entry]:
        """The requests of `test` that broke the contract (not on purpose)."""
        found = self._call("GET", "/journal", params={"test": test, "violation": "true"})
        return [Entry.from_dict(entry) for entry in found["data"]]

    def end_test(self) -> list[Entry]:
        """The test running has ended: its faults are removed. Its requests that broke the
        contract (not on purpose)."""
        return [Entry.from_dict(entry) for entry in self._call("DELETE", "/test")["data"]]

    @property
    def journal(self) -> Journal:
        """The journal as it is now."""
        copy = Journal(operations=contract.operations())
        for entry in self._call("GET", "/journal")["data"]:
            copy.record(Entry.from_dict(entry))
        return copy

    def store(self) -> Store:
        """The world as it is now, rebuilt from its dump: ids, names and records as served.
        Changing it changes nothing in the served world (`load` does)."""
        dump = fixtures.check(self._call("GET", "/state"), "the served world")
        return Store(self.seed, [dump], Signer(new_key()))  # a copy signs nothing served

    def load(self, document: JsonObject) -> None:
        """Add a fixture document's records to the served world."""
        self._call(
            "POST",
            "/fixtures",
            content=orjson.dumps(document),
            headers={"Content-Type": "application/json"},
        )

    def fault(self, operation_id: str, **effect: Any) -> Fault:
        """Add a fault rule (the arguments of `mock_server.services.faults.Faults.add`); the rule as
        added. FaultRefused for one the contract does not allow."""
        names = {"delay_ms": "delayMs"}
        body = {"operationId": operation_id, **{names.get(k, k): v for k, v in effect.items()}}
        try:
            added = self._call("POST", "/faults", json=body)
        except RemoteError as exc:
            raise FaultRefused(str(exc)) from None
        return Fault.from_dict(added)

    def token_for(self, subject: str | None) -> str:
        """A token for a subject of the world (None: the default user)."""
        body = {} if subject is None else {"subject": subject}
        minted: Minted = self._call("POST", "/tokens", json=body)
        return minted["token"]

    def report(self) -> Report:
        found: Report = self._call("GET", "/report")
        return found

    def create_world(self, seed: int | None = None) -> tuple[str, Coordinates]:
        """A world of its own served beside this mock: its id and where it is."""
        body = {} if seed is None else {"seed": seed}
        world: ServedWorld = self._call("POST", "/worlds", json=body)
        return world["id"], Coordinates.from_dict(world)

    def delete_world(self, world_id: str) -> None:
        self._call("DELETE", f"/worlds/{world_id}")

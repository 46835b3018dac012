"""The mock: one app instance with its state, tokens, journal, faults and contract report.

Its HTTP side, the three OpenAPI documents on one Connexion FlaskApp, is built in
`mock_server.http`; the layers around it are `mock_server.http.stack`'s one ordered list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.types import Receive, Scope, Send

from mock_server.contract import documents as contract
from mock_server.core.addresses import ADMIN_PREFIX, API_ROOT, gateway_prefix_problem
from mock_server.core.choices import HOST_CHECKS
from mock_server.core.coordinates import CONTROL_PLANE_PREFIX
from mock_server.fixtures import loader as fixtures
from mock_server.handlers import catalog
from mock_server.handlers.context import WorldHost
from mock_server.http import build_connexion_app, request_log, stack
from mock_server.http.storage import ObjectStore
from mock_server.reports.report import ContractReport
from mock_server.services.auth import Authenticator, Signer, new_key
from mock_server.services.faults import Faults
from mock_server.services.journal import DEFAULT_BUDGET, Entry, Journal
from mock_server.state import Store
from mock_server.view import shown
from mock_server.view.live import Hub

__all__ = ["CONTROL_PLANE_PREFIX", "MockConfig", "PlatformMock"]


@dataclass
class MockConfig:
    """How to build a mock: its world (fixtures and seed) and where the gateway lives."""

    seed: int = 0
    fixtures: list[str | Path] = field(default_factory=list)
    default_fixtures: bool = True
    gateway_prefix: str = "/gateway"
    signing_key: str | None = None
    journal_budget: int = DEFAULT_BUDGET  # bytes the request journal may hold
    cors: list[str] = field(default_factory=list)  # origins browsers may call from; "*": any
    # Host names the server answers as its own besides its address (`name` or `name:port`;
    # "*": any), and whether every path checks them ("all") or only the admin API ("admin").
    allowed_hosts: list[str] = field(default_factory=list)
    host_check: str = "admin"

    def world(self) -> Store:
        """The world this configuration describes: its fixtures loaded with its seed."""
        documents = fixtures.default_fixtures() if self.default_fixtures else []
        documents += [fixtures.load(path) for path in self.fixtures]
        # The server's key for its whole life, re-seeds included: given, or drawn now.
        return Store(self.seed, documents, Signer(self.signing_key or new_key()))


class PlatformMock:
    """One mock server: an ASGI app with its own store, token authority, request journal,
    fault rules and contract report. Two instances in one process share nothing."""

    def __init__(self, config: MockConfig | None = None):
        self.config = config or MockConfig()
        # The command line's rule for the prefix, for a mock configured in code as well.
        problem = gateway_prefix_problem(self.config.gateway_prefix)
        if problem is not None:
            raise ValueError(f"gateway_prefix {self.config.gateway_prefix!r}: {problem}")
        self.store = self.config.world()
        self.auth = Authenticator(self.store)
        self.journal = Journal(self.config.journal_budget, operations=contract.operations())
        self.faults = Faults(contract.operations(), catalog.conditions())
        self.gateway_prefix = "/" + self.config.gateway_prefix.strip("/")
        self.report = ContractReport(contract.operations(), self.gateway_prefix)
        self.report.journal_stats = self.journal.stats
        self.live = Hub(shown.row)  # what the live view (`/__admin/ui`) is told, as it happens
        # The same report of the requests since the journal was last cleared: what the live
        # view's coverage shows beside the journal (`GET /__admin/journal/report`).
        self._new_journal_report()
        self.journal.cleared.append(self._new_journal_report)
        # The response's way out, one pass: the journal records each entry once, and its
        # readers read it in this order; none writes back.
        self.journal.observers += [
            self.report.add,
            self._journal_report_add,
            self.live.entry,
            request_log.log_entry,
        ]
        self.faults.observers.append(lambda: self.live.publish("faults", {}))
        self._gateway_docs = f"{self.gateway_prefix}/docs"
        self.admin_prefix = ADMIN_PREFIX
        self.worlds: WorldHost | None = None  # set by the server that serves this mock
        self.app = build_connexion_app(self)
        # The signed URLs of artifact versions' files, outside the contract (an object
        # store's, which the mock serves itself).
        self.storage = ObjectStore(lambda: self.store)
        if self.config.host_check not in HOST_CHECKS:
            raise ValueError(f"host_check {self.config.host_check!r}: one of {HOST_CHECKS}")
        # The request's way in, one ordered list (`stack.outer_layers`), outermost first.
        self._outer = stack.compose(stack.outer_layers(self), self.app)

    def _journal_report_add(self, entry: Entry) -> None:
        self.journal_report.add(entry)  # the report of the day: replaced when cleared

    def _new_journal_report(self) -> None:
        self.journal_report: ContractReport
        report = ContractReport(contract.operations(), self.gateway_prefix)
        report.journal_stats = self.journal.stats
        self.journal_report = report

    def reset(self, seed: int | None = None, extra: Iterable[fixtures.Fixture] = ()) -> None:
        """Back to the initial world (with another seed, or extra fixture documents, if
        given), with an empty journal and no faults. The report keeps accumulating."""
        self.store.reset(seed, extra)
        self.journal.clear()
        self.faults.clear()
        self.live.publish("reset", {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        return await self._outer(scope, receive, send)

    @staticmethod
    def log_dropped() -> int:
        """Lines the request log (of the process: `platform-mock serve` or `run`) dropped
        because its reader did not keep up."""
        return request_log.dropped()

    def is_platform_path(self, path: str) -> bool:
        """Whether a request is one for the platform's API, to journal and report: under
        `/api/` or the gateway's prefix. The API docs, the admin API, a browser's favicon or
        a readiness probe are answered but are not a client's use of the contract."""
        if path.startswith(API_ROOT):
            return True
        return _under(path, self.gateway_prefix) and not _under(path, self._gateway_docs)


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")

"""The platform's state: entities, the rules that govern them, and the store that holds them."""

from mock_server.state.entities import Caller
from mock_server.state.store import Store

__all__ = ["Caller", "Store"]

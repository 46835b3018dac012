"""Thin request handlers, one per operationId: each unpacks what validation parsed and calls
the state layer (or, for the admin API, the mock's journal, faults and report).

Which handler serves which operation is the catalog's (`catalog.py`); the HTTP side
(`mock_server.http.app.PlannedView`) calls each with the request's parameters under the
handler's own argument names (`sortBy` as `sort_by`, `id` as `id_`), and sets the request's
`Call` (`handlers.context`), where a handler finds the mock, its store and the caller.
"""

"""The HTTP side of the mock, and the one fence around its libraries' internals: Connexion's,
Flask's, a2wsgi's and uvicorn's.

No module outside this package imports a private name of Connexion, Flask, a2wsgi,
Starlette or uvicorn (`tests/test_layers.py` checks it), and each library whose private parts
are used here is pinned below its next release that may move them. uvicorn's are in
`protocol.py`, whose docstring lists them. Every hook is listed here,
with why it is needed; `tests/test_connexion_hooks.py` checks that each still exists and
still bites, so an upgrade fails in CI rather than quietly in users' hands.

The stack is one ordered list (`stack.pipeline()`, `RequestLimits` outermost): the mock's own
layers around the Connexion app (`stack.outer_layers()`), then Connexion's part
(`app.middlewares()`): its defaults less its ContextMiddleware (whose context only Connexion's
own views read), with the mock's own layers (`middleware.py`) at their places, built before the
first request
(`ConnexionMiddleware._build_middleware_stack`), so that the Flask views exist to be planned.

Middlewares replaced in Connexion's stack (`app.REPLACED`, each by a subclass but routing):
- `SwaggerUIMiddleware`: its router runs only for paths under the docs' prefixes, not on
  every API request; its `add_api` is Connexion's with `SwaggerUIAPI` subclassed, whose
  `_spec_for_prefix` (after `_base_path_for_prefix`) names the mock's own URL in the
  `servers` of each document served, where Connexion names the base path alone.
- `RoutingMiddleware`: the contract's router (`mock_server.contract.routing`, the drift
  proxy's too) in place of Connexion's Starlette router; it fills Connexion's routing
  context (`ROUTING_CONTEXT`: `api_base_path`, `operation_id`), which security and both
  validations read to find the operation (the path's parameters go to the request's
  `Exchange`, which the parameter check reads); as a `SpecMiddleware`, it
  refuses a document Connexion adds at a base path the router does not serve.
- `RequestValidationMiddleware`: `api_cls` makes `_PlannedRequestValidation`, which reads
  the operation (`_operation`, `_validator_map`) once at start-up,
  reports every violation, and leaves the parsed parameters and body in the request's
  notes for the handler.
- `ResponseValidationMiddleware`: `api_cls` makes `_PlannedResponseValidation`, which looks
  each documented response's definition up once (`_operation`, `_validator_map`).

Validators (`validators.py`), subclasses of Connexion's:
- `ParameterValidator` checks by the contract's parameter check
  (`mock_server.contract.parameters`, the drift proxy's too), which reads the query itself:
  Connexion's URI parser is not used.
- `JSONBodyValidator` (its `_schema`, `_required`, `_encoding`) and `JSONResponseValidator`
  (its `_scope`, `_schema`, `_parse`, `_validate`) report each violation in the platform's
  error body.

The Flask side (`app.py`, `wsgi.py`):
- Each operation's `FlaskOperation` view (which rebuilds Connexion's decorators and parses
  the request again on every call) is replaced in `flask_app.view_functions` by a
  `PlannedView` that calls the handler with what validation parsed.
- `Flask.request_context` makes a `RequestContext` that takes the rule routing
  chose, and `Flask.create_url_adapter` gives a routed request no URL adapter, so Flask
  neither binds its URL map nor matches the URL again.
- `FlaskApp._middleware_app.asgi_app` is replaced by `InlineWSGI`: Flask is called on the
  event loop's thread, not through a2wsgi's thread pool.

Connexion's `OpenAPISpecification._validate_spec` is wrapped (`app.py`): the mock's own
documents, which never change in a process, are validated against the OpenAPI schema the
first time a mock is built only (each later build costs 0.03 s, not 0.4 s); any other
document is validated every time, as Connexion does.

Elsewhere in this package: `security.py` subclasses `BearerSecurityHandler.get_fn`
(Connexion's documented way to plug in token checks); `faulting.py` is the fault layer,
between request and response validation; `middleware.py` holds the mock's own
ASGI layers and `request_log.py` the request log, which read Connexion's routing context
(`ROUTING_CONTEXT`) and the request's `Exchange` (`mock_server.services.exchange`); `cors.py` puts
Starlette's CORS middleware around everything but the admin API; `hosts.py` guards the
admin API's host and origin, inside `RequestLimits`; `events.py` streams the live view's
events, placed before response validation (which would hold a stream until its end).
"""

from mock_server.http.app import build_connexion_app
from mock_server.http.middleware import DROP, journaled

__all__ = ["DROP", "build_connexion_app", "journaled"]

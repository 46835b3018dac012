"""Request and response validation plugged into Connexion, planned once per operation.

Connexion's own validators stop at the first error, and its middlewares rebuild a URI parser,
a parameter validator and a body validator (and look up every response definition) on every
request. These report one `details` entry per violation (with its location and field), are
built once per operation (and media type, and documented status), raise the platform's error
classes instead of `application/problem+json` problems, and hand what they parsed on to the
handler (`Exchange.arguments`), so nothing is parsed twice.
"""

from __future__ import annotations

import asyncio
import copy
import typing as t

import orjson
from connexion.datastructures import MediaTypeDict
from connexion.middleware.request_validation import (
    RequestValidationAPI,
    RequestValidationOperation,
)
from connexion.middleware.request_validation import (
    RequestValidationMiddleware as ConnexionRequestValidationMiddleware,
)
from connexion.middleware.response_validation import (
    ResponseValidationAPI,
    ResponseValidationOperation,
)
from connexion.middleware.response_validation import (
    ResponseValidationMiddleware as ConnexionResponseValidationMiddleware,
)
from connexion.utils import is_nullable
from connexion.validators import JSONRequestBodyValidator, JSONResponseBodyValidator
from connexion.validators import ParameterValidator as ConnexionParameterValidator
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from mock_server.contract.parameters import ParameterCheck
from mock_server.contract.validation import (
    MAX_BODY_BYTES,
    NO_BODY,
    ONE_BIG_BODY,
    UTF8_CHARSETS,
    Detail,
    ResponseValidator,
    body_limit,
    body_problem,
    compiled,
    invalid_request,
    read_request_body,
    stream_events,
    stream_violations,
    summary,
    violations,
    with_defaults,
)
from mock_server.core import errors, media
from mock_server.http.middleware import query_by_key, query_pairs
from mock_server.http.scope import operation_id
from mock_server.services.exchange import exchange


class ParameterValidator(ConnexionParameterValidator):
    """Connexion's parameter validator, checking by the contract's one parameter check
    (`contract.parameters.ParameterCheck`, the drift proxy's too): unknown or repeated query
    keys are errors, and so is a number not written as the contract writes numbers. Built
    once per operation; `parse` returns the path and query values as the handler takes them."""

    def __init__(self, *args: t.Any, **kwargs: t.Any):
        super().__init__(*args, **kwargs)
        every = [p for location in self.parameters.values() for p in location]
        self.check = ParameterCheck(every, strict=self.strict_validation)

    def validate(self, scope: Scope) -> None:
        self.parse(scope)

    def parse(self, scope: Scope) -> dict[str, t.Any]:
        """The request's path and query parameters, converted to the contract's types, with
        the spec's defaults for the query parameters it leaves out; raises InvalidRequest
        listing every violation."""
        headers: t.Mapping[str, str] = (
            Headers(scope=scope) if self.check.parameters.get("header") else {}
        )
        pairs, grouped = query_pairs(scope), query_by_key(scope)
        return self.check.parse(pairs, exchange(scope).path_params, headers, grouped)


class JSONBodyValidator(JSONRequestBodyValidator):
    """Checks a JSON request body: size, media type, encoding, syntax, then the schema.

    It reads the body itself, with or without Content-Length (chunked), stopping at the
    size limit, and hands the body it read on to the handler (`body`), nulls of optional
    fields read as absent; the WSGI side downstream is given no body to read again.
    """

    async def read(self, receive: Receive, scope: Scope) -> t.Any:
        """The body as the handler takes it, or `NO_BODY`; raises the error of the first
        problem found."""
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        if length is not None and not length.isdigit():
            raise invalid_request(
                [{"location": "header", "field": "content-length", "message": "is not a number"}]
            )
        limit = body_limit(operation_id(scope))
        if length is not None and int(length) > limit:
            raise errors.PayloadTooLarge(
                f"Request body is {int(length)} bytes; the limit is {limit} bytes "
                f"({limit >> 20} MiB)"
            )
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if (chunked or int(length or 0)) and "content-type" not in headers:
            raise errors.UnsupportedMediaType(
                "Request has a body but no Content-Type; send application/json"
            )
        coding = headers.get("content-encoding", "identity").strip().lower()
        if (chunked or int(length or 0)) and coding not in ("", "identity"):
            # The platform takes request bodies as sent; read as they came, a compressed body
            # would be refused as malformed JSON, and a mislabelled one accepted.
            raise errors.UnsupportedMediaType(
                f"Request bodies are not decoded: Content-Encoding: {coding} is not supported; "
                "send the JSON as it is"
            )
        chunks: list[bytes] = []
        size = 0
        more_body = True
        while more_body:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise errors.ClientLeft
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise errors.PayloadTooLarge(
                    f"Request body is over the limit of {limit} bytes ({limit >> 20} MiB)"
                )
            more_body = message.get("more_body", False)
        raw = b"".join(chunks)
        if len(raw) > MAX_BODY_BYTES:
            # Only the admin API's fixture uploads are this big (up to 64 MiB): reading
            # them takes seconds, which the event loop's other requests do not wait for.
            return await asyncio.to_thread(self._parsed_alone, raw)
        return self._parsed(raw)

    def _parsed_alone(self, raw: bytes) -> t.Any:
        with ONE_BIG_BODY:
            return self._parsed(raw)

    def _parsed(self, raw: bytes) -> t.Any:
        """The body as the handler takes it, from the bytes sent, or `NO_BODY`: read by the
        contract's one reader of request bodies, which the proxy uses too."""
        body = read_request_body(
            raw, self._schema, required=self._required, encoding=self._encoding
        )
        return body if body is NO_BODY else with_defaults(body, self._schema)


class YAMLTextValidator(JSONBodyValidator):
    """A YAML request body gets the size, media type and encoding checks of a JSON one, and
    reaches its handler as the bytes sent: the handler reads it with the fixture reader,
    whose errors give the line of each problem, which the data parsed here would no longer
    know."""

    def _parsed(self, raw: bytes) -> t.Any:
        if not raw and self._required:
            raise body_problem("a YAML request body is required")
        if not raw:
            return NO_BODY
        try:
            raw.decode(self._encoding)
        except (UnicodeDecodeError, LookupError):
            raise body_problem(f"is not valid {self._encoding} text") from None
        return raw  # the handler checks the document against the fixture schema


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


def _content_type(value: bytes) -> tuple[str, str]:
    """A Content-Type header's media type, lower-cased, and charset (UTF-8 if it names none)."""
    mime_type, charset = media.content_type(value)
    return mime_type, charset or "utf-8"


def _no_more_body(receive: Receive) -> Receive:
    """A receive whose request has an empty body (validation has read it), then the real
    receive: a client leaving is still seen downstream."""
    sent = False

    async def receive_() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return await receive()

    return receive_


class _PlannedRequestValidation(RequestValidationOperation):
    """Connexion's request validation of one operation, reporting parameter and body
    violations together, with its validators built once."""

    def __init__(self, *args: t.Any, **kwargs: t.Any):
        super().__init__(*args, **kwargs)
        operation = self._operation
        self._parameters = self._validator_map["parameter"](
            operation.parameters,
            uri_parser=None,  # the contract's check reads the query itself
            strict_validation=self.strict_validation,
            security_query_params=self.security_query_params,
        )
        self._consumes = MediaTypeDict([(c.lower(), None) for c in operation.consumes])
        self._body_name = operation.body_name("application/json")
        self._bodies: dict[tuple[str, str], t.Any] = {}
        self._default_type: tuple[str, str] | None = None  # of a request without Content-Type

    def extract_content_type(self, headers: list[tuple[bytes, bytes]]) -> tuple[str, str]:
        """The media type, lower-cased (`APPLICATION/JSON` is `application/json`), and the
        charset, wherever the header's parameters put it (Connexion's parser misses
        `; charset=...` with a space)."""
        value = _header(headers, b"content-type")
        if value is None:
            if self._default_type is None:
                self._default_type = super().extract_content_type(headers)
            return self._default_type
        return _content_type(value)

    def validate_mime_type(self, mime_type: str) -> None:
        if self._operation.consumes and mime_type not in self._consumes:
            super().validate_mime_type(mime_type)  # raises, in Connexion's words

    def _body_validator(self, mime_type: str, encoding: str) -> t.Any:
        """The body validator for a media type and charset (None: the body is not read),
        built on first use."""
        key = (mime_type, encoding)
        if key not in self._bodies:
            operation = self._operation
            schema = operation.body_schema(mime_type)
            cls = self._validator_map["body"].get(mime_type) if schema else None
            self._bodies[key] = cls and cls(
                schema=schema,
                required=operation.request_body.get("required", False),
                nullable=is_nullable(operation.body_definition(mime_type)),
                encoding=encoding,
                strict_validation=self.strict_validation,
            )
        return self._bodies[key]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        details: list[Detail] = []
        arguments: dict[str, t.Any] = {}
        try:
            arguments = self._parameters.parse(scope)
        except errors.InvalidRequest as exc:
            details = exc.details
        mime_type, encoding = self.extract_content_type(scope["headers"])
        self.validate_mime_type(mime_type)
        validator = self._body_validator(mime_type, encoding)
        if validator is not None and encoding not in UTF8_CHARSETS:
            # JSON is UTF-8 (RFC 8259); read any other way, the handler would disagree.
            raise errors.UnsupportedMediaType(
                f"JSON request bodies are UTF-8; charset={encoding} is not supported"
            )
        if validator is not None:
            try:
                body = await validator.read(receive, scope)
            except errors.InvalidRequest as exc:
                details = details + exc.details
            except errors.ClientLeft:
                return  # journaled unanswered
            else:
                if body is NO_BODY:
                    body = copy.deepcopy(validator._schema.get("default", {}))
                arguments[self._body_name] = body
            receive = _no_more_body(receive)
        if details:
            raise invalid_request(details)
        exchange(scope).arguments = arguments
        await self.next_app(scope, receive, send)


class _PlannedRequestValidationAPI(RequestValidationAPI):
    def make_operation(self, operation: t.Any) -> RequestValidationOperation:
        return _PlannedRequestValidation(
            self.next_app,
            operation=operation,
            strict_validation=self.strict_validation,
            validator_map=self.validator_map,
        )


class RequestValidationMiddleware(ConnexionRequestValidationMiddleware):
    """Drop-in for Connexion's request validation middleware (see `_PlannedRequestValidation`)."""

    api_cls = _PlannedRequestValidationAPI


CHECKED_OFF_LOOP = 1 << 20  # bytes of a response body checked on a worker thread


def asks_only_an_object(schema: dict[str, t.Any]) -> bool:
    """Whether a response schema asks nothing of an object's content (its `components`,
    carried for references, aside)."""
    return schema.get("type") == "object" and schema.keys() <= {"type", "components"}


class JSONResponseValidator(JSONResponseBodyValidator):
    """Checks every response body against the contract; a failure is a bug in the mock."""

    def wrap_send(self, send: Send) -> Send:
        """Connexion's: the body is held until it is whole, checked, then sent on. A body
        over `CHECKED_OFF_LOOP` bytes (a batch of embeddings: tens of MB) is read back and
        checked on a worker thread, so that the event loop goes on answering meanwhile."""
        # HEAD is answered as its GET without the body (a 405 lists HEAD beside GET in
        # `Allow`): its status and headers are checked as ever, there is no body to check.
        if self._scope["method"] == "HEAD":
            return send
        messages: list[t.MutableMapping[str, t.Any]] = []

        async def send_(message: t.MutableMapping[str, t.Any]) -> None:
            messages.append(message)
            if message["type"] == "http.response.start" or message.get("more_body", False):
                return
            body = b"".join(m.get("body", b"") for m in messages)
            if len(body) > CHECKED_OFF_LOOP:
                await asyncio.to_thread(self._check, body)
            else:
                self._check(body)
            while messages:
                await send(messages.pop(0))

        return send_

    def _check(self, body: bytes) -> None:
        written = exchange(self._scope).written
        if written is not None and written[0] == body:
            parsed = written[1]  # the value the mock wrote these bytes from: the same JSON
        else:
            parsed = self._parse(part for part in (body,))
        if not (parsed is None and self._nullable):
            self._validate(parsed)

    def _parse(self, stream: t.Generator[bytes, None, None]) -> t.Any:
        body = b"".join(stream)
        if asks_only_an_object(self._schema) and body[:1] == b"{":
            # All the schema asks is an object (the admin API's dump of the world, tens of
            # MiB at 100,000 runs), which the mock's own serializer wrote: read back, it
            # would hold the event loop for as long as the body is big, to learn nothing.
            return {}
        return orjson.loads(body) if body else None

    def _validate(self, body: t.Any) -> None:
        details = violations(compiled(self._schema, ResponseValidator), body, "response")
        if details:
            raise errors.MockFailure(
                "The mock produced a response that breaks its contract: " + summary(details),
                details=details,
            )


class EventStreamResponseValidator(JSONResponseValidator):
    """Checks a server-sent event stream against the contract, whose schema describes one
    event, `{"event", "data"}`, as OpenAPI before 3.2 does (and schemathesis reads it); the
    JSON in `data` is checked against the schema its `x-data-schema` names, and its `type`
    must be the one the `event` line names."""

    def _parse(self, stream: t.Generator[bytes, None, None]) -> t.Any:
        return stream_events(b"".join(stream))

    def _validate(self, body: t.Any) -> None:
        found = stream_violations(self._schema, body, ResponseValidator)
        if found:
            details = [detail for _, detail in found]
            raise errors.MockFailure(
                "The mock produced a response that breaks its contract: " + summary(details),
                details=details,
            )


def _response_type(value: bytes) -> tuple[str, str]:
    mime_type, charset = media.content_type(value)
    return mime_type or "application/octet-stream", charset or "utf-8"


class _ResponsePlan(t.NamedTuple):
    definition: dict[str, t.Any]  # the documented response, for its required headers
    requires_headers: bool
    schema: dict[str, t.Any]
    nullable: bool


MAX_MEDIA_TYPES = 16  # of answers remembered per operation (the mock writes a few)


class _PlannedResponseValidation(ResponseValidationOperation):
    """Connexion's response validation of one operation, with each documented response's
    definition looked up once instead of on every response."""

    def __init__(self, *args: t.Any, **kwargs: t.Any):
        super().__init__(*args, **kwargs)
        self._plans: dict[tuple[str, str], _ResponsePlan] = {}
        self._produces = MediaTypeDict([(p.lower(), None) for p in self._operation.produces])
        # By the media type of an answer (one the mock wrote: a few): whether the operation
        # produces it, and its validator, each a walk of a MediaTypeDict's ranges, sorted.
        self._media: dict[str, tuple[bool, t.Any]] = {}

    def _media_type(self, mime_type: str) -> tuple[bool, t.Any]:
        found = self._media.get(mime_type)
        if found is None:
            validators = self._validator_map["response"]
            found = (mime_type in self._produces, validators.get(mime_type))
            if len(self._media) < MAX_MEDIA_TYPES:
                self._media[mime_type] = found
        return found

    def _plan(self, status: str, mime_type: str) -> _ResponsePlan:
        key = (status, mime_type)
        if key not in self._plans:
            definition = self._operation.response_definition(status, mime_type)
            self._plans[key] = _ResponsePlan(
                definition,
                any(h.get("required", False) for h in definition.get("headers", {}).values()),
                self._operation.response_schema(status, mime_type),
                is_nullable(definition),
            )
        return self._plans[key]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def wrapped_send(message: t.MutableMapping[str, t.Any]) -> None:
            nonlocal send
            if message["type"] == "http.response.start":
                headers = message["headers"]
                # The mock's own responses: their Content-Type is one the mock wrote.
                value = _header(headers, b"content-type")
                if value is None:
                    mime_type, encoding = self.extract_content_type(headers)
                else:
                    mime_type, encoding = _response_type(value)
                produced, validator_cls = self._media_type(mime_type)
                if message["status"] < 400 and not produced:
                    self.validate_mime_type(mime_type)  # raises, in Connexion's words
                plan = self._plan(str(message["status"]), mime_type)
                if plan.requires_headers:
                    self.validate_required_headers(headers, plan.definition)
                if validator_cls is not None:
                    validator = validator_cls(
                        scope, schema=plan.schema, nullable=plan.nullable, encoding=encoding
                    )
                    send = validator.wrap_send(send)
            return await send(message)

        await self.next_app(scope, receive, wrapped_send)


class _PlannedResponseValidationAPI(ResponseValidationAPI):
    def make_operation(self, operation: t.Any) -> t.Any:
        if not self.validate_responses:
            return self.next_app
        return _PlannedResponseValidation(
            self.next_app, operation=operation, validator_map=self.validator_map
        )


class ResponseValidationMiddleware(ConnexionResponseValidationMiddleware):
    """Drop-in for Connexion's response validation middleware (see
    `_PlannedResponseValidation`)."""

    api_cls = _PlannedResponseValidationAPI


VALIDATOR_MAP = {
    "parameter": ParameterValidator,
    "body": MediaTypeDict({"*/*json": JSONBodyValidator}),
    "response": MediaTypeDict(
        {"*/*json": JSONResponseValidator, "text/event-stream": EventStreamResponseValidator}
    ),
}

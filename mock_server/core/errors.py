"""Error conditions of the platform API: one class per condition, each with its status and code.

A condition that only one rule of the state layer meets may be declared beside that rule,
as a subclass of `PlatformError`; every other one is here.

Every error the mock returns, whatever raised it (the state layer, auth, request validation,
routing), is rendered by `error_body` into the platform error body
`{"statusCode", "message", "code", "details"}`; on the gateway, the same body also carries
OpenAI's error object (`gateway_body`), which OpenAI's clients read. `error_answer` is the one
writer of that body on the wire (its bytes and headers), and `send_error` sends it over ASGI:
every door (the app, the TCP protocol, the host and path fences, the view page, the signed
URLs, the proxy) answers through them, and `tests/test_error_bodies.py` fails on a second
writer. The table of conditions in
`spec/control-plane.yaml` (`info.description`) and in `docs/errors.md` is written
from these classes (`python -m tools.tables`), and a test fails while either differs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import ClassVar, NamedTuple, NotRequired, TypedDict

import orjson


class Violation(TypedDict):
    """One way a request (or an answer) broke the contract, as an error body's `details`
    lists it: where (`query`, `path`, `header`, `body`, `response`, `request`), the field
    there (none for the request as a whole) and what is wrong."""

    location: str
    field: NotRequired[str]
    message: str
    tag: NotRequired[str]  # a tag another version holds (`TagInUse`)
    # As the contract report and the live view explain it (`reports.explain`): what the
    # contract has nearest ("" where it has nothing), and the value sent at its place as JSON.
    hint: NotRequired[str]
    sent: NotRequired[str]


class ErrorBody(TypedDict):
    """The platform error body, every error answer's."""

    statusCode: int
    message: str
    code: int
    details: list[Violation]


class OpenAIError(TypedDict):
    """OpenAI's error object, which a gateway error body carries too."""

    message: str
    type: str
    param: str | None
    code: str


class GatewayErrorBody(ErrorBody):
    """The body of a gateway error: the platform's fields and OpenAI's `error`."""

    error: OpenAIError


class PlatformError(Exception):
    """Base of every error condition the mock can answer with."""

    status: ClassVar[int] = 500
    code: ClassVar[int] = 50001
    default_message: ClassVar[str] = "Internal error"
    # The row of the error tables (the spec's and `docs/errors.md`'s, written from these classes by
    # `python -m tools.tables`): when the condition holds.
    condition: ClassVar[str] = ""
    # Whether the condition means the request itself broke the contract (wrong shape, unknown
    # route or method, no usable bearer token, unsupported body), not a rule of the platform:
    # the journal and the contract report count these as violations.
    violation: ClassVar[bool] = False
    # OpenAI's `code` of the condition, where OpenAI names one (`model_not_found`); the
    # gateway's error object otherwise gives the platform's code as a string.
    openai_code: ClassVar[str | None] = None

    def __init__(self, message: str | None = None, details: list[Violation] | None = None):
        self.message = message or self.default_message
        self.details = details or []
        super().__init__(self.message)

    def body(self) -> ErrorBody:
        return error_body(self.status, self.code, self.message, self.details)

    def gateway_body(self) -> GatewayErrorBody:
        """The body of a gateway error, in both dialects at once: the platform's fields, and
        OpenAI's `error` object (`message`, `type`, `param`, `code` as a string), from which
        `openai` and the platform's gateway SDK raise their own exception classes."""
        param = next(
            (d.get("field") or None for d in self.details if d.get("location") in PARAMETERS),
            None,
        )
        error: OpenAIError = {
            "message": self.message,
            "type": openai_type(self.status),
            "param": param,
            "code": self.openai_code or str(self.code),
        }
        return {**self.body(), "error": error}


# Where a violation names a parameter of the request, which OpenAI's `param` names.
PARAMETERS = frozenset({"query", "path", "header", "body"})
# OpenAI's `type` of an error, by its status (a 5xx is a `server_error`).
OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    424: "failed_dependency_error",
    429: "rate_limit_error",
    431: "invalid_request_error",
}


def openai_type(status: int) -> str:
    """OpenAI's `type` of an error of this status."""
    return OPENAI_TYPES.get(status, "server_error")


def error_body(status: int, code: int, message: str, details: list[Violation]) -> ErrorBody:
    return {"statusCode": status, "message": message, "code": code, "details": details}


class ErrorAnswer(NamedTuple):
    """An error answer as it goes on the wire: its status, its headers, its JSON body."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


def error_answer(
    error: PlatformError,
    *,
    gateway: bool = False,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> ErrorAnswer:
    """The one writer of an error answer: the platform error body of `error` (in OpenAI's
    dialect too on the gateway), with its Content-Type and Content-Length, and `headers`."""
    return _written(error.status, error.gateway_body() if gateway else error.body(), headers)


def other_error_answer(status: int, code: int, message: str) -> ErrorAnswer:
    """An error answer in the platform error body for a condition outside the table of the
    platform's (the proxy's own: its target failed, or the request cannot be forwarded)."""
    return _written(status, error_body(status, code, message, []), ())


def _written(status: int, body: ErrorBody, headers: Iterable[tuple[bytes, bytes]]) -> ErrorAnswer:
    raw = orjson.dumps(body)
    head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
    return ErrorAnswer(status, [*head, *headers], raw)


async def send_error(
    send: Callable[[MutableMapping[str, object]], Awaitable[None]],
    answer: PlatformError | ErrorAnswer,
    *,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    """Sends an error answer over ASGI, whole, with `headers` besides its own."""
    if isinstance(answer, PlatformError):
        answer = error_answer(answer, headers=headers)
    elif headers:
        answer = answer._replace(headers=[*answer.headers, *headers])
    await send({"type": "http.response.start", "status": answer.status, "headers": answer.headers})
    await send({"type": "http.response.body", "body": answer.body})


# 400
class InvalidRequest(PlatformError):
    status, code = 400, 40001
    condition = (
        "request breaks the contract (type, range, pattern, enum, unknown query parameter, "
        "malformed JSON, missing required field)"
    )
    violation = True
    default_message = "Request does not conform to the API contract"


class InvalidRoleBindingQuery(PlatformError):
    status, code = 400, 40002
    condition = "role-binding query gives both modes, neither, or half of one"
    default_message = (
        "Give exactly one mode: resourceType with resourceId, or subjectType with subjectId"
    )


class InvalidTeam(PlatformError):
    status, code = 400, 40003
    condition = "teamName names no team the caller belongs to"
    default_message = "teamName does not name a team the caller belongs to"


class InvalidMetadataHeader(PlatformError):
    status, code = 400, 40004
    condition = "x-platform-metadata header is not a JSON object"
    default_message = "x-platform-metadata must be a JSON object encoded as a string"


class InvalidFaultRequest(PlatformError):
    status, code = 400, 40005
    condition = "Prefer header asks for a fault the operation does not document"
    default_message = "Prefer header asks for a fault the contract does not allow"


class UnparsableRequest(PlatformError):
    status, code = 400, 40006
    condition = (
        "request is not valid HTTP (its framing, a header's name or value, Transfer-Encoding "
        "or Content-Length)"
    )
    default_message = "Request is not valid HTTP"


# 401
class MissingToken(PlatformError):
    status, code = 401, 40101
    condition = "missing bearer token"
    violation = True
    openai_code = "invalid_api_key"
    default_message = "No bearer token: send 'Authorization: Bearer <token>'"


class MalformedToken(PlatformError):
    status, code = 401, 40102
    condition = "malformed bearer token"
    violation = True
    openai_code = "invalid_api_key"
    default_message = "Bearer token is not a well-formed JWT"


class ExpiredToken(PlatformError):
    status, code = 401, 40103
    condition = "expired or not-yet-valid token"
    openai_code = "invalid_api_key"
    default_message = "Bearer token is expired or not yet valid"


class BadTokenSignature(PlatformError):
    status, code = 401, 40104
    condition = "bad signature or disallowed algorithm"
    openai_code = "invalid_api_key"
    default_message = "Bearer token signature or algorithm is not accepted"


class UnknownTokenSubject(PlatformError):
    status, code = 401, 40105
    condition = "token subject unknown, or token revoked"
    openai_code = "invalid_api_key"
    default_message = "Bearer token names no known subject, or has been revoked"


# 403
class PermissionDenied(PlatformError):
    status, code = 403, 40301
    condition = "caller lacks the grant for the operation"
    default_message = "Caller lacks the grant for this operation"


class ForeignHost(PlatformError):
    status, code = 403, 40302
    condition = (
        "the Host is not a name of this server (admin API; every path with `--host-check all`)"
    )
    default_message = "The request's Host is not a name of this server"


class CrossOrigin(PlatformError):
    status, code = 403, 40303
    condition = "a web page of another origin sent the request (admin API)"
    default_message = "The admin API does not answer a web page of another origin"


# 404
class RouteNotFound(PlatformError):
    status, code = 404, 40401
    condition = "no route for the path"
    violation = True
    default_message = "No route for this path"


class RoleBindingTargetNotFound(PlatformError):
    status, code = 404, 40402
    condition = "resource or subject not found (role bindings)"
    default_message = "Resource or subject not found"


class MlRepoNotFound(PlatformError):
    status, code = 404, 40403
    condition = "ML repo not found"
    default_message = "ML repo not found"


class ArtifactVersionNotFound(PlatformError):
    status, code = 404, 40404
    condition = "artifact version not found"
    default_message = "Artifact version not found"


class SecretGroupNotFound(PlatformError):
    status, code = 404, 40405
    condition = "secret group not found"
    default_message = "Secret group not found"


class JobNotFound(PlatformError):
    status, code = 404, 40406
    condition = "job not found"
    default_message = "Job not found"


class ModelResponseNotFound(PlatformError):
    status, code = 404, 40407
    condition = "model response not found"
    default_message = "Model response not found"


class FaultNotFound(PlatformError):
    status, code = 404, 40408
    condition = "fault rule not found (admin API)"
    default_message = "No fault rule with this id"


class SubjectNotFound(PlatformError):
    status, code = 404, 40409
    condition = "subject to mint a token for not found (admin API)"
    default_message = "No subject by this name in the world"


class WorldNotFound(PlatformError):
    status, code = 404, 40410
    condition = "world not found, or none served beside this mock (admin API)"
    default_message = "No world with this id is served beside this mock"


class JournalEntryNotFound(PlatformError):
    status, code = 404, 40412
    condition = "no request with this number in the journal (admin API)"
    default_message = "The journal holds no request with this number"


# 405
class MethodNotAllowed(PlatformError):
    status, code = 405, 40501
    condition = "method not allowed on the path"
    violation = True
    default_message = "Method not allowed on this path"


# 408
class RequestTimeout(PlatformError):
    status, code = 408, 40801
    condition = "the request did not arrive in full within 30 seconds of its first byte"
    default_message = "The request did not arrive in full in time"


# 409
class TagInUse(PlatformError):
    status, code = 409, 40901
    condition = "tag already on another version of the artifact (no force)"
    default_message = "Tag is already on another version of this artifact; use force to move it"


class ArtifactVersionExists(PlatformError):
    status, code = 409, 40902
    condition = "artifact version number already exists"
    default_message = "This version of the artifact already exists"


# 413, 414, 415
class PayloadTooLarge(PlatformError):
    status, code = 413, 41301
    condition = "request body larger than 1 MiB"
    violation = True
    default_message = "Request body is larger than 1 MiB"


class RequestTargetTooLong(PlatformError):
    status, code = 414, 41401
    condition = "request target (path and query) longer than 16 KiB"
    default_message = "The request's path and query are longer than 16 KiB"


class UnsupportedMediaType(PlatformError):
    status, code = 415, 41501
    condition = "request body not application/json in UTF-8"
    violation = True
    default_message = "Request body must be sent as Content-Type: application/json"


class HeadersTooLarge(PlatformError):
    status, code = 431, 43101
    condition = "request headers larger than 64 KiB, or more than 100 of them"
    default_message = "Request headers are larger than 64 KiB, or more than 100"


# 422, 424
class NotAJob(PlatformError):
    status, code = 422, 42201
    condition = "jobId names an application that is not a job"
    default_message = "This application is not a job"


class SecretIntegrationUnavailable(PlatformError):
    status, code = 424, 42401
    condition = (
        "secret integration of the group is faulty or unavailable and forceDelete is not true"
    )
    default_message = (
        "The secret integration of this group is faulty or unavailable; "
        "retry with forceDelete=true to delete anyway"
    )


# 500, 503
class MockFailure(PlatformError):
    status, code = 500, 50001
    condition = (
        "the mock itself failed or produced a response that breaks this contract "
        "(a bug in the mock)"
    )
    default_message = "The mock failed; this is a bug in the mock"


class PlatformInternalError(PlatformError):
    status, code = 500, 50002
    condition = "the platform failed (only as an injected fault)"
    default_message = "The platform failed to process the request"


class ServiceUnavailable(PlatformError):
    status, code = 503, 50301
    condition = "the platform is temporarily unavailable (only as an injected fault)"
    default_message = "The platform is temporarily unavailable; retry later"


def error_classes() -> list[type[PlatformError]]:
    """Every condition, in the order of the table in the spec: the classes of this module,
    and any a state rule declares beside it (a condition only that rule meets)."""
    return sorted(PlatformError.__subclasses__(), key=lambda cls: cls.code)


def condition(code: int | None) -> str:
    """What the condition of a code means, in its default message; the code, if none has it."""
    for cls in error_classes():
        if cls.code == code:
            return cls.default_message
    return f"code {code}"


def violation_codes() -> frozenset[int]:
    """The codes of the conditions that mean the request broke the contract."""
    return frozenset(cls.code for cls in error_classes() if cls.violation)


class ClientLeft(Exception):
    """The client closed its connection before its request's body had arrived: there is no
    one to answer, and nothing the request broke (it never arrived). Not a PlatformError:
    the layer reading the body ends the request unanswered, and the journal records it with
    no status and no code."""

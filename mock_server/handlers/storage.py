"""Handlers of the files of artifact versions: signed URLs for one file or for an upload in
parts, and the listing of a version's files; and the signed URLs themselves, which point at
the mock (`mock_server.http.storage` serves them).

A signed URL reads `{mock}/__storage/{version id}/{path}?op=WRITE&signature=...`, with
`uploadId` (and `partNumber`, from 1) for an upload in parts.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict
from urllib.parse import quote, urlencode

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation
from mock_server.handlers.session import own_url
from mock_server.state.artifacts import ArtifactVersionNotStaged
from mock_server.state.storage import FileEntry, InvalidFilePath, Signed


class SignedUrlsRequest(TypedDict):
    """The contract's `SignedUrlsRequest`."""

    id: str
    paths: list[str]
    operation: str


class MultipartUploadRequest(TypedDict):
    """The contract's `MultipartUploadRequest`."""

    id: str
    path: str
    num_parts: int


class ListFilesRequest(TypedDict):
    """The contract's `ListFilesRequest`, `limit` filled by validation."""

    id: str
    path: NotRequired[str]
    limit: int
    pageToken: NotRequired[str]


class SignedUrlRecord(TypedDict):
    """The contract's `SignedUrl`."""

    path: str
    signed_url: str


class MultipartUploadRecord(TypedDict):
    """The contract's `MultipartUpload`."""

    storage_provider: str
    part_signed_urls: list[SignedUrlRecord]
    finalize_signed_url: SignedUrlRecord
    s3_compatible_upload_id: str


class FileInfoRecord(TypedDict):
    """The contract's `FileInfo`: a file with its size, or a folder."""

    path: str
    is_dir: bool
    file_size: NotRequired[int]


class TokenPaginationRecord(TypedDict):
    """The contract's `TokenPagination`: the next page's token while there is one."""

    limit: int
    nextPageToken: NotRequired[str]


class FileListRecord(TypedDict):
    """The contract's `FileList`."""

    data: list[FileInfoRecord]
    pagination: TokenPaginationRecord


STORAGE_PREFIX = "/__storage"
MAX_QUERY = 512  # characters of a signed URL's query: its parameters are short


def signed_url(signed: Signed) -> str:
    """The URL of a signature, on the mock as this request reached it."""
    query = {"op": signed.operation}
    if signed.upload_id:
        query["uploadId"] = signed.upload_id
        if signed.part:
            query["partNumber"] = str(signed.part)
    query["signature"] = signed.signature
    path = f"{STORAGE_PREFIX}/{quote(signed.version_id, safe='')}/{quote(signed.path)}"
    return f"{own_url()}{path}?{urlencode(query)}"


def parse_signed(path: str, query: dict[str, str]) -> Signed | None:
    """What a request to a signed URL asks, or None when it is no signed URL's shape. The
    path is the request's as the server decoded it (ASGI's `path`): decoded again, a file
    named `a%20b` would be asked as `a b`."""
    rest = path.removeprefix(STORAGE_PREFIX + "/")
    version_id, slash, file_path = rest.partition("/")
    if not slash or not version_id or not file_path or rest == path:
        return None
    operation_, signature = query.get("op"), query.get("signature")
    if operation_ not in ("READ", "WRITE") or not signature:
        return None
    part = query.get("partNumber", "0")
    if not part.isascii() or not part.isdigit() or len(part) > 5:
        return None
    return Signed(
        version_id,
        file_path,
        operation_,
        signature,
        query.get("uploadId", ""),
        int(part),
    )


def _url(signed: Signed) -> SignedUrlRecord:
    return {"path": signed.path, "signed_url": signed_url(signed)}


@operation(
    "getArtifactVersionSignedUrls",
    Example(
        "POST",
        "/api/svc/v1/artifact-versions/signed-urls",
        body={
            "id": "<artifact-version:embeddings/3>",
            "paths": ["embeddings.npy", "config/settings.json"],
            "operation": "WRITE",
        },
    ),
    {
        400: InvalidFilePath,
        403: errors.PermissionDenied,
        404: errors.ArtifactVersionNotFound,
        409: ArtifactVersionNotStaged,
    },
    client_model="truefoundry_sdk.types:GetSignedUrLsResponse",
    recorded=False,  # URLs of this server's: nothing of the world a recording keeps
)
def signed_urls(body: SignedUrlsRequest) -> render.DataRecord[list[SignedUrlRecord]]:
    signed = store().storage.sign(caller(), body["id"], body["paths"], body["operation"])
    return {"data": [_url(s) for s in signed]}


@operation(
    "createArtifactVersionMultipartUpload",
    Example(
        "POST",
        "/api/svc/v1/artifact-versions/signed-urls/multipart",
        body={"id": "<artifact-version:embeddings/3>", "path": "embeddings.npy", "num_parts": 2},
    ),
    {
        400: InvalidFilePath,
        403: errors.PermissionDenied,
        404: errors.ArtifactVersionNotFound,
        409: ArtifactVersionNotStaged,
    },
    client_model="truefoundry_sdk.types:MultiPartUploadResponse",
    recorded=False,  # an upload of this server's: nothing of the world a recording keeps
)
def multipart_upload(body: MultipartUploadRequest) -> render.DataRecord[MultipartUploadRecord]:
    upload, parts, finish = store().storage.start_multipart(
        caller(), body["id"], body["path"], body["num_parts"]
    )
    return {
        "data": {
            "storage_provider": "S3_COMPATIBLE",
            "part_signed_urls": [_url(part) for part in parts],
            "finalize_signed_url": _url(finish),
            "s3_compatible_upload_id": upload.id,
        }
    }


@operation(
    "listArtifactVersionFiles",
    Example(
        "POST",
        "/api/svc/v1/artifact-versions/files",
        body={"id": "<artifact-version:sentiment/1>"},
    ),
    {400: InvalidFilePath, 403: errors.PermissionDenied, 404: errors.ArtifactVersionNotFound},
    client_model="truefoundry_sdk.types:ListFilesResponse",
    read_only=True,  # a POST only for its body
    recorded=False,  # names and sizes without contents: a recorded world cannot hold them
)
def list_files(body: ListFilesRequest) -> FileListRecord:
    limit = body["limit"]  # the spec's default, filled by validation
    offset = int(body.get("pageToken") or 0)
    entries, more = store().storage.list_files(
        caller(), body["id"], body.get("path"), limit, offset
    )
    pagination: TokenPaginationRecord = {"limit": limit}
    if more:
        pagination["nextPageToken"] = str(offset + limit)
    return {"data": [file_info(entry) for entry in entries], "pagination": pagination}


def file_info(entry: FileEntry) -> FileInfoRecord:
    """A file or a folder of a version, as the SDK's `FileInfo` reads it."""
    if entry.size is None:
        return {"path": entry.path, "is_dir": True}
    return {"path": entry.path, "is_dir": False, "file_size": entry.size}

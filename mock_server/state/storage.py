"""The files of artifact versions: URLs signed for writing or reading them, the bytes stored
within a byte budget, uploads in parts, and the listing of a version's files.

The platform hands clients pre-signed URLs of its object store; the mock serves the same
flow itself (LocalStack's way): a signed URL names the version, the file's path and what
it allows (WRITE while the version is staged, READ once it is finalised), signed with the
server's key and the world's generation, so that no URL can be made from public facts and
none outlives its world. Its HTTP side is `mock_server.http.storage`.

Budget: a file holds at most `FILE_BYTES`, and a world at most `WORLD_BYTES` of file contents,
counting the parts of unfinished uploads and the uploads under way (`reserve`); a version
holds at most `MAX_FILES` files, and a world `MAX_UPLOADS` uploads in parts under way: an
upload past any is refused whole (413, code 41302) and nothing of it is stored. Contents are kept
by their SHA-256 in the world's blobs, shared by the copies of a world, and a content no file
or part refers to any longer is dropped.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mock_server.core import errors
from mock_server.state import fixture_format as written
from mock_server.state.area import Area, Ground, locked
from mock_server.state.artifacts import Artifacts, ArtifactVersionNotStaged
from mock_server.state.entities import ArtifactVersion, Caller, MultipartUpload, StoredFile
from mock_server.state.identity import Identity

FILE_BYTES = 16 * 1024 * 1024  # the largest file an artifact version holds
WORLD_BYTES = 32 * 1024 * 1024  # file contents a world holds, uploads under way included
MAX_PATH = 1024  # characters of a file's path under its version's root
MAX_PARTS = 1000  # parts of one multipart upload (the platform library uses at most 1000)
# Files a version holds, and uploads in parts a world has under way: each costs memory
# however few its bytes (a path of up to 1 KiB), and a listing sorts a version's files.
MAX_FILES = 10_000
MAX_UPLOADS = 1_000
WRITE, READ = "WRITE", "READ"


class InvalidFilePath(errors.PlatformError):
    status, code = 400, 40011
    condition = "a file path is not a relative path inside the artifact version"
    default_message = "A file path must be relative, without empty, `.` or `..` segments"


class InvalidMultipartCompletion(errors.PlatformError):
    status, code = 400, 40012
    condition = "a multipart completion names parts not uploaded, out of order, or none"
    default_message = "The completion must list every uploaded part, in order, with its ETag"


class SignedUrlRefused(errors.PlatformError):
    status, code = 403, 40304
    condition = "a signed URL's signature does not match, or is of an earlier world"
    default_message = "The signature of this URL does not match what it asks"


class ArtifactVersionNotReady(errors.PlatformError):
    status, code = 409, 40905
    condition = "artifact version is not finalised: its files cannot be read"
    default_message = "This artifact version is not finalised; its files cannot be read"


class StoredFileNotFound(errors.PlatformError):
    status, code = 404, 40421
    condition = "no file at this path in the artifact version, or no such multipart upload"
    default_message = "No file at this path in the artifact version"


class UploadTooLarge(errors.PlatformError):
    status, code = 413, 41302
    condition = (
        f"an upload past the budget: {FILE_BYTES >> 20} MiB a file, "
        f"{WORLD_BYTES >> 20} MiB a world, {MAX_FILES:,} files a version, "
        f"{MAX_UPLOADS:,} uploads in parts under way a world"
    )
    default_message = "The upload is over the mock's byte budget; nothing of it was stored"


@dataclass(frozen=True)
class Signed:
    """What a signed URL names: the version, the file, what it allows, and its signature
    (a part of a multipart upload names the upload and the part's number, from 1)."""

    version_id: str
    path: str
    operation: str
    signature: str
    upload_id: str = ""
    part: int = 0


@dataclass(eq=False)
class Reservation:
    """Bytes set aside for one upload under way, by the signed URL it arrives at: counted
    against the file's and the world's budget until the upload is stored or given up
    (`Storage.release`)."""

    asked: Signed
    size: int = 0
    received: int = 0  # of those, the bytes that have arrived (held in memory)


@dataclass(frozen=True)
class FileEntry:
    """One entry of a listing: a file with its size, or a folder (`size` None)."""

    path: str
    size: int | None


def file_problem(path: str) -> str | None:
    """Why `path` is not a file's path under a version's root, if it is not."""
    if not path or len(path) > MAX_PATH:
        return f"is empty or longer than {MAX_PATH} characters"
    if path.startswith("/") or "\\" in path:
        return "is not a relative POSIX path"
    if _CONTROL.search(path):
        return "contains a control character"
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        return "has an empty, `.` or `..` segment"
    return None


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _checked_path(path: str) -> str:
    problem = file_problem(path)
    if problem:
        raise InvalidFilePath(
            f"File path {path[:200]!r} {problem}",
            details=[{"location": "body", "field": "path", "message": problem}],
        )
    return path


class Storage(Area):
    """The files of the world's artifact versions, their budget and their signed URLs."""

    def __init__(
        self,
        store: Ground,
        identity: Identity,
        artifacts: Artifacts,
        secret: Callable[[], bytes],
    ):
        """`secret`: the server's key with the world's generation, what URLs are signed with."""
        super().__init__(store)
        self.identity = identity
        self.artifacts = artifacts
        self.secret = secret
        self.under_way: set[Reservation] = set()  # the uploads being received

    # -- signed URLs ------------------------------------------------------------------------
    def signature(
        self, version_id: str, path: str, operation: str, upload_id: str = "", part: int = 0
    ) -> str:
        text = f"{operation}\n{version_id}\n{path}\n{upload_id}\n{part}"
        return hmac.new(self.secret(), text.encode(), hashlib.sha256).hexdigest()[:40]

    def _signed(
        self, version_id: str, path: str, operation: str, upload_id: str = "", part: int = 0
    ) -> Signed:
        signature = self.signature(version_id, path, operation, upload_id, part)
        return Signed(version_id, path, operation, signature, upload_id, part)

    def check(self, asked: Signed) -> None:
        """Refuses a URL whose signature is not the one this world gives what it asks."""
        if not self._current(asked):
            raise SignedUrlRefused(
                "The signature of this URL does not match what it asks (or the URL is of an "
                "earlier world: ask for a new one)"
            )

    def _version(self, caller: Caller, version_id: str, action: str) -> ArtifactVersion:
        version = self.world.artifact_versions.get(version_id)
        if version is None:
            raise errors.ArtifactVersionNotFound(f"No artifact version with id {version_id!r}")
        self.identity.require(caller, action, self.artifacts.repo_of(version).resource)
        return version

    @locked
    def sign(
        self, caller: Caller, version_id: str, paths: list[str], operation: str
    ) -> list[Signed]:
        """URLs for files of a version: WRITE while it is staged, READ once it is finalised."""
        for path in paths:
            _checked_path(path)
        version = self._version(caller, version_id, "write" if operation == WRITE else "read")
        if operation == WRITE:
            _require_staged(version)
        elif not version.ready:
            raise _not_ready(version)
        return [self._signed(version.id, path, operation) for path in paths]

    @locked
    def start_multipart(
        self, caller: Caller, version_id: str, path: str, parts: int
    ) -> tuple[MultipartUpload, list[Signed], Signed]:
        """An upload of one file in `parts` parts: a URL for each part, and the URL that
        completes the upload (S3's way: a POST of the parts' numbers and ETags)."""
        _checked_path(path)
        version = self._version(caller, version_id, "write")
        _require_staged(version)
        if len(self.world.uploads) >= MAX_UPLOADS:
            raise UploadTooLarge(
                f"The world has {MAX_UPLOADS:,} uploads in parts under way, the most it holds: "
                "complete some (or a reset frees them)"
            )
        _require_room(version, path)
        upload = MultipartUpload(id=self.sources.new_id("upload"), version_id=version.id, path=path)
        self.world.uploads[upload.id] = upload
        return (
            upload,
            [self._signed(version.id, path, WRITE, upload.id, n) for n in range(1, parts + 1)],
            self._signed(version.id, path, WRITE, upload.id),
        )

    # -- the bytes ----------------------------------------------------------------------------
    def used(self) -> int:
        """Bytes the world's files and upload parts hold (a content held by two files counts
        twice: a dump writes both), and those of the uploads under way: what each of this
        world's set aside (its declared length, refused early), and what each begun before a
        reset holds in memory (until its next chunk, refused: `mock_server.http.storage`
        checks each chunk's URL), not what it declared and may never send."""
        return self.world.blobs.size + sum(
            r.size if self._current(r.asked) else r.received for r in self.under_way
        )

    def _current(self, asked: Signed) -> bool:
        """Whether a URL's signature is the one this world gives what it asks (an upload
        begun before a reset is not of this world)."""
        if not asked.signature.isascii():  # compare_digest takes no other text
            return False
        expected = self.signature(
            asked.version_id, asked.path, asked.operation, asked.upload_id, asked.part
        )
        return hmac.compare_digest(expected, asked.signature)

    @locked
    def reserve(
        self, asked: Signed, size: int, reservation: Reservation | None = None
    ) -> Reservation:
        """Set `size` more bytes aside for an upload (a new one when `reservation` is None),
        or refuse it (413) when it would pass a budget; the version must be staged (and the
        multipart upload a part names must be under way). The URL is checked again: the
        world may have been reset since the upload began."""
        self.check(asked)
        version = self.world.artifact_versions.get(asked.version_id)
        if version is None:
            raise errors.ArtifactVersionNotFound(
                f"No artifact version with id {asked.version_id!r}"
            )
        _require_staged(version)
        earlier = 0
        if asked.upload_id:
            # The upload's other parts, stored or arriving at the same time: parts sent side
            # by side are one file, within the file's budget together.
            upload = self._upload(asked)
            earlier = sum(p.size for n, p in upload.parts.items() if n != asked.part)
            earlier += sum(
                r.size
                for r in self.under_way
                if r.asked.upload_id == asked.upload_id
                and r.asked.part != asked.part  # a retry of this part replaces it
                and self._current(r.asked)
            )
        else:
            _require_room(version, asked.path)
        held = reservation.size if reservation else 0
        if earlier + held + size > FILE_BYTES:
            raise _file_too_large(asked.path)
        if self.used() + size > WORLD_BYTES:
            raise _world_too_full()
        if reservation is None:
            reservation = Reservation(asked)
            self.under_way.add(reservation)
        reservation.size += size
        return reservation

    @locked
    def release(self, reservation: Reservation) -> None:
        """Give an upload's reserved bytes back (stored or not)."""
        self.under_way.discard(reservation)
        reservation.size = 0

    @locked
    def put(self, reservation: Reservation, data: bytes, md5: str, sha256: str) -> StoredFile:
        """Store an upload's bytes (a whole file, or one part of a multipart upload), checked
        again: the world may have been reset, or the version finalised or failed, while they
        arrived (a world's version ids are the same after a reset: the URL's signature says
        which world it is of)."""
        asked = reservation.asked
        self.check(asked)
        version = self.world.artifact_versions.get(asked.version_id)
        if version is None:
            raise errors.ArtifactVersionNotFound(
                f"No artifact version with id {asked.version_id!r}"
            )
        _require_staged(version)
        stored = StoredFile(len(data), md5, sha256)
        if asked.upload_id:
            upload = self._upload(asked)
            replaced = upload.parts.get(asked.part)
            upload.parts[asked.part] = stored
        else:
            _require_room(version, asked.path)  # other files may have arrived meanwhile
            replaced = version.files.get(asked.path)
            version.files[asked.path] = stored
        self.world.blobs.hold(sha256, data)
        if replaced is not None:
            self.world.blobs.let_go(replaced.blob)
        return stored

    def _upload(self, asked: Signed) -> MultipartUpload:
        upload = self.world.uploads.get(asked.upload_id)
        if upload is None or (upload.version_id, upload.path) != (asked.version_id, asked.path):
            raise StoredFileNotFound(f"No multipart upload {asked.upload_id!r} of this file")
        return upload

    @locked
    def complete(self, asked: Signed, listed: list[tuple[int, str]]) -> StoredFile:
        """Join a multipart upload's parts, as the completion lists them (each part's number
        and ETag, in order), into the file."""
        self.check(asked)
        version = self.world.artifact_versions.get(asked.version_id)
        if version is None:
            raise errors.ArtifactVersionNotFound(
                f"No artifact version with id {asked.version_id!r}"
            )
        _require_staged(version)
        upload = self._upload(asked)
        _require_room(version, upload.path)
        numbers = [n for n, _ in listed]
        if not listed or numbers != sorted(set(numbers)):
            raise InvalidMultipartCompletion(
                "The completion must list parts in ascending order, each once"
            )
        for number, etag in listed:
            part = upload.parts.get(number)
            if part is None or etag.strip('"') != part.md5:
                raise InvalidMultipartCompletion(
                    f"Part {number} was not uploaded, or its ETag is not {etag[:40]!r}"
                )
        if sum(upload.parts[n].size for n in numbers) > FILE_BYTES:  # parts since replaced
            raise _file_too_large(upload.path)
        data = b"".join(self.world.blobs[upload.parts[n].blob] for n in numbers)
        digest = hashlib.sha256(data).hexdigest()
        replaced = version.files.get(upload.path)
        # The file takes the parts' place: the world holds its bytes, and no longer theirs
        # nor those of the file it replaces.
        freed = sum(part.size for part in upload.parts.values())
        freed += replaced.size if replaced is not None else 0
        if self.used() + len(data) - freed > WORLD_BYTES:
            raise _world_too_full()
        stored = StoredFile(len(data), hashlib.md5(data).hexdigest(), digest)
        version.files[upload.path] = stored
        blobs = self.world.blobs
        blobs.hold(digest, data)
        del self.world.uploads[upload.id]
        for part in upload.parts.values():
            blobs.let_go(part.blob)
        if replaced is not None:
            blobs.let_go(replaced.blob)
        return stored

    @locked
    def read(self, asked: Signed) -> tuple[bytes, str]:
        """A finalised version's file, as it was uploaded, and its MD5."""
        self.check(asked)
        version = self.world.artifact_versions.get(asked.version_id)
        if version is None:
            raise errors.ArtifactVersionNotFound(
                f"No artifact version with id {asked.version_id!r}"
            )
        if not version.ready:
            raise _not_ready(version)
        stored = version.files.get(asked.path)
        if stored is None:
            raise StoredFileNotFound(f"No file {asked.path!r} in artifact version {version.fqn}")
        return self.world.blobs[stored.blob], stored.md5

    # -- listing --------------------------------------------------------------------------------
    @locked
    def list_files(
        self, caller: Caller, version_id: str, path: str | None, limit: int, offset: int
    ) -> tuple[list[FileEntry], bool]:
        """The files and folders right under `path` (the root when None or empty), by path,
        `limit` of them from `offset`, and whether more follow. A path that names a file, or
        nothing, has no entries."""
        version = self._version(caller, version_id, "read")
        prefix = ""
        if path:
            prefix = _checked_path(path.strip("/")) + "/"
        entries: dict[str, int | None] = {}
        for file_path, stored in version.files.items():
            if not file_path.startswith(prefix):
                continue
            head, slash, _ = file_path[len(prefix) :].partition("/")
            if slash:
                entries.setdefault(prefix + head, None)
            else:
                entries[prefix + head] = stored.size
        listed = [FileEntry(p, size) for p, size in sorted(entries.items())]
        return listed[offset : offset + limit], offset + limit < len(listed)

    # -- fixtures: a version's files, read and written with its record ----------------------
    def load_files(self, version: ArtifactVersion, records: list[written.FileRecord]) -> None:
        """A fixture's files of a staged version, through the budget as an upload is."""
        for record in records:
            data = written.file_content(record)
            asked = self._signed(version.id, _checked_path(record["path"]), WRITE)
            reservation = self.reserve(asked, len(data))
            try:
                self.put(
                    reservation,
                    data,
                    hashlib.md5(data).hexdigest(),
                    hashlib.sha256(data).hexdigest(),
                )
            finally:
                self.release(reservation)

    def dump_files(self, version: ArtifactVersion) -> list[written.FileRecord]:
        return [
            written.file(path, self.world.blobs[stored.blob])
            for path, stored in version.files.items()
        ]

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "artifactVersions": lambda r: self.artifacts.load_version(r, self.load_files),
        }

    def dump(self) -> written.FixtureDocument:
        """The fixture section `artifactVersions`, each version with its files (an
        unfinished multipart upload is not kept: a client starts it again)."""
        return {
            "artifactVersions": [
                self.artifacts.dump_version(v, self.dump_files)
                for v in self.world.artifact_versions.values()
            ]
        }


def _require_room(version: ArtifactVersion, path: str) -> None:
    """Refuses a new file of a version that holds `MAX_FILES` (a file replaced takes none)."""
    if path not in version.files and len(version.files) >= MAX_FILES:
        raise UploadTooLarge(
            f"Artifact version {version.fqn} holds {MAX_FILES:,} files, the most a version of "
            "the mock holds; nothing of this upload was stored"
        )


def _world_too_full() -> UploadTooLarge:
    return UploadTooLarge(
        f"The world's files would hold more than {WORLD_BYTES} bytes "
        f"({WORLD_BYTES >> 20} MiB, uploads under way included), the most a world of "
        "the mock holds; nothing of this upload was stored (a reset frees the world's)"
    )


def _file_too_large(path: str) -> UploadTooLarge:
    return UploadTooLarge(
        f"File {path!r} would hold more than {FILE_BYTES} bytes ({FILE_BYTES >> 20} MiB), "
        "the most a file of the mock holds; nothing of it was stored"
    )


def _require_staged(version: ArtifactVersion) -> None:
    if version.status != "staged":
        raise ArtifactVersionNotStaged(
            f"Artifact version {version.fqn} ({version.id}) is {version.status}, not staged: "
            "it takes no uploads"
        )


def _not_ready(version: ArtifactVersion) -> ArtifactVersionNotReady:
    return ArtifactVersionNotReady(
        f"Artifact version {version.fqn} ({version.id}) is {version.status}, not finalised: "
        "its files cannot be read yet"
    )

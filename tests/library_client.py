"""Runs in the platform library's own environment (`truefoundry`, with its CLI), not the test
suite's: what the library and the CLI do against a live mock, step by step, printed as one
JSON object.

`python library_client.py PLAN` reads the plan (JSON: the mock's URL, a user token, the ids
of the objects the steps act on, and the bodies to read with the library's models) and
prints `{step: result}`, where a step that raised gives `{"raised": class, "message": ...}`.
The library reads its host and key from TFY_HOST and TFY_API_KEY, which the caller sets.

The CLI's commands run in this process, through the `tfy` command's own entry point
(`truefoundry.cli.__main__`) with its arguments, as the `tfy` script runs it: one process for
every step, rather than one more Python start (and library import) per command. Between the
commands, a step reads what operations 1, 2 and 7 answer, over HTTP.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import io
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.sdk_oracle import disagreements

STEPS: dict[str, Callable[[dict[str, Any]], Any]] = {}


def step(function: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    STEPS[function.__name__] = function
    return function


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "raised": type(exc).__name__,
        "status": getattr(exc, "status_code", None),
        "message": str(exc)[:2000],
        "cause": None if exc.__cause__ is None else type(exc.__cause__).__name__,
    }


@step
def session(plan: dict[str, Any]) -> Any:
    """The library's session, from TFY_HOST and TFY_API_KEY: who it says the caller is."""
    from truefoundry.common.session import Session

    return dict(Session.new().user_info)


@step
def session_endpoint(plan: dict[str, Any]) -> Any:
    """What the library makes of GET /session (its path for keys it cannot decode)."""
    from truefoundry.common.servicefoundry_client import ServiceFoundryServiceClient

    client = ServiceFoundryServiceClient(tfy_host=plan["url"])
    return dict(client.get_user_info_from_session(plan["token"]))


@step
def bootstrap(plan: dict[str, Any]) -> Any:
    """The tenant and the client configuration every credential read starts with."""
    from truefoundry.common.servicefoundry_client import ServiceFoundryServiceClient

    client = ServiceFoundryServiceClient(tfy_host=plan["url"])
    client.check_min_cli_version()  # raises when the library is older than the platform's minimum
    return {"tenant": dict(client.tenant_info), "config": dict(client.python_sdk_config)}


@step
def job_runs(plan: dict[str, Any]) -> Any:
    """The runs of a job, paged as the library pages them, until an empty page."""
    from truefoundry.deploy.lib.clients.servicefoundry_client import (
        ServiceFoundryServiceClient,
    )

    client = ServiceFoundryServiceClient()
    pages: list[list[dict[str, Any]]] = []
    while True:
        page = client.list_job_runs(plan["job_id"], limit=10, offset=10 * len(pages))
        pages.append([run.dict() for run in page])
        if not page or len(pages) > 50:
            return pages


def _tree(root: str | Path) -> dict[str, str]:
    """Each file under a folder, by its path there: the SHA-256 of its bytes."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(Path(root).rglob("*"))
        if path.is_file()
    }


def _folder(files: dict[str, bytes]) -> str:
    folder = tempfile.mkdtemp()
    for name, data in files.items():
        path = Path(folder, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


FILES = {
    "weights.bin": bytes(range(256)) * 64,
    "config/params.json": b'{"layers": 2, "dropout": 0.1}\n',
    "README.md": "A model card in other scripts: \u00e9t\u00e9, \u65e5\u672c\n".encode(),
}


@step
def log_artifact(plan: dict[str, Any]) -> Any:
    """A folder logged as an artifact (staged, uploaded by signed URLs, finalised), read back
    by its FQN, and downloaded by READ URLs: the files it logged and the files it got."""
    from truefoundry.ml import get_client

    client = get_client()
    source = _folder(FILES)
    logged = client.log_artifact(
        ml_repo=plan["ml_repo"], name="library-artifact", artifact_paths=[(source,)]
    )
    found = client.get_artifact_version_by_fqn(logged.fqn)
    target = tempfile.mkdtemp()
    downloaded = found.download(path=target)
    return {
        "fqn": logged.fqn,
        "read_fqn": found.fqn,
        "version": found.version,
        "logged": _tree(source),
        "downloaded": _tree(downloaded),
    }


@step
def log_model(plan: dict[str, Any]) -> Any:
    """A folder logged as a model, read back by its FQN, and downloaded."""
    from truefoundry.ml import get_client

    client = get_client()
    source = _folder(FILES)
    logged = client.log_model(
        ml_repo=plan["ml_repo"], name="library-model", model_file_or_folder=source
    )
    found = client.get_model_version_by_fqn(logged.fqn)
    info = found.download(path=tempfile.mkdtemp())
    return {
        "fqn": logged.fqn,
        "read_fqn": found.fqn,
        "logged": _tree(source),
        "downloaded": _tree(info.model_dir),
    }


@step
def tag_logged(plan: dict[str, Any]) -> Any:
    """A tag applied to the version `log_artifact` logged, read back by its FQN."""
    from truefoundry import client

    fqn = f"artifact:acme/{plan['ml_repo']}/library-artifact:1"
    version = client.artifact_versions.get_by_fqn(fqn=fqn).data
    client.artifact_versions.apply_tags(artifact_version_id=version.id, tags=["latest"])
    return {"id": version.id, "tags": client.artifact_versions.get_by_fqn(fqn=fqn).data.tags}


@step
def log_in_parts(plan: dict[str, Any]) -> Any:
    """A 12 MiB file logged in parts (the platform's multipart upload), downloaded whole.

    The library uploads in parts from 100 MiB up; the test lowers that threshold to 1 MiB
    (its `decide_file_parts` given the lower bound, as its own parameter allows), so that the
    upload takes 12 MiB and not 100: the parts are the library's own (10 MiB each)."""
    import truefoundry.ml.artifact.truefoundry_artifact_repo as repository
    from truefoundry.common import storage_provider_utils
    from truefoundry.ml import get_client

    data = hashlib.sha256(b"seed").digest() * (12 * 1024 * 1024 // 32)
    source = _folder({"big.bin": data})
    decide = repository.decide_file_parts
    repository.decide_file_parts = functools.partial(
        storage_provider_utils.decide_file_parts, min_file_size_bytes_for_multipart=1024 * 1024
    )
    try:
        parts = repository.decide_file_parts(str(Path(source, "big.bin"))).num_parts
        client = get_client()
        logged = client.log_artifact(
            ml_repo=plan["ml_repo"], name="library-parts", artifact_paths=[(source,)]
        )
    finally:
        repository.decide_file_parts = decide
    downloaded = client.get_artifact_version_by_fqn(logged.fqn).download(path=tempfile.mkdtemp())
    return {"parts": parts, "logged": _tree(source), "downloaded": _tree(downloaded)}


@step
def log_over_budget(plan: dict[str, Any]) -> Any:
    """A file of 17 MiB, over the mock's 16 MiB a file: the library's error."""
    from truefoundry.ml import get_client

    source = _folder({"huge.bin": bytes(17 * 1024 * 1024)})
    try:
        logged = get_client().log_artifact(
            ml_repo=plan["ml_repo"], name="library-huge", artifact_paths=[(source,)]
        )
    except Exception as exc:
        return {**_error(exc), "cause_message": str(exc.__cause__)[:2000]}
    return {"logged": logged.fqn}


@step
def tags(plan: dict[str, Any]) -> Any:
    """Two versions staged; a tag applied to one, then to the other without force."""
    from truefoundry import client
    from truefoundry_sdk import ArtifactManifest, TrueFoundryManagedSource

    manifest = ArtifactManifest(
        name="library-tags", ml_repo=plan["ml_repo"], metadata={}, source=TrueFoundryManagedSource()
    )
    first = client.artifact_versions.stage(manifest=manifest).id
    second = client.artifact_versions.stage(manifest=manifest).id
    client.artifact_versions.apply_tags(artifact_version_id=first, tags=["stable"])
    try:
        client.artifact_versions.apply_tags(artifact_version_id=second, tags=["stable"])
        conflict: Any = None
    except Exception as exc:
        conflict = _error(exc)
    return {"first": first, "second": second, "conflict": conflict}


@step
def get_or_create(plan: dict[str, Any]) -> Any:
    """A personal access token got through the library's own requests, twice, then used as
    the key of a new library session."""
    from truefoundry.common.request_utils import request_handling
    from truefoundry.common.servicefoundry_client import session_with_retries
    from truefoundry.common.session import Session

    url = f"{plan['url']}/api/svc/v1/personal-access-tokens/library"
    headers = {"Authorization": f"Bearer {Session.new().access_token}"}
    first = request_handling(session_with_retries().get(url, headers=headers))
    again = request_handling(session_with_retries().get(url, headers=headers))
    os.environ["TFY_API_KEY"] = first["token"]
    try:
        user = dict(Session.new().user_info)
    finally:
        os.environ["TFY_API_KEY"] = plan["token"]
    return {"first": first, "again": again, "user": user}


@step
def secret_group_deletes(plan: dict[str, Any]) -> Any:
    """A group deleted, then again; a group whose integration is down, without and with
    force."""
    from truefoundry import client

    def delete(group_id: str, **options: Any) -> Any:
        try:
            return client.secret_groups.delete(group_id, **options).dict()
        except Exception as exc:
            return _error(exc)

    healthy, faulty = plan["healthy_group"], plan["faulty_group"]
    return {
        "deleted": delete(healthy),
        "again": delete(healthy),
        "faulty": delete(faulty),
        "forced": delete(faulty, force_delete=True),
    }


@step
def models(plan: dict[str, Any]) -> Any:
    """Each body the plan names, read strictly with the library's model of it."""
    found = {}
    headers = {"Authorization": f"Bearer {plan['token']}"}
    for operation_id, (model_path, method, url, body) in plan["models"].items():
        module, _, name = model_path.partition(":")
        model = getattr(importlib.import_module(module), name)
        response = requests.request(method, url, json=body, headers=headers, timeout=30)
        found[operation_id] = {
            "status": response.status_code,
            "disagreements": disagreements(model, response.content),
        }
    return found


# -- the CLI, through its own entry point ---------------------------------------------------


def tfy(*arguments: str) -> dict[str, Any]:
    """`tfy ARGUMENTS`, as the `tfy` script runs it: its exit status and what it printed."""
    from truefoundry.cli.__main__ import create_truefoundry_cli

    printed = io.StringIO()
    status: Any = 0
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        try:
            create_truefoundry_cli().main(list(arguments), prog_name="tfy")
        except SystemExit as exc:
            status = exc.code or 0
    return {"status": status, "printed": printed.getvalue()[-4000:]}


def _file(manifest: dict[str, Any]) -> str:
    path = Path(tempfile.mkdtemp(), f"{manifest['type']}.yaml")
    path.write_text(yaml.safe_dump(manifest))
    return str(path)


def _api(plan: dict[str, Any], method: str, path: str, **request: Any) -> Any:
    """An answer of the mock's API, over HTTP, as the user the plan names."""
    headers = {"Authorization": f"Bearer {plan['token']}"}
    response = requests.request(
        method, f"{plan['url']}/api/svc/v1{path}", headers=headers, timeout=30, **request
    )
    return {"status": response.status_code, "body": response.json()}


@step
def cli_role_binding(plan: dict[str, Any]) -> Any:
    """A role-binding manifest applied with `tfy apply -f`, then deleted with `tfy delete
    -f` (twice): what operation 1 answers for its subject after each."""
    manifest = plan["role_binding"]
    path = _file(manifest)
    subject = {"subjectType": "user", "subjectId": plan["bob"]}
    applied = tfy("apply", "-f", path)
    after_apply = _api(plan, "GET", "/role-bindings/generate-manifest", params=subject)
    deleted = tfy("delete", "-f", path)
    after_delete = _api(plan, "GET", "/role-bindings/generate-manifest", params=subject)
    return {
        "applied": applied,
        "after_apply": after_apply,
        "deleted": deleted,
        "after_delete": after_delete,
        "again": tfy("delete", "-f", path),
    }


@step
def cli_secret_group(plan: dict[str, Any]) -> Any:
    """A secret group applied with `tfy apply -f` (the one `secret_group_deletes` deleted,
    made again: a deployment names its secrets), then deleted with `tfy delete -f` (twice):
    its secrets' ids, and what operation 2 answers for them after each."""
    manifest = plan["secret_group"]
    path = _file(manifest)
    applied = tfy("apply", "-f", path)
    # A dry run of the same manifest changes nothing and shows the group's secrets.
    shown = _api(plan, "PUT", "/apply", json={"manifest": manifest, "dryRun": True})
    ids = [s["id"] for s in shown["body"]["data"]["associatedSecrets"]]
    after_apply = _api(plan, "POST", "/secrets/deployments", json={"secretIds": ids})
    deleted = tfy("delete", "-f", path)
    after_delete = _api(plan, "POST", "/secrets/deployments", json={"secretIds": ids})
    return {
        "applied": applied,
        "secret_ids": ids,
        "after_apply": after_apply,
        "deleted": deleted,
        "after_delete": after_delete,
        "again": tfy("delete", "-f", path),
    }


SKILL_MD = """---
name: summarise-ticket
description: Summarises a support ticket in three lines
---
Read the ticket, then write what happened, why, and what is next.
"""


@step
def cli_skills(plan: dict[str, Any]) -> Any:
    """A skill folder uploaded with `tfy upload skill`, then applied with `tfy apply -f` of
    a manifest whose source is that folder, and of one whose source is its SKILL.md inline."""
    folder = Path(_folder({"SKILL.md": SKILL_MD.encode(), "examples/one.md": b"An example.\n"}))
    uploaded = tfy("upload", "skill", "--repository", plan["ml_repo"], "--dir", str(folder))
    local = {
        "type": "agent-skill",
        "name": "summarise-ticket",
        "ml_repo": plan["ml_repo"],
        "metadata": {"team": "support"},
        "source": {"type": "local", "skill_dir": str(folder)},
    }
    inline = {**local, "name": "greet", "source": {"type": "inline", "skill_md": SKILL_MD}}
    return {
        "uploaded": uploaded,
        "applied_local": tfy("apply", "-f", _file(local)),
        "applied_inline": tfy("apply", "-f", _file(inline)),
    }


@step
def cli_jobs(plan: dict[str, Any]) -> Any:
    """A run triggered with `tfy trigger job`, listed by operation 7, terminated with `tfy
    terminate job`, and listed again until it has ended."""
    fqn = plan["job_fqn"]
    triggered = tfy("trigger", "job", "--application-fqn", fqn)
    runs_path = f"/jobs/{plan['job_id']}/runs"
    first = _api(plan, "GET", runs_path, params={"limit": 1})["body"]["data"]
    name = first[0]["name"] if first else None
    terminated = tfy("terminate", "job", "--job-fqn", fqn, "--job-run-name", str(name))
    listings = [
        _api(plan, "GET", runs_path, params={"limit": 1, "status": status})["body"]["data"]
        for status in ("TERMINATING", "TERMINATED")
    ]
    return {
        "triggered": triggered,
        "first": first,
        "terminated": terminated,
        "after": listings,
        "again": tfy("terminate", "job", "--job-fqn", fqn, "--job-run-name", str(name)),
    }


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    results: dict[str, Any] = {}
    for name in plan["steps"]:
        try:
            results[name] = STEPS[name](plan)
        except Exception as exc:
            results[name] = {**_error(exc), "traceback": traceback.format_exc()[-3000:]}
    print(json.dumps(results, default=str))


if __name__ == "__main__":
    main()

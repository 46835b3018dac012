"""Runs in the platform library's own environment (`truefoundry`, with its CLI), not the test
suite's: what the library does against a live mock, step by step, printed as one JSON object.

`python library_client.py PLAN` reads the plan (JSON: the mock's URL, a user token, the ids
of the objects the steps act on, and the bodies to read with the library's models) and
prints `{step: result}`, where a step that raised gives `{"raised": class, "message": ...}`.
The library reads its host and key from TFY_HOST and TFY_API_KEY, which the caller sets.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

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


@step
def log_artifact(plan: dict[str, Any]) -> Any:
    """An artifact logged: staged, then the upload (which the mock does not serve) fails."""
    from truefoundry.ml import get_client

    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "weights.txt")
    Path(path).write_text("0.5\n")
    try:
        version = get_client().log_artifact(
            ml_repo=plan["ml_repo"], name="library-artifact", artifact_paths=[(path,)]
        )
    except Exception as exc:
        return _error(exc)
    return {"logged": version.fqn}


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
    for operation_id, (model_path, url) in plan["models"].items():
        module, _, name = model_path.partition(":")
        model = getattr(importlib.import_module(module), name)
        response = requests.get(url, timeout=30)
        found[operation_id] = {
            "status": response.status_code,
            "disagreements": disagreements(model, response.content),
        }
    return found


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

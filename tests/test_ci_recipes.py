"""The docs' recipes for each CI system, read as each system reads them: the YAML parsed
(GitHub Actions, GitLab CI, Azure Pipelines, CircleCI), the Jenkinsfile's steps read. Each
runs `platform-mock run` with a `--report` whose JUnit file is the one handed to the
system's test view, and publishes it when the job failed too."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from mock_server.reports.report_files import targets
from tests import pages

SYSTEMS = ("github", "gitlab", "jenkins", "azure", "circleci")


def recipe(system: str) -> str:
    """The fenced block after `<!-- recipe: SYSTEM -->`, on whichever page holds it."""
    _, text = pages.holding(f"<!-- recipe: {system} -->")
    found = re.search(rf"<!-- recipe: {system} -->\n```[a-z]*\n(.*?)```", text, re.DOTALL)
    assert found, f"no {system} recipe after its marker"
    return found[1]


def run_words(command: str) -> list[str]:
    """A `platform-mock run` command line as words, checked to be one."""
    words = shlex.split(command)
    assert words[:2] == ["platform-mock", "run"], command
    assert "--" in words and words.index("--") < len(words) - 1, command
    return words


def junit_path(words: list[str]) -> Path:
    """Where the run writes its JUnit report, as `--report` tells it."""
    values = [
        words[i + 1] for i, word in enumerate(words[: words.index("--")]) if word == "--report"
    ]
    assert values, words
    return targets(values)["junit"]


def run_commands(steps: list[Any], key: str) -> list[str]:
    """The commands of the steps that run `platform-mock run`."""
    commands = []
    for step in steps:
        command = (
            step if isinstance(step, str) else step.get(key) if isinstance(step, dict) else None
        )
        if isinstance(command, dict):
            command = command.get("command")
        if isinstance(command, str) and command.startswith("platform-mock run "):
            commands.append(command)
    return commands


def test_the_ci_section_has_a_recipe_per_system():
    assert [system for system in SYSTEMS if recipe(system)] == list(SYSTEMS)


def test_the_ci_section_states_the_default_verdict_and_the_plugins():
    path, _ = pages.holding("## Contract check in CI")
    section = pages.section(path, "Contract check in CI")
    assert "The verdict is strict by default" in section
    assert "The pytest\nplugin alone, without `run`, fails nothing for the contract by default" in (
        section
    )


# -- GitHub Actions ----------------------------------------------------------------------------


def github() -> list[dict[str, Any]]:
    workflow = yaml.safe_load(recipe("github"))
    (job,) = workflow["jobs"].values()
    return list(job["steps"])


def test_github_recipe_runs_the_check_and_uploads_its_reports_always():
    steps = github()
    (command,) = run_commands(steps, "run")
    (upload,) = [step for step in steps if str(step.get("uses", "")).startswith("actions/upload")]
    assert upload["if"] == "always()"
    assert junit_path(run_words(command)).parent == Path(upload["with"]["path"])


# -- GitLab CI ---------------------------------------------------------------------------------


def gitlab() -> dict[str, Any]:
    (job,) = yaml.safe_load(recipe("gitlab")).values()
    return dict(job)


def test_gitlab_recipe_runs_the_check():
    assert len(run_commands(gitlab()["script"], "script")) == 1


def test_gitlab_recipe_reads_the_junit_file_the_run_writes():
    job = gitlab()
    (command,) = run_commands(job["script"], "script")
    assert Path(job["artifacts"]["reports"]["junit"]) == junit_path(run_words(command))


def test_gitlab_recipe_keeps_the_report_when_the_job_fails():
    assert gitlab()["artifacts"]["when"] == "always"


# -- Jenkins -----------------------------------------------------------------------------------


def jenkins_block(text: str, name: str) -> str:
    """The body of `name { ... }` in a Jenkinsfile, its braces matched."""
    start = re.search(rf"\b{name}\s*\{{", text)
    assert start, f"no {name} block"
    depth, at = 1, start.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(text[at], 0)
        at += 1
    return text[start.end() : at - 1]


def jenkins_sh(text: str) -> list[str]:
    return [
        shlex.split(line.strip()[3:])[0]
        for line in text.splitlines()
        if line.strip().startswith("sh ")
    ]


def test_jenkins_recipe_runs_the_check_in_a_stage():
    steps = jenkins_block(jenkins_block(recipe("jenkins"), "stages"), "steps")
    assert len(run_commands(jenkins_sh(steps), "sh")) == 1


def test_jenkins_recipe_publishes_the_junit_file_the_run_writes_always():
    text = recipe("jenkins")
    (command,) = run_commands(jenkins_sh(jenkins_block(text, "steps")), "sh")
    always = jenkins_block(jenkins_block(text, "post"), "always")
    (published,) = re.findall(r"^\s*junit\s+'([^']+)'", always, re.MULTILINE)
    assert Path(published) == junit_path(run_words(command))


# -- Azure Pipelines ---------------------------------------------------------------------------


def azure() -> list[dict[str, Any]]:
    return list(yaml.safe_load(recipe("azure"))["steps"])


def test_azure_recipe_runs_the_check():
    assert len(run_commands(azure(), "script")) == 1


def test_azure_recipe_publishes_the_junit_file_the_run_writes_always():
    steps = azure()
    (command,) = run_commands(steps, "script")
    (publish,) = [step for step in steps if step.get("task") == "PublishTestResults@2"]
    assert publish["condition"] == "always()"
    assert publish["inputs"]["testResultsFormat"] == "JUnit"
    assert Path(publish["inputs"]["testResultsFiles"]) == junit_path(run_words(command))


# -- CircleCI ----------------------------------------------------------------------------------


def circleci() -> list[Any]:
    (job,) = yaml.safe_load(recipe("circleci"))["jobs"].values()
    return list(job["steps"])


def test_circleci_recipe_runs_the_check():
    assert len(run_commands(circleci(), "run")) == 1


def test_circleci_recipe_stores_the_folder_of_the_junit_file_the_run_writes_always():
    steps = circleci()
    (command,) = run_commands(steps, "run")
    (stored,) = [step["store_test_results"] for step in steps if "store_test_results" in step]
    assert stored["when"] == "always"
    # CircleCI reads every JUnit file under the folder given.
    assert Path(stored["path"]) == junit_path(run_words(command)).parent

"""Replays tests/vectors/tool_definition.json: ``BashTool.definition()`` and
``JobTool.definition()`` give, for the same configuration, the definitions
every face gives, with the JSON Schema's keys as the core wrote them."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import VECTORS

import conch


def system_sentence() -> str:
    """What the vectors' ``{system}`` stands for, read here as a user
    would: ``bash`` on ``PATH`` and ``uname``."""
    version = subprocess.run(
        ["bash", "-c", 'printf %s "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}"'],
        capture_output=True, text=True, check=True).stdout
    uname = os.uname()
    system = "macOS" if uname.sysname == "Darwin" else uname.sysname
    return f"The shell is bash {version} on {system} {uname.release} ({uname.machine})."


def cases() -> list[dict]:
    path = VECTORS / "tool_definition.json"
    assert path.is_file(), f"{path} is missing"
    text = path.read_text().replace("{system}", json.dumps(system_sentence())[1:-1])
    loaded = json.loads(text)
    assert loaded, f"{path} has no cases"
    return loaded


def tool_options(config: dict) -> dict:
    """A vector's configuration as the tool's keyword arguments."""
    options = {"snapshot": "none"}
    for key, value in config.items():
        if key == "auto_background_after_ms":
            options["auto_background_after"] = value / 1000
        elif key in ("interceptor", "tool_names", "rules", "name", "job_tool_name",
                     "virtual_terminal"):
            options[key] = value
        else:
            raise AssertionError(f"unknown config key {key}")
    return options


CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_tool_definition(case):
    bash = conch.BashTool(".", **tool_options(case["config"]))
    job = conch.JobTool(bash)
    assert {"bash": bash.definition(), "job": job.definition()} == case["expect"]


def test_the_definition_is_plain_json_the_host_may_change():
    bash = conch.BashTool(".", snapshot="none")
    first = bash.definition()
    json.dumps(first)
    first["input_schema"]["properties"].clear()
    assert bash.definition()["input_schema"]["properties"]["command"] == {
        "type": "string", "description": "The bash command to run."}

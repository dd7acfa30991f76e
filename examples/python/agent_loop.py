"""An agent-style loop: the "model" asks for commands, the host runs each
through conch.BashTool and feeds back exactly the text the model reads
(errors included: a failed command is a tool result too).

    python examples/python/agent_loop.py
"""

from __future__ import annotations

import tempfile

import conch

# What a model might ask for, one tool call per turn.
CALLS: list[dict[str, object]] = [
    {"command": "git init -q . && echo 'print(\"hi\")' > app.py && ls"},
    {"command": "python3 app.py"},
    {"command": "cat app.py"},  # the host has a `read` tool: steered there
    {"command": "seq 1 100000 | tail -n 3"},  # the limit applies to the whole output
    {"command": "seq 1 200000"},  # too long: truncated, full text in an artifact
    {"command": "ls missing-file"},  # non-zero exit: the model sees the code
    {"command": "sleep 30", "timeout": 1},  # the whole process tree is stopped
]


def tool_call(tool: conch.BashTool, args: dict[str, object]) -> str:
    """One turn: the text that goes back to the model."""
    try:
        result = tool.execute(args)
    except conch.BlockedError as e:
        return f"{e}\n(suggested tool: {e.suggested_tool})"
    except conch.ToolError as e:
        return str(e)
    truncation = result.details["meta"].get("truncation") if result.details else None
    if truncation and "artifact_id" in truncation and tool.artifacts:
        # What a host's "expand" view shows: the whole output, from the artifact.
        full = tool.artifacts.resolve(f"artifact://{truncation['artifact_id']}")
        print(f"  (host: the artifact holds all {full.count(chr(10))} lines)")
    return result.text


def main() -> None:
    with tempfile.TemporaryDirectory() as project:
        with conch.BashTool(
            project,
            artifacts_dir=f"{project}/.artifacts",
            tool_names=["read", "edit", "grep"],
            interceptor=True,
            snapshot=None,
            session_key="agent-loop-example",
        ) as tool:
            for args in CALLS:
                text = tool_call(tool, args)
                shown = text if len(text) < 400 else f"[... {len(text) - 160} chars ...]{text[-160:]}"
                print(f"$ {args['command']}\n{shown}\n")


if __name__ == "__main__":
    main()

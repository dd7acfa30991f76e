"""A tool loop as an agent host writes it against an LLM API, with a
scripted model in place of the network: register the tools' definitions
verbatim (the Anthropic `tools` shape; OpenAI's is shown too), dispatch each
tool call to `execute`, stream its updates, cancel one, read the full
output of a truncated one from its artifact, one session per conversation.

    python examples/python/llm_tool_loop.py
"""

from __future__ import annotations

import re
import tempfile
import threading

import conch


class ScriptedModel:
    """Stands in for the LLM: answers each turn with the next tool call,
    using only the tools it was given (their names and argument schemas)."""

    SCRIPT = [
        ("bash", {"command": "echo 'print(40 + 2)' > app.py && python3 app.py"}),
        ("bash", {"command": "seq 1 100000"}),  # truncated: the text names an artifact
        ("bash", {"command": "sleep 1; echo server ready; sleep 300", "async": True}),
        ("job", {"op": "poll", "job": 1, "until": "ready", "wait": 30}),
        ("job", {"op": "kill", "job": 1}),
        ("bash", {"command": "ls missing", "timeout": 5}),  # a failure is a tool result too
    ]

    def __init__(self, tools: list[dict]):
        self.schemas = {t["name"]: t["input_schema"] for t in tools}
        self.turn = 0

    def next_call(self) -> tuple[str, dict] | None:
        if self.turn == len(self.SCRIPT):
            return None
        name, args = self.SCRIPT[self.turn]
        self.turn += 1
        schema = self.schemas[name]  # the model only sends what the schema allows
        assert set(schema["required"]) <= set(args) <= set(schema["properties"]), (name, args)
        return name, args


def run_call(tools: dict, name: str, args: dict, cancel: conch.CancelToken | None = None) -> tuple[str, bool]:
    """One tool call: the text the model reads, and whether it is an error."""
    updates: list[str] = []
    try:
        if name == "bash":
            result = tools[name].execute(args, on_update=updates.append, cancel=cancel)
        else:
            result = tools[name].execute(args, cancel=cancel)
        return result.text, False
    except conch.BlockedError as e:  # the interceptor refused: nothing ran
        return str(e), True
    except (conch.ToolError, conch.ToolAbortError) as e:  # the text is still the model's
        return str(e), True


def main() -> None:
    with tempfile.TemporaryDirectory() as project:
        # One conversation, one persistent shell: its own session key.
        bash = conch.BashTool(project, session_key="conversation-1", snapshot="none",
                              artifacts_dir=f"{project}/.artifacts")
        job = conch.JobTool(bash)
        tools = {"bash": bash, "job": job}

        # Registered verbatim: Anthropic's `tools=[...]` takes the definitions
        # as they are; OpenAI's function tools wrap the same three fields.
        anthropic_tools = [bash.definition(), job.definition()]
        openai_tools = [{"type": "function", "function": {"name": d["name"],
                         "description": d["description"], "parameters": d["input_schema"]}}
                        for d in anthropic_tools]
        assert [t["function"]["name"] for t in openai_tools] == ["bash", "job"]

        model = ScriptedModel(anthropic_tools)
        while (call := model.next_call()) is not None:
            name, args = call
            text, is_error = run_call(tools, name, args)
            print(f"> {name} {args}\n{'[error] ' if is_error else ''}{text[-300:]}\n")
            if m := re.search(r"Full: artifact://(\d+)\]$", text):
                # The model (or the host's read tool) asks for the rest.
                full = bash.artifacts.read(m.group(1), offset=99_997)
                assert full == "99998\n99999\n100000\n", full

        # The user presses Esc: the call is cancelled from another thread and
        # the whole process tree stops; the session stays for the next call.
        cancel = conch.CancelToken()
        threading.Timer(0.5, cancel.cancel).start()
        text, is_error = run_call(tools, "bash", {"command": "sleep 300"}, cancel)
        assert is_error, text
        print(f"> bash sleep 300, cancelled\n{text}\n")
        text, _ = run_call(tools, "bash", {"command": "cat app.py"})
        assert text == "print(40 + 2)", text
        bash.close()


if __name__ == "__main__":
    main()

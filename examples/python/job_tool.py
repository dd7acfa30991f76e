"""A model's loop with a dev server: ``bash`` with ``async`` starts it as a
job and returns at once, the ``job`` tool polls until it is ready and
kills it; a slow command past ``auto_background_after`` goes on as a job
too. Every string printed is exactly what the model would read.

    python examples/python/job_tool.py
"""

from __future__ import annotations

import tempfile

import conch


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        bash = conch.BashTool(root, snapshot=None, session_key="example-job-tool",
                              auto_background_after=1)
        job = conch.JobTool(bash)
        try:
            server = "python3 -m http.server 0 --bind 127.0.0.1"
            print(bash.execute({"command": server, "async": True}).text)
            ready = job.execute({"op": "poll", "job": 1, "until": "Serving HTTP", "wait": 10})
            print(ready.text)
            assert "Serving HTTP" in ready.text

            slow = bash.execute({"command": "echo building; sleep 2; echo built"})
            print(slow.text)  # after ~1 s: the notice, then "building"
            print(job.execute({"op": "poll", "job": 2, "wait": 10}).text)

            print(job.execute({"op": "list"}).text)
            print(job.execute({"op": "kill", "job": 1}).text)
        finally:
            bash.close()


if __name__ == "__main__":
    main()

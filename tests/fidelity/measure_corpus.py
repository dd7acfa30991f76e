"""Measures how often a fresh conch session agrees with `bash -c` on a large
third-party corpus: the spec tests of the Oils project
(https://github.com/oils-for-unix/oils, directory `spec/`, files
`*.test.sh`, each case a `#### name` line followed by its code up to the
first `## ` line).

    python tests/fidelity/measure_corpus.py OILS_CHECKOUT/spec [REGEX]

Each case runs once through `bash -c` and once through a fresh
`conch.Shell` (no snapshot, the same environment, stdin `/dev/null`,
stdout and stderr on one stream, each in a directory of its own, also its
`$TMP`), and
agrees when output and exit status are the same. The files that test
other shells or interactive features are left out (`SKIPPED`). Prints the
counts and writes every disagreement to `corpus-diff.txt` in the current
directory. Needs the conch Python module (`scripts/test-python.sh` builds
it into `.venv`). Not part of the test command: the corpus is not in this
repository, and some of its cases race (background jobs, `time`).
"""

import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import conch

# Files about other shells' languages or about interactive use.
SKIPPED = (
    "ysh-", "hay", "oil-", "nix-", "toysh", "zsh-", "ble-", "interactive",
    "xtrace", "background", "sh-options", "builtin-process", "job-control",
    "process-sub", "builtin-trap-bash", "builtin-trap-err",
)


def cases(spec_dir):
    """(name, code) of every case of the files kept."""
    for path in sorted(Path(spec_dir).glob("*.test.sh")):
        if path.name.startswith(SKIPPED):
            continue
        name, code, done = None, [], False
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines(True):
            if line.startswith("#### "):
                if name:
                    yield name, "".join(code).rstrip("\n")
                name, code, done = f"{path.name}: {line[5:].strip()}", [], False
            elif name and not done:
                if line.startswith("## "):
                    done = True
                else:
                    code.append(line)
        if name:
            yield name, "".join(code).rstrip("\n")


def same_text(output, directory):
    """`output` with what differs from run to run made the same: the run's
    directory (a prompt shows its name alone), and the process group an
    interactive bash names."""
    output = output.replace(directory, "DIR").replace(os.path.basename(directory), "DIR")
    return re.sub(r"process group \(\d+\)", "process group (N)", output)


def run_both(code, env, scratch):
    """(bash's (output, status), conch's), each run in a new directory."""
    bash_dir = tempfile.mkdtemp(dir=scratch)
    try:
        done = subprocess.run(
            ["bash", "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, cwd=bash_dir, env=dict(env, TMP=bash_dir), timeout=10,
        )
    except subprocess.TimeoutExpired:
        return None
    bash = (same_text(done.stdout.decode("utf-8", "replace"), bash_dir), done.returncode)
    conch_dir = tempfile.mkdtemp(dir=scratch)
    with conch.Shell(cwd=conch_dir, env=dict(env, TMP=conch_dir), env_policy={"inherit": "none"}, snapshot=None,
                     non_interactive_env=False, max_bytes=1 << 20) as shell:
        result = shell.run(code, timeout=20)
    return bash, (same_text(result.output, conch_dir), result.exit_code)


def main():
    spec_dir = sys.argv[1]
    wanted = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
    scratch = tempfile.mkdtemp(prefix="conch-corpus-")
    env = dict(os.environ, HOME=scratch, SH="bash")
    env.pop("PAGER", None)
    counts = Counter()
    with open("corpus-diff.txt", "w", encoding="utf-8") as diff:
        for name, code in cases(spec_dir):
            if wanted and not wanted.search(name):
                continue
            both = run_both(code, env, scratch)
            if both is None:
                counts["bash timed out"] += 1
            elif both[0] == both[1]:
                counts["same"] += 1
            else:
                counts["different"] += 1
                diff.write(f"=== {name}\n--- bash -c: {both[0]!r}\n--- conch:   {both[1]!r}\n")
    total = counts["same"] + counts["different"]
    print(dict(counts), f"agreement {counts['same'] / max(total, 1):.1%} of {total}")


if __name__ == "__main__":
    main()

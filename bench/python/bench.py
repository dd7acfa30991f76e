"""conch's benchmarks from Python: the conch module, subprocess.run per
command, and a persistent bash driven by pexpect, measured in one process on
the same commands. Prints one JSON record per line (the format of
bench/rust/src/record.rs); bench/report.py makes the table.

    python bench.py suite            every scenario except the flood
    python bench.py flood RUNTIME    peak RSS growth during the flood, in this
                                     fresh process (conch|subprocess|pexpect)

Settings come from the environment, set by bench/run.sh (BENCH_*).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time

from runtimes import SubprocessRuntime, conch_runtime, pexpect_runtime

ENV = os.environ
QUICK = ENV.get("BENCH_QUICK") == "1"
ONLY = ENV["BENCH_ONLY"].split(",") if ENV.get("BENCH_ONLY") else None
REPO = ENV["BENCH_REPO"]
with open(ENV["BENCH_SEQUENCE"]) as f:
    SEQUENCE = [line.replace("@REPO@", REPO) for line in f.read().splitlines() if line.strip()]

ABORT_AFTER = 0.3
TIMEOUT = 0.5
SESSIONS = 100
SESSION_COMMANDS = ["cd /tmp", "echo $((6 * 7))", "/bin/true", "pwd"]


def reps(full, small):
    return small if QUICK else full


def noop(_chunk):
    pass


def emit(scenario, runtime, unit, samples, note=None):
    rec = {"lang": "python", "runtime": runtime, "scenario": scenario, "unit": unit, "samples": samples}
    if note:
        rec["note"] = note
    print(json.dumps(rec), flush=True)


def unavailable(scenario, rt):
    print(
        json.dumps({"lang": "python", "runtime": rt.name, "scenario": scenario, "unavailable": rt.unavailable}),
        flush=True,
    )


def latency(scenario, command, rt, warm_n):
    warm, n = warm_n
    samples, failures = [], 0
    for i in range(warm + n):
        t0 = time.perf_counter()
        code = rt.run(command, noop)
        took = (time.perf_counter() - t0) * 1e6
        failures += code != 0
        if i >= warm:
            samples.append(took)
    emit(scenario, rt.name, "us", samples, f"{failures} runs did not exit 0" if failures else None)


def sequence(rt, warm_n):
    warm, n = warm_n
    samples, failed = [], []
    # A process per command keeps no `cd`: it runs every command in the repo.
    cwd = REPO if rt.name == "subprocess" else None
    for i in range(warm + n):
        t0 = time.perf_counter()
        for command in SEQUENCE:
            if rt.run(command, noop, cwd=cwd) != 0 and command not in failed:
                failed.append(command)
        if i >= warm:
            samples.append((time.perf_counter() - t0) * 1e3)
    emit("sequence", rt.name, "ms", samples, "non-zero exit: " + "; ".join(failed) if failed else None)


def throughput(rt, warm_n):
    warm, n = warm_n
    expected = int(ENV["BENCH_THROUGHPUT_BYTES"])
    samples, short = [], False
    for i in range(warm + n):
        count = [0]

        def on_chunk(chunk, count=count):
            count[0] += len(chunk)

        t0 = time.perf_counter()
        rt.run(ENV["BENCH_THROUGHPUT_CMD"], on_chunk)
        secs = time.perf_counter() - t0
        short |= count[0] != expected
        if i >= warm:
            samples.append(count[0] / secs / 1e6)
    emit("throughput", rt.name, "MB/s", samples, "did not deliver every byte" if short else None)


def abort(rt, warm_n):
    """From the abort to the call returning, while /bin/sleep 100 runs."""
    warm, n = warm_n
    samples = []
    for i in range(warm + n):
        # A stop may replace the session: start the new one outside the measure.
        rt.run("true", noop)
        if rt.name == "subprocess":
            p = subprocess.Popen("/bin/sleep 100", shell=True)
            time.sleep(ABORT_AFTER)
            t0 = time.perf_counter()
            p.kill()
            p.wait()
            took = time.perf_counter() - t0
        elif rt.name == "pexpect":
            rt.child.sendline("/bin/sleep 100")
            time.sleep(ABORT_AFTER)
            t0 = time.perf_counter()
            rt.interrupt()
            took = time.perf_counter() - t0
        else:
            ended = []
            t = threading.Thread(target=lambda: ended.append((rt.result("/bin/sleep 100", noop), time.perf_counter())))
            t.start()
            time.sleep(ABORT_AFTER)
            t0 = time.perf_counter()
            rt.shell.abort()
            t.join()
            result, at = ended[0]
            assert result.cancelled, "abort did not cancel the run"
            took = at - t0
        if i >= warm:
            samples.append(took * 1e3)
    note = {
        "subprocess": "Popen.kill() (SIGKILL to bash only) then wait(); run() itself cannot be aborted",
        "pexpect": "sendintr() (Ctrl-C), then the prompt",
    }.get(rt.name)
    emit("abort", rt.name, "ms", samples, note)


def timeout(rt, warm_n):
    """Elapsed minus the timeout, for /bin/sleep 10 with a 500 ms timeout."""
    warm, n = warm_n
    samples, missed = [], 0
    for i in range(warm + n):
        rt.run("true", noop)
        t0 = time.perf_counter()
        if rt.name == "subprocess":
            try:
                subprocess.run("/bin/sleep 10", shell=True, timeout=TIMEOUT)
                missed += 1
            except subprocess.TimeoutExpired:
                pass
        elif rt.name == "pexpect":
            missed += rt.run("/bin/sleep 10", noop, timeout=TIMEOUT) is not None
        else:
            missed += not rt.result("/bin/sleep 10", noop, timeout=TIMEOUT).timed_out
        if i >= warm:
            samples.append((time.perf_counter() - t0 - TIMEOUT) * 1e3)
    how = {
        "subprocess": "run(timeout=) kills bash only (SIGKILL), its children survive",
        "pexpect": "expect timeout, then sendintr() (Ctrl-C) and the prompt",
    }.get(rt.name)
    emit("timeout", rt.name, "ms", samples, f"{missed} runs did not time out" if missed else how)


def concurrent(rt, warm_n):
    """100 sessions at once, one thread each, each running SESSION_COMMANDS."""
    warm, n = warm_n
    samples, failures = [], []

    def one():
        session = rt.session()
        failures.extend(c for c in SESSION_COMMANDS if session.run(c, noop) != 0)
        session.close()

    for i in range(warm + n):
        t0 = time.perf_counter()
        threads = [threading.Thread(target=one) for _ in range(SESSIONS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if i >= warm:
            samples.append((time.perf_counter() - t0) * 1e3)
    emit("concurrent", rt.name, "ms", samples, f"{len(failures)} commands did not exit 0" if failures else None)


def suite():
    runtimes = [conch_runtime(), SubprocessRuntime(), pexpect_runtime()]
    plan = [
        ("builtin", lambda rt: latency("builtin", "true", rt, reps((50, 500), (5, 30)))),
        ("external", lambda rt: latency("external", "/bin/true", rt, reps((20, 300), (5, 30)))),
        ("sequence", lambda rt: sequence(rt, reps((1, 10), (1, 3)))),
        ("throughput", lambda rt: throughput(rt, reps((0, 3), (0, 1)))),
        ("abort", lambda rt: abort(rt, reps((1, 10), (0, 3)))),
        ("timeout", lambda rt: timeout(rt, reps((0, 5), (0, 2)))),
        ("concurrent", lambda rt: concurrent(rt, reps((0, 3), (0, 1)))),
    ]
    for scenario, measure in plan:
        if ONLY and scenario not in ONLY:
            continue
        for rt in runtimes:
            if rt.unavailable:
                unavailable(scenario, rt)
            else:
                measure(rt)
    for rt in runtimes:
        if not rt.unavailable:
            rt.close()


def flood(name):
    make = {"conch": conch_runtime, "subprocess": SubprocessRuntime, "pexpect": pexpect_runtime}[name]
    rt = make()
    if rt.unavailable:
        return unavailable("flood_rss", rt)
    rt.run("true", noop)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    count = [0]

    def on_chunk(chunk):
        count[0] += len(chunk)

    rt.run(ENV["BENCH_FLOOD_CMD"], on_chunk)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    expected = int(ENV["BENCH_FLOOD_BYTES"])
    emit("flood_rss", rt.name, "MiB", [grown], None if count[0] == expected else f"delivered {count[0]} of {expected} bytes")
    rt.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["suite"]:
        suite()
    elif len(args) == 2 and args[0] == "flood":
        flood(args[1])
    else:
        sys.exit("usage: bench.py suite | flood conch|subprocess|pexpect")

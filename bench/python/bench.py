"""conch's benchmarks from Python: the conch module (with the loop builtin,
and with the eval loop), subprocess.run per command, and a persistent bash
driven by pexpect, measured in one process on the same commands. Prints one
JSON record per line (the format of bench/rust/src/record.rs);
bench/report.py makes the table.

    python bench.py suite            every scenario except the flood
    python bench.py flood RUNTIME    peak RSS growth during the flood, in this
                                     fresh process (conch|conch-eval|
                                     subprocess|pexpect)

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

from runtimes import CONCH_ENGINES, SubprocessRuntime, conch_runtime, pexpect_runtime

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


def interleave(scenario, unit, rts, warm_n, trial, notes=None, block=1):
    """Measures ``trial`` for every runtime in turns of ``block`` repetitions
    (after ``warm`` unmeasured ones each), so that a slow moment of the
    machine falls on all of them alike. Each turn starts with block/10
    unmeasured repetitions: the runtime before leaves the process in another
    state. ``trial(rt)`` returns ``(sample, problem or None)``; problems are
    counted per runtime and reported as the record's note (else ``notes``)."""
    warm, n = warm_n
    samples = {rt.name: [] for rt in rts}
    problems = {rt.name: {} for rt in rts}

    def once(rt, keep):
        sample, problem = trial(rt)
        if problem:
            problems[rt.name][problem] = problems[rt.name].get(problem, 0) + 1
        if keep:
            samples[rt.name].append(sample)

    for rt in rts:
        for _ in range(warm):
            once(rt, False)
    for done in range(0, n, block):
        for rt in rts:
            for _ in range(block // 10):
                once(rt, False)
            for _ in range(min(block, n - done)):
                once(rt, True)
    for rt in rts:
        seen = "; ".join(f"{p} ({k}×)" for p, k in problems[rt.name].items())
        emit(scenario, rt.name, unit, samples[rt.name], seen or (notes or {}).get(rt.name))


# Builtin runs per host-CPU sample: enough to measure, few enough to repeat.
CPU_RUNS = 100


def host_cpu(rt):
    """The CPU time this process (every thread of it) spends per builtin run, µs."""
    t0 = time.process_time()
    failed = sum(rt.run("true", noop) != 0 for _ in range(CPU_RUNS))
    return (time.process_time() - t0) * 1e6 / CPU_RUNS, "did not exit 0" if failed else None


def latency(command):
    def trial(rt):
        t0 = time.perf_counter()
        code = rt.run(command, noop)
        return (time.perf_counter() - t0) * 1e6, None if code == 0 else "did not exit 0"

    return trial


def sequence(rt):
    # A process per command keeps no `cd`: it runs every command in the repo.
    cwd = REPO if rt.name == "subprocess" else None
    t0 = time.perf_counter()
    failed = [c for c in SEQUENCE if rt.run(c, noop, cwd=cwd) != 0]
    took = (time.perf_counter() - t0) * 1e3
    return took, "non-zero exit: " + "; ".join(failed) if failed else None


def throughput(rt):
    count = [0]

    def on_chunk(chunk):
        count[0] += len(chunk)

    t0 = time.perf_counter()
    rt.run(ENV["BENCH_THROUGHPUT_CMD"], on_chunk)
    secs = time.perf_counter() - t0
    short = count[0] != int(ENV["BENCH_THROUGHPUT_BYTES"])
    return count[0] / secs / 1e6, "did not deliver every byte" if short else None


def abort(rt):
    """From the abort to the call returning, while /bin/sleep 100 runs."""
    # A stop may replace the session: start the new one outside the measure.
    rt.run("true", noop)
    problem = None
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
        problem = None if result.cancelled else "not reported as cancelled"
        took = at - t0
    return took * 1e3, problem


def timeout(rt):
    """Elapsed minus the timeout, for /bin/sleep 10 with a 500 ms timeout."""
    rt.run("true", noop)
    t0 = time.perf_counter()
    if rt.name == "subprocess":
        try:
            subprocess.run("/bin/sleep 10", shell=True, timeout=TIMEOUT)
            missed = True
        except subprocess.TimeoutExpired:
            missed = False
    elif rt.name == "pexpect":
        missed = rt.run("/bin/sleep 10", noop, timeout=TIMEOUT) is not None
    else:
        missed = not rt.result("/bin/sleep 10", noop, timeout=TIMEOUT).timed_out
    return (time.perf_counter() - t0 - TIMEOUT) * 1e3, "did not time out" if missed else None


def concurrent(rt):
    """100 sessions at once, one thread each, each running SESSION_COMMANDS."""
    failures = []

    def one():
        session = rt.session()
        failures.extend(c for c in SESSION_COMMANDS if session.run(c, noop) != 0)
        session.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=one) for _ in range(SESSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = (time.perf_counter() - t0) * 1e3
    return took, f"{len(failures)} commands did not exit 0" if failures else None


STOP_NOTES = {
    "abort": {
        "subprocess": "Popen.kill() (SIGKILL to bash only) then wait(); run() itself cannot be aborted",
        "pexpect": "sendintr() (Ctrl-C), then the prompt",
    },
    "timeout": {
        "subprocess": "run(timeout=) kills bash only (SIGKILL), its children survive",
        "pexpect": "expect timeout, then sendintr() (Ctrl-C) and the prompt",
    },
}


def suite():
    runtimes = [*map(conch_runtime, CONCH_ENGINES), SubprocessRuntime(), pexpect_runtime()]
    plan = [
        ("builtin", "us", reps((50, 500), (5, 30)), latency("true"), 50),
        ("external", "us", reps((20, 300), (5, 30)), latency("/bin/true"), 50),
        ("cpu", "us", reps((2, 30), (1, 5)), host_cpu, 5),
        ("sequence", "ms", reps((1, 10), (1, 3)), sequence, 1),
        ("throughput", "MB/s", reps((0, 3), (0, 1)), throughput, 1),
        ("abort", "ms", reps((1, 10), (0, 3)), abort, 1),
        ("timeout", "ms", reps((0, 5), (0, 2)), timeout, 1),
        ("concurrent", "ms", reps((0, 3), (0, 1)), concurrent, 1),
    ]
    live = [rt for rt in runtimes if not rt.unavailable]
    for scenario, unit, counts, trial, block in plan:
        if ONLY and scenario not in ONLY:
            continue
        for rt in runtimes:
            if rt.unavailable:
                unavailable(scenario, rt)
        interleave(scenario, unit, live, counts, trial, STOP_NOTES.get(scenario), block)
    for rt in live:
        rt.close()


def flood(name):
    if name in CONCH_ENGINES:
        rt = conch_runtime(name)
    else:
        rt = {"subprocess": SubprocessRuntime, "pexpect": pexpect_runtime}[name]()
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
        sys.exit("usage: bench.py suite | flood conch|conch-eval|subprocess|pexpect")

"""conch on Ray against the baseline a Ray user would write, in one run.

    .venv/bin/python bench/ray.py        (as root, or where `unshare -r -n` works)

Runs itself in a network namespace with only ``lo`` up, as the Ray tests
do (docs/ray.md): Ray binds every interface otherwise.

- Per command: the builtin ``true`` and ``/bin/true`` through a
  ``ShellActor`` (``ray.get(actor.run.remote(cmd))``, and ``ActorShell.run``,
  what a pool session's ``sh.run`` is) and through the
  baseline, a Ray actor holding a ``subprocess`` bash driven by a marker
  protocol (the command, then ``echo MARKER $?``; read up to the marker):
  wall time from the caller, medians of interleaved rounds spread over
  4 sessions of each kind (one bash's fork differs from another's). A local
  ``conch.Shell`` is the floor; ``conch.Shell.run`` and the marker round
  trip timed inside a Ray worker are each side's own share. Goal: conch
  <= 1.0x the baseline.
- Sessions created per second: N actors created at once, until each
  answers (``ShellActor``, the same without its runtime_env, the baseline;
  then both again in a job whose runtime_env is conch's), and a pool
  session recycled (a fresh bash) per second.
- A 20-command episode through the pool: ``ShellPool(4).map`` over 16
  episodes of 20 ``echo`` each, recycle included; the same on 4
  ``ShellActor`` sessions without the recycle; the baseline: 4 actors, 16
  episodes on 4 threads, no recycle (its bash keeps the last state), and
  the same with a fresh bash per episode (one more Ray call that kills
  the bash and starts another); interleaved rounds, medians.
- Memory: RSS of an idle session's worker process and its processes, and
  of a session once recycled (its spare bash counted).

Writes the tables to bench/RESULTS-ray.md.
"""

from __future__ import annotations

import os
import platform
import queue
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RAY_RUNS", "50"))
# Many short rounds, each in another order: the machine's drift (it moves
# a row by 5-20% over a minute) then hits every row alike.
ROUNDS = 24
# Sessions of each kind the per-command rows spread their rounds over.
SESSIONS = 4
WARMUP = 30
CREATE = 16
EPISODES, EPISODE_COMMANDS, POOL = 16, 20, 4
EPISODE_ROUNDS = 10


def interfaces() -> list[str]:
    with open("/proc/self/net/dev") as f:
        return sorted(line.split(":")[0].strip() for line in f.readlines()[2:])


if interfaces() != ["lo"]:
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-r", "-n"]
    os.execvp("unshare", [*unshare, "--", "bash", "-c", 'ip link set lo up && exec "$@"', "_",
                          sys.executable, *sys.argv])

# This file is bench/ray.py: its folder first on sys.path would shadow Ray.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import ray  # noqa: E402

import conch  # noqa: E402
from conch.ray import RUNTIME_ENV, ActorShell, ShellActor, ShellPool  # noqa: E402


class MarkerBash:
    """The baseline: a bash under ``subprocess``, one command at a time (a
    plain actor runs one call at a time), its end found by a marker line
    carrying the exit status."""

    MARKER = "__bench_marker_7f3a__"

    def __init__(self) -> None:
        self.bash = self._start()

    @staticmethod
    def _start() -> subprocess.Popen:
        return subprocess.Popen(
            ["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, bufsize=1,
        )

    def pid(self) -> int:
        return os.getpid()

    def restart(self) -> None:
        """A fresh bash for the next episode, as a user of this baseline
        would get one: the old bash killed (not what it started) and
        another started."""
        self.bash.kill()
        self.bash.wait()
        self.bash = self._start()

    def run(self, command: str) -> tuple[str, int]:
        self.bash.stdin.write(f"{command}\necho {self.MARKER} $?\n")
        self.bash.stdin.flush()
        out = []
        for line in self.bash.stdout:
            if line.startswith(self.MARKER):
                return "".join(out), int(line.split()[1])
            out.append(line)
        raise RuntimeError("bash ended")


BashActor = ray.remote(MarkerBash)  # what `@ray.remote class MarkerBash` makes


@ray.remote
def run_inside(command: str, runs: int) -> tuple[float, float]:
    """The medians of ``conch.Shell.run`` and of the baseline's marker round
    trip timed inside a Ray worker, nobody waiting on them: each side's own
    share of a call, where Ray runs it."""
    marker = MarkerBash()
    t: list[float] = []
    b: list[float] = []
    with conch.Shell(snapshot=None) as sh:
        timed(lambda: sh.run(command), WARMUP)
        timed(lambda: marker.run(command), WARMUP)
        for _ in range(ROUNDS):  # interleaved, as the rows from the caller
            t += timed(lambda: sh.run(command), runs)
            b += timed(lambda: marker.run(command), runs)
    marker.bash.kill()
    marker.bash.wait()
    return statistics.median(t), statistics.median(b)


def timed(call, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1e6)
    return out


def latency() -> list[str]:
    # Several sessions of each kind, each round on the next: the speed of
    # one bash's fork and exec differs from one process to another by up
    # to 5% here (the same binary, the same environment), which one
    # session per kind would put into the ratio.
    actors = [ShellActor.remote(snapshot=None) for _ in range(SESSIONS)]
    bases = [BashActor.remote() for _ in range(SESSIONS)]
    ray.get([a.info.remote() for a in actors] + [b.pid.remote() for b in bases])
    sessions = [ActorShell(a) for a in actors]
    local = conch.Shell(snapshot=None)
    rows = []
    for command in ("true", "/bin/true"):
        calls = {
            "local `conch.Shell` (floor)": lambda i: local.run(command),
            "`ShellActor`: `ray.get(a.run.remote(cmd))`": lambda i: ray.get(actors[i].run.remote(command)),
            "`ActorShell(a).run(cmd)` (a pool session's `sh.run`)": lambda i: sessions[i].run(command),
            "baseline: Ray actor + `subprocess` bash + marker": lambda i: ray.get(bases[i].run.remote(command)),
            "a Ray call and nothing else (`ray.get(a.cwd.remote())`)": lambda i: ray.get(actors[i].cwd.remote()),
        }
        times: dict[str, list[float]] = {name: [] for name in calls}
        for name, call in calls.items():
            for i in range(SESSIONS):
                timed(lambda: call(i), WARMUP)
        order = list(calls.items())
        for r in range(ROUNDS):  # interleaved, so drift hits every row alike
            order = order[1:] + order[:1]
            for name, call in order:
                times[name] += timed(lambda: call(r % SESSIONS), RUNS)
        base_median = statistics.median(times["baseline: Ray actor + `subprocess` bash + marker"])
        for name, t in times.items():
            q = statistics.quantiles(t, n=10)
            med = statistics.median(t)
            ratio = "" if name.startswith(("local", "a Ray call")) else f"{med / base_median:.2f}x"
            rows.append(f"| `{command}` | {name} | {med:,.0f} | {q[0]:,.0f}–{q[-1]:,.0f} | {ratio} |")
        inside, marker = ray.get(run_inside.remote(command, RUNS))
        rows.append(f"| `{command}` | `conch.Shell.run` timed inside a Ray worker, no caller waiting | {inside:,.0f} | | |")
        rows.append(f"| `{command}` | the baseline's marker round trip timed inside a Ray worker | {marker:,.0f} | | |")
    local.close()
    for a in actors + bases:
        ray.kill(a)
    return rows


def created_per_second(make) -> float:
    start = time.perf_counter()
    handles = [make() for _ in range(CREATE)]
    ray.get([h[1] for h in handles])
    took = time.perf_counter() - start
    for h in handles:
        ray.kill(h[0])
    time.sleep(1)  # let the killed workers go before the next row
    return CREATE / took


def new_shell_actor(**options):
    def make():
        a = ShellActor.options(num_cpus=0.05, **options).remote(snapshot=None)
        return a, a.info.remote()
    return make


def new_baseline():
    a = BashActor.options(num_cpus=0.05).remote()
    return a, a.pid.remote()


def creation() -> list[str]:
    rows = [
        f"| `ShellActor` (its `RUNTIME_ENV`: Ray's child kill off) | {created_per_second(new_shell_actor()):.1f} |",
        f"| `ShellActor` with `runtime_env={{}}` | {created_per_second(new_shell_actor(runtime_env={})):.1f} |",
        f"| baseline actor | {created_per_second(new_baseline):.1f} |",
    ]
    with ShellPool(1, snapshot=None) as pool:
        with pool.session() as sh:
            n, start = 50, time.perf_counter()
            for _ in range(n):
                sh.reset()
            rows.append(f"| pool session recycled (`reset`: a fresh bash, nothing left) | {n / (time.perf_counter() - start):.1f} |")
    return rows


def episodes() -> list[str]:
    def episode(sh, i):
        for j in range(EPISODE_COMMANDS):
            sh.run(f"echo {i}.{j}")

    def one_at_a_time(sessions, body):
        """An episode on whichever of ``sessions`` is free, one episode at a
        time per session, as the pool hands them out."""
        free: queue.Queue = queue.Queue()
        for session in sessions:
            free.put(session)

        def run(i):
            session = free.get()
            try:
                body(session, i)
            finally:
                free.put(session)
        return run

    def base_body(a, i):
        for j in range(EPISODE_COMMANDS):
            ray.get(a.run.remote(f"echo {i}.{j}"))

    def fresh_body(a, i):
        base_body(a, i)
        ray.get(a.restart.remote())

    actors = [BashActor.remote() for _ in range(POOL)]
    fresh = [BashActor.remote() for _ in range(POOL)]
    ray.get([a.pid.remote() for a in actors + fresh])
    base_episode = one_at_a_time(actors, base_body)
    fresh_episode = one_at_a_time(fresh, fresh_body)
    # The same sessions without the recycle, handed out as the baseline's
    # are: what the recycle costs, apart from conch's work per command.
    kept = [ActorShell(ShellActor.options(num_cpus=0.05).remote(snapshot=None)) for _ in range(POOL)]
    for sh in kept:
        sh.run("true")
    kept_episode = one_at_a_time(kept, episode)

    walls: dict[str, list[float]] = {"conch": [], "kept": [], "base": [], "fresh": []}
    with ShellPool(POOL, snapshot=None) as pool, ThreadPoolExecutor(POOL) as ex:
        pool.map(episode, range(POOL))  # warm: each session recycled once
        list(ex.map(kept_episode, range(POOL)))
        list(ex.map(base_episode, range(POOL)))
        list(ex.map(fresh_episode, range(POOL)))
        for r in range(EPISODE_ROUNDS):  # interleaved, each round in another order
            sides = [("conch", lambda: pool.map(episode, range(EPISODES))),
                     ("kept", lambda: list(ex.map(kept_episode, range(EPISODES)))),
                     ("base", lambda: list(ex.map(base_episode, range(EPISODES)))),
                     ("fresh", lambda: list(ex.map(fresh_episode, range(EPISODES))))]
            for name, run in sides[r % 4:] + sides[:r % 4]:
                start = time.perf_counter()
                run()
                walls[name].append(time.perf_counter() - start)
    for a in actors + fresh + [sh.actor for sh in kept]:
        ray.kill(a)
    n = EPISODES * EPISODE_COMMANDS
    wall = {k: statistics.median(v) for k, v in walls.items()}

    def row(name: str, side: str) -> str:
        w = wall[side]
        return (f"| {name} | {w:.3f} s | {EPISODES / w:.1f} | {w / n * 1e3:.2f} ms "
                f"| {w / wall['base']:.2f}x | {w / wall['fresh']:.2f}x |")
    return [
        row(f"`ShellPool({POOL}).map`, recycle included", "conch"),
        row(f"the same without the recycle: {POOL} `ShellActor`s, {POOL} threads", "kept"),
        row(f"baseline: {POOL} actors, {POOL} threads, no recycle", "base"),
        row(f"baseline, a fresh bash per episode (`restart`: one Ray call, the bash killed and "
            f"started)", "fresh"),
    ]


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(p) for p in f.read().split()]
    return out


def memory() -> list[str]:
    sh = ActorShell(ShellActor.remote(snapshot=None))
    sh.run("true")
    base = BashActor.remote()
    base_pid = ray.get(base.pid.remote())
    ray.get(base.run.remote("true"))
    rows = []

    def row(name: str, pid: int) -> None:
        kids = children(pid)
        rows.append(f"| {name} | {rss_kib(pid):,} KiB | {sum(rss_kib(k) for k in kids):,} KiB ({len(kids)} processes) |")

    row("`ShellActor`", sh.pid)
    sh.reset()
    sh.run("true")
    row("`ShellActor` once recycled (its bash, the guard, the spare)", sh.pid)
    row("baseline actor", base_pid)
    ray.kill(sh.actor)
    ray.kill(base)
    return rows


READING = (
    "Reading: every row but the floor pays the Ray call (the `a Ray call` row). "
    "`ray.get(a.run.remote(cmd))` returns a `BashResult`, which Ray pickles: about 90 µs more "
    "per call than the same fields as a dict, which Ray sends as msgpack; `ActorShell.run` "
    "asks for the dict (`ShellActor._run`) and rebuilds the `BashResult` in the caller. "
    "The actor's runs have a thread of their own (a Ray concurrency group of one; abort, "
    "cancel and the other calls have theirs): from a pool of 32, each call reached another "
    "thread, 2-3% of a call here. For the builtin, conch's run inside the worker is as quick "
    "as the marker's round trip or quicker. For `/bin/true` it costs more, locally too "
    "(40-70 µs a run on this machine), in two places. In bash's fork and exec of the command: "
    "timed inside bash (`$EPOCHREALTIME` around 100 `/bin/true`, 8 bashes of each kind on a "
    "quiet machine: one bash's fork differs from another's by up to 5% on a busy one), a "
    "plain bash takes 690 µs, conch's 718 (4.1% longer). The environment conch gives "
    "commands (docs/behaviour.md's non-interactive defaults, 36 more variables here) is 20 µs "
    "of it (a plain bash given it: 710; every exec copies the variables and the new program's "
    "start-up reads them), the loop builtin's library loaded in bash 11 µs (701; the same "
    "library linked into two mappings instead of five: 698); a session of its own and "
    "descriptors above 200 changed nothing measurable. And in the host: a run of "
    "`/bin/true` costs conch's host about 50 µs of CPU against 16 for the builtin `true`, "
    "the marker's loop 25 against 17. It is the wait, not the fork: a builtin that waits "
    "0.8 ms without starting anything (`read -t` on a FIFO) costs conch's host 62-70 µs, "
    "the marker's 27-29; conch's path is longer than a marker's read, and after a wait every "
    "step of it takes about twice as long (`perf`). On this machine "
    "the worker (Ray runs workers at nice 15) shares 2 CPUs with the caller, the raylet and "
    "the GCS, which stretches every step; a ratio differs by 5-10% from one run of this file "
    "to the next."
)


def creation_in_a_job() -> list[str]:
    """Both actors created in a job whose own runtime_env carries
    ``RUNTIME_ENV``: the actor's is the job's, and Ray's pooled workers
    serve it."""
    ray.init(num_cpus=8, object_store_memory=200 << 20, include_dashboard=False,
             log_to_driver=False, configure_logging=False, runtime_env=RUNTIME_ENV)
    try:
        created_per_second(new_baseline)  # the job's first workers
        return [
            f"| `ShellActor`, in a job whose `runtime_env` is `conch.ray.RUNTIME_ENV` | {created_per_second(new_shell_actor()):.1f} |",
            f"| baseline actor, in that job | {created_per_second(new_baseline):.1f} |",
        ]
    finally:
        ray.shutdown()


EPISODE_READING = (
    "Reading: a recycle is one Ray call to the actor (`ActorShell.reset`), which resets its shell: "
    "the episode's bash and everything it ran are killed, and the spare that bash forked before "
    "the episode's first command takes its place (a fork made ahead of time; docs/behaviour.md, "
    "\"Reset\"). The first baseline recycles nothing: its next episode sees the last one's state. "
    "The second gives each episode a fresh bash as its user would: one Ray call per episode that "
    "kills the bash (not what it started: a background job outlives it) and starts another. "
    "The 4 threads keep the 2 CPUs busy, so the row measures CPU per episode: the recycle's Ray "
    "call and reset, and conch's work per command. The row without the recycle is conch's work per "
    "command alone."
)


def main() -> None:
    ray.init(num_cpus=8, object_store_memory=200 << 20, include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    lat, made, eps, mem = latency(), creation(), episodes(), memory()
    ray.shutdown()
    made += creation_in_a_job()
    cpus = os.cpu_count()
    text = "\n".join([
        "# conch on Ray (`bench/ray.py`)",
        "",
        f"Python {platform.python_version()}, Ray {ray.__version__}, {cpus} CPUs, a local Ray "
        "in a network namespace with only `lo`; "
        f"{RUNS * ROUNDS} runs per row ({ROUNDS} interleaved rounds, each on the next of {SESSIONS} sessions "
        "of its kind), wall time from the caller, µs.",
        "",
        "| Command | Session | median | p10–p90 | / baseline |",
        "|---|---|---|---|---|",
        *lat,
        "",
        READING,
        "",
        f"## Sessions created per second ({CREATE} at once, until each answers)",
        "",
        "| What | per second |",
        "|---|---|",
        *made,
        "",
        f"## A {EPISODE_COMMANDS}-command episode through the pool ({EPISODES} episodes of `echo`, "
        f"medians of {EPISODE_ROUNDS} interleaved rounds)",
        "",
        "| Pool | wall | episodes/s | per command | / baseline, no recycle | / baseline, fresh bash |",
        "|---|---|---|---|---|---|",
        *eps,
        "",
        EPISODE_READING,
        "",
        "## Memory of an idle session",
        "",
        "| Session | worker RSS | its children's RSS |",
        "|---|---|---|",
        *mem,
        "",
    ])
    (ROOT / "bench" / "RESULTS-ray.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

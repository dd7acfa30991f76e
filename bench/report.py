"""Turns the JSON records of every harness into ONE markdown table (medians,
min-max, ratios conch / baseline), checks the targets, and writes it with a
description of the machine. Called by bench/run.sh.

    python3 report.py --results work/results.jsonl --sink work/sink.txt \
        --load "0.50 0.40 0.30" --out RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
from pathlib import Path

BENCH = Path(__file__).resolve().parent

SCENARIOS = {
    "builtin": "Run latency, builtin `true` (µs)",
    "external": "Run latency, `/bin/true` (µs)",
    "cpu": "Host CPU time per builtin `true` run (µs, the host process only)",
    "sequence": "20-command agent sequence (ms)",
    "throughput": "1 GiB through the chunk callback (MB/s, higher is better)",
    "sink": "1 GiB through `OutputSink`, in process (GB/s, higher is better)",
    "flood_rss": "Peak RSS growth of the host, 2 GiB flood (MiB)",
    "abort": "Abort latency, `/bin/sleep 100` (ms)",
    "timeout": "Timeout overshoot, `/bin/sleep 10` at 500 ms (ms)",
    "concurrent": "100 concurrent sessions × 4 commands (ms, total)",
}
LANGS = {"rust": "Rust", "node": "Node", "python": "Python"}
# conch with the eval loop (`engine: "eval"`), the session loop before the
# loop builtin: a row of its own under every scenario, against the default.
EVAL = "conch, eval loop (`engine: \"eval\"`)"
BASELINES = {
    "rust": {"conch-eval": EVAL, "std": "`std::process::Command` `bash -c`"},
    "node": {
        "conch-eval": EVAL,
        "pi-natives": "`@oh-my-pi/pi-natives` `Shell`",
        "spawn": "`child_process.spawn` `bash -c`",
    },
    "python": {
        "conch-eval": EVAL,
        "pexpect": "pexpect 4.9.0, persistent bash",
        "subprocess": "`subprocess.run(shell=True)`",
    },
}
# How the targets name a runtime.
SHORT = {"conch-eval": "conch (eval loop)"}
PI = ("node", "pi-natives")
# (conch from, scenario, baseline (lang, runtime) or None for an absolute
# bound in the scenario's unit, bound, "le" | "ge"). An idle machine:
TARGETS = [
    ("node", "builtin", PI, 0.6, "le"),
    ("node", "external", PI, 0.5, "le"),
    ("node", "external", ("node", "spawn"), 0.3, "le"),
    ("node", "throughput", PI, 2.5, "ge"),
    ("node", "timeout", PI, 0.25, "le"),
    ("node", "cpu", PI, 1.0, "le"),
    ("node", "cpu", ("node", "conch-eval"), 1.0, "le"),
    ("python", "cpu", ("python", "conch-eval"), 1.0, "le"),
]
# Every core kept busy by a CPU hog (BENCH_LOADED=1): a host running agents
# is a busy machine, and a round trip must not wait out scheduler time slices.
LOADED_TARGETS = [
    ("node", "builtin", None, 1000, "le"),
    ("python", "builtin", None, 1000, "le"),
    ("node", "external", PI, 1.0, "le"),
    ("python", "external", PI, 1.0, "le"),
    ("node", "cpu", PI, 1.0, "le"),
    ("python", "cpu", PI, 1.0, "le"),
    ("node", "cpu", ("node", "conch-eval"), 1.0, "le"),
    ("python", "cpu", ("python", "conch-eval"), 1.0, "le"),
]

# What no runtime can beat on this machine, measured by the Rust harness in the same run:
# (scenario, reference runtime, what it is, what it bounds).
LIMITS = [
    ("external", "bash-loop", "`/bin/true` run by bash itself, per command of a `for` loop in one `bash -c`",
     "the floor for a runtime that hands its commands to bash"),
    ("throughput", "raw-pipe", "the throughput command's output read and dropped through a 1 MiB pipe, nothing else done",
     "the ceiling for any runtime reading that command"),
]


def fmt(x: float) -> str:
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


class Cell:
    """A median with its min-max, or the reason there is none."""

    def __init__(self, rec: dict | None):
        self.rec = rec
        self.samples = rec.get("samples") if rec else None
        self.median = statistics.median(self.samples) if self.samples else None

    def text(self) -> str:
        if self.rec is None:
            return "no result"
        if self.median is None:
            return self.rec.get("unavailable", "no samples")
        s = self.samples
        if len(s) == 1:
            return fmt(s[0])
        return f"{fmt(self.median)} ({fmt(min(s))}–{fmt(max(s))})"


def load(path: Path) -> dict:
    records = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        records[(rec["lang"], rec["runtime"], rec["scenario"])] = rec
    return records


def sink_records(path: Path, records: dict) -> None:
    """The sink benchmark prints `sink, ASCII   1.23 GB/s ...` lines."""
    if ("rust", "conch", "sink") in records or not path.exists():
        return
    found = {}
    for line in path.read_text().splitlines():
        m = re.match(r"(sink(?: \+ artifact file)?), (ASCII|mixed)\s+([\d.]+) GB/s", line)
        if m:
            found[f"{m.group(1)}, {m.group(2)}"] = float(m.group(3))
    if found:
        ascii_ = found.get("sink, ASCII")
        records[("rust", "conch", "sink")] = {
            "lang": "rust",
            "runtime": "conch",
            "scenario": "sink",
            "unit": "GB/s",
            "samples": [ascii_] if ascii_ else [],
            "note": "; ".join(f"{k}: {v:.2f} GB/s" for k, v in found.items()),
        }


def table(records: dict) -> tuple[str, list[str]]:
    rows = [
        "| Scenario | From | conch (loop builtin): median (min–max) | Baseline | baseline: median (min–max) | conch / baseline |",
        "|---|---|---|---|---|---|",
    ]
    notes = []

    def note_of(rec, who):
        if rec and rec.get("note"):
            notes.append(f"{who}: {rec['note']}")
            return f" [{len(notes)}]"
        return ""

    for scenario, title in SCENARIOS.items():
        # Scenarios left out of the run (BENCH_ONLY) have no row.
        if not any(key[2] == scenario for key in records):
            continue
        for lang, lang_name in LANGS.items():
            # A scenario not measured from this language has no row.
            if not any(key[0] == lang and key[2] == scenario for key in records):
                continue
            conch_rec = records.get((lang, "conch", scenario))
            baselines = BASELINES[lang] if scenario != "sink" else {}
            if scenario == "sink" and lang != "rust":
                continue
            conch = Cell(conch_rec)
            conch_text = conch.text() + note_of(conch_rec, f"{lang_name} conch, {scenario}")
            if not baselines:
                rows.append(f"| {title} | {lang_name} | {conch_text} | — | — | — |")
                continue
            for runtime, label in baselines.items():
                base_rec = records.get((lang, runtime, scenario))
                base = Cell(base_rec)
                base_text = base.text() + note_of(base_rec, f"{lang_name} {runtime}, {scenario}")
                ratio = "—"
                if conch.median is not None and base.median:
                    ratio = f"{conch.median / base.median:.2f}×"
                    # Growth under 2 MiB is noise of the allocator, not buffering.
                    if scenario == "flood_rss" and max(conch.median, base.median) < 2:
                        ratio = "both < 2 MiB"
                rows.append(f"| {title} | {lang_name} | {conch_text} | {label} | {base_text} | {ratio} |")
    return "\n".join(rows), notes


def unit_of(scenario: str) -> str:
    return SCENARIOS[scenario].split("(")[1].split(",")[0].rstrip(")")


def targets(records: dict, loaded: bool) -> list[str]:
    out = []
    for lang, scenario, base_key, bound, sense in LOADED_TARGETS if loaded else TARGETS:
        sign = "≤" if sense == "le" else "≥"
        conch = Cell(records.get((lang, "conch", scenario)))
        if base_key is None:
            what = f"{SCENARIOS[scenario].split(' (')[0]} from {LANGS[lang]}: conch median {sign} {fmt(bound)} {unit_of(scenario)}"
            base_median, missing = 1.0, None if conch.median is not None else conch.text()
        else:
            base_lang, runtime = base_key
            where = "" if base_lang == lang else f" (from {LANGS[base_lang]})"
            what = f"{SCENARIOS[scenario].split(' (')[0]} from {LANGS[lang]}: conch / {SHORT.get(runtime, runtime)}{where} {sign} {bound}"
            base = Cell(records.get((base_lang, runtime, scenario)))
            base_median = base.median
            missing = conch.text() if conch.median is None else None if base.median else base.text()
        if missing:
            out.append(f"- {what}: not measured ({missing})")
            continue
        value = conch.median / base_median
        holds = value <= bound if sense == "le" else value >= bound
        shown = f"{value:.2f}×" if base_key else f"{fmt(value)} {unit_of(scenario)}"
        out.append(f"- {what}: {'holds' if holds else '**does not hold**'} ({shown})")
    return out


def limits(records: dict) -> list[str]:
    """Each reference, conch from Node against it, and what each target asks for in its units."""
    out = []
    for scenario, runtime, what, bounds in LIMITS:
        unit = unit_of(scenario)
        ref = Cell(records.get(("rust", runtime, scenario)))
        if ref.median is None:
            out.append(f"- {what}: not measured ({ref.text()})")
            continue
        line = f"- {what}: {ref.text()} {unit}, {bounds}"
        conch = Cell(records.get(("node", "conch", scenario)))
        if conch.median is not None:
            line += f"; conch from Node: {fmt(conch.median)} {unit}"
        for lang, t_scenario, base_key, bound, sense in TARGETS:
            if lang != "node" or base_key is None:
                continue
            baseline = base_key[1]
            base = Cell(records.get(base_key + (t_scenario,)))
            if t_scenario == scenario and base.median:
                sign = "≤" if sense == "le" else "≥"
                line += f"; conch / {baseline} {sign} {bound} asks for {sign} {fmt(bound * base.median)} {unit}"
        out.append(line)
    return out


def failures(records: dict) -> list[str]:
    """The harnesses that failed (bench/run.sh records them as runtime "all", scenario "suite")."""
    return [
        f"- **The {LANGS.get(lang, lang)} harness failed**: {rec['unavailable']}; its rows are missing"
        for (lang, runtime, scenario), rec in records.items()
        if runtime == "all" and rec.get("unavailable")
    ]


def command(*args: str) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "not found"


def package_version(path: Path) -> str:
    try:
        return json.loads(path.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "not installed"


def machine(load_at_start: str, hogs: int) -> list[str]:
    cpu = "unknown"
    for line in command("lscpu").splitlines():
        if line.startswith("Model name:"):
            cpu = line.split(":", 1)[1].strip()
    venv_python = BENCH / ".venv" / "bin" / "python"
    pexpect = command(str(venv_python), "-c", "import pexpect; print(pexpect.__version__)")
    modules = BENCH / "node_modules" / "@oh-my-pi"
    return [
        f"- CPU: {cpu}, {os.cpu_count()} cores; kernel {platform.release()}",
        f"- Load average at start: {load_at_start}"
        + (f"; {hogs} CPU hogs (`yes > /dev/null`, one per core) ran through every measurement" if hogs else ""),
        f"- node {command('node', '--version')}, {command('python3', '--version')}, "
        f"bash {command('bash', '-c', 'echo $BASH_VERSION')}, {command('rustc', '--version')}",
        f"- Baselines: pexpect {pexpect}; pi-natives `Shell` from "
        f"@oh-my-pi/pi-natives-linux-x64 {package_version(modules / 'pi-natives-linux-x64' / 'package.json')}",
        f"- conch: commit {command('git', '-C', str(BENCH), 'rev-parse', '--short', 'HEAD')}"
        + (f"; Node: {os.environ['BENCH_NODE_SOURCE']}" if os.environ.get("BENCH_NODE_SOURCE") else "")
        + (f"; Python: {os.environ['BENCH_PY_SOURCE']}" if os.environ.get("BENCH_PY_SOURCE") else ""),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--sink", type=Path, required=True)
    ap.add_argument("--load", default="unknown")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--hogs", type=int, default=0, help="CPU hogs that ran beside the measurements")
    args = ap.parse_args()

    records = load(args.results)
    sink_records(args.sink, records)
    body, notes = table(records)
    failed = failures(records)
    text = "\n".join(
        [
            "# conch benchmarks" + (", on a loaded machine" if args.hogs else ""),
            "",
            "Made by `./bench/run.sh` (see `bench/README-performance.md`). Medians over the repetitions,",
            "min–max in parentheses; ratio = conch median / baseline median (for time and memory lower is",
            "better, for throughput higher is better). Every runtime runs the same commands in the same run.",
            "conch runs its default session loop, the loop builtin; the eval loop is a runtime of its own.",
            "",
            *([*failed, ""] if failed else []),
            body,
            "",
            *(f"{i}. {n}" for i, n in enumerate(notes, 1)),
            "",
            "## Targets",
            "",
            *targets(records, loaded=args.hogs > 0),
            "",
            "## Limits of this machine",
            "",
            *limits(records),
            "",
            "## Machine",
            "",
            *machine(args.load, args.hogs),
            "",
        ]
    )
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()

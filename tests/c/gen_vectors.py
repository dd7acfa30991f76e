#!/usr/bin/env python3
"""Turns the shared vectors (tests/vectors/*.json) into a C header of case
tables for the C tests, so the C suite replays exactly the cases the Rust,
Python and Node suites replay, without a JSON parser in C.

Usage: gen_vectors.py VECTORS_DIR OUT_DIR

Writes OUT_DIR/vectors_<name>.h for each file the C API can replay; the case
structs are declared in tests/c/cases.h. Every file of VECTORS_DIR must be
either replayed (TABLES) or listed with the reason the C API cannot replay
it (NOT_IN_C_API), and every file named there must exist: a missing or
unknown file is an error, never a silently smaller suite.

Every string becomes a C literal made of octal escapes where needed (never
hex escapes: they do not stop after two digits), with its byte length, so
inputs holding NUL or invalid UTF-8 arrive intact.
"""

import json
import os
import subprocess
import sys


def c_bytes(data: bytes) -> str:
    out = ['"']
    for b in data:
        ch = chr(b)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F and ch != "?":  # '?' avoids trigraphs
            out.append(ch)
        else:
            out.append("\\%03o" % b)
    out.append('"')
    return "".join(out)


def c_str(text):
    """A C string literal for `text` (str or bytes), or NULL for None."""
    if text is None:
        return "NULL"
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return c_bytes(data)


def c_strings(out, name, items):
    """Declares `name`, the strings `items` ended by NULL, in `out`; returns
    `name`, or NULL for no list (`items` None)."""
    if items is None:
        return "NULL"
    out.append("static const char *const %s[] = {%s};"
               % (name, "".join(c_str(x) + ", " for x in items) + "NULL"))
    return name


def c_len(text) -> str:
    if text is None:
        return "0"
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return str(len(data))


def c_int(n) -> str:
    return "-1" if n is None else str(int(n))


def system_sentence():
    """What tool_definition.json's ``{system}`` stands for, read here as a
    user would: ``bash`` on ``PATH`` and ``uname`` (the C tests run on the
    machine that generates their vectors)."""
    version = subprocess.run(
        ["bash", "-c", 'printf %s "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}"'],
        capture_output=True, text=True, check=True).stdout
    uname = os.uname()
    system = "macOS" if uname.sysname == "Darwin" else uname.sysname
    return f"The shell is bash {version} on {system} {uname.release} ({uname.machine})."


def load(vectors_dir, name):
    with open(os.path.join(vectors_dir, name + ".json"), encoding="utf-8") as f:
        text = f.read()
    if name == "tool_definition":
        text = text.replace("{system}", json.dumps(system_sentence())[1:-1])
    cases = json.loads(text)
    if not isinstance(cases, list) or not cases:
        sys.exit(f"{name}.json: expected a non-empty array of cases")
    return cases


def normalize(cases, out):
    out.append("static const struct normalize_case NORMALIZE_CASES[] = {")
    for c in cases:
        fn = c["fn"]
        if fn == "normalize":
            e = c["expect"]
            out.append(
                "  {%s, NORMALIZE, %s, %s, %s, %s, -1, -1},"
                % (c_str(c["name"]), c_str(c["command"]), c_str(e["command"]),
                   c_int(e["head_lines"]), c_int(e["tail_lines"]))
            )
        elif fn == "apply_head_tail":
            out.append(
                "  {%s, APPLY_HEAD_TAIL, %s, %s, -1, -1, %s, %s},"
                % (c_str(c["name"]), c_str(c["text"]), c_str(c["expect"]),
                   c_int(c["head"]), c_int(c["tail"]))
            )
        else:
            sys.exit(f"normalize.json: unknown fn {fn!r} in {c['name']!r}")
    out.append("};")


def intercept(cases, out):
    for i, c in enumerate(cases):
        names = ", ".join(c_str(t) for t in c["tool_names"])
        out.append(f"static const char *const INTERCEPT_TOOLS_{i}[] = {{{names}{', ' if names else ''}NULL}};")
        errors = c.get("rule_errors") or []
        out.append(f"static const int INTERCEPT_RULE_ERRORS_{i}[] = {{{', '.join(map(str, errors + [-1]))}}};")
    out.append("static const struct intercept_case INTERCEPT_CASES[] = {")
    for i, c in enumerate(cases):
        rules = None if c["rules"] is None else json.dumps(c["rules"])
        errors = c.get("rule_errors") or []
        # The C API refuses a rule list with an invalid rule, so the case's
        # expectation (what the valid rules do) is checked with them alone.
        valid = None
        if errors:
            valid = json.dumps([r for k, r in enumerate(c["rules"]) if k not in errors])
        e = c["expect"]
        out.append(
            "  {%s, %s, INTERCEPT_TOOLS_%d, %s, INTERCEPT_RULE_ERRORS_%d, %s, %s, %s},"
            % (c_str(c["name"]), c_str(c["command"]), i, c_str(rules), i, c_str(valid),
               c_str(e and e["message"]), c_str(e and e["suggested_tool"]))
        )
    out.append("};")


def sanitize(cases, out):
    out.append("static const struct sanitize_case SANITIZE_CASES[] = {")
    for c in cases:
        if "input" in c:
            data = c["input"].encode("utf-8")
        else:
            data = bytes(c["input_bytes"])
        # The text form applies when the input is a string C can hold.
        text_ok = "input" in c and b"\0" not in data
        out.append(
            "  {%s, %s, %d, %s, %s},"
            % (c_str(c["name"]), c_bytes(data), len(data),
               "true" if text_ok else "false", c_str(c["expect"]))
        )
    out.append("};")


def artifact(cases, out):
    for i, c in enumerate(cases):
        files = c["files"] or {}
        entries = "".join(
            "{%s, %s, %s}, " % (c_str(n), c_str(t), c_len(t)) for n, t in files.items()
        )
        out.append(f"static const struct artifact_file ARTIFACT_FILES_{i}[] = {{{entries}{{NULL, NULL, 0}}}};")
        kinds = ", ".join(c_str(k) for k in c.get("kinds", []))
        out.append(f"static const char *const ARTIFACT_KINDS_{i}[] = {{{kinds}{', ' if kinds else ''}NULL}};")
        expect = c.get("expect")
        listed = expect if isinstance(expect, list) else []
        names = ", ".join(c_str(n) for n in listed)
        out.append(f"static const char *const ARTIFACT_EXPECT_FILES_{i}[] = {{{names}{', ' if names else ''}NULL}};")
    out.append("static const struct artifact_case ARTIFACT_CASES[] = {")
    for i, c in enumerate(cases):
        op = {"allocate": "ALLOCATE", "resolve": "RESOLVE", "read": "READ"}[c["op"]]
        err = c.get("expect_error")
        kind = {"invalid_argument": "CONCH_ERR_INVALID_ARG", "not_found": "CONCH_ERR_NOT_FOUND",
                "io": "CONCH_ERR_IO", None: "CONCH_OK"}[err and err["kind"]]
        expect = c.get("expect")
        out.append(
            "  {%s, %s, ARTIFACT_FILES_%d, %s, ARTIFACT_KINDS_%d, %s, %s, %s, %s, ARTIFACT_EXPECT_FILES_%d, %s, %s, %s},"
            % (c_str(c["name"]), "true" if c["files"] is not None else "false", i, op, i,
               c_str(c.get("url")), c_str(c.get("id")), c_int(c.get("offset", 0)), c_int(c.get("limit")), i,
               c_str(expect if isinstance(expect, str) else None), kind, c_str(err and err["message"]))
        )
    out.append("};")


def keys(cases, out):
    out.append("static const struct key_case KEY_CASES[] = {")
    for c in cases:
        is_key = "key" in c
        data = (c["key"] if is_key else c["input"]).encode("utf-8")
        expect = c.get("expect")
        out.append(
            "  {%s, %s, %s, %d, %s, %s, %s, %s},"
            % (c_str(c["name"]), "true" if is_key else "false", c_bytes(data), len(data),
               "true" if c["app_cursor"] else "false", c_str(expect), c_len(expect),
               c_str(c.get("error_starts_with")))
        )
    out.append("};")


def tool(cases, out):
    kinds = {"ok": "CONCH_OK", "failed": "CONCH_ERR_TOOL", "aborted": "CONCH_ERR_ABORTED",
             "blocked": "CONCH_ERR_BLOCKED"}
    for i, c in enumerate(cases):
        names = (c.get("config") or {}).get("tool_names")
        if names is not None:
            listed = ", ".join(c_str(t) for t in names)
            out.append(f"static const char *const TOOL_NAMES_{i}[] = {{{listed}{', ' if listed else ''}NULL}};")
    out.append("static const struct tool_case TOOL_CASES[] = {")
    for i, c in enumerate(cases):
        config = c.get("config") or {}
        e = c["expect"]
        rules = config.get("rules")
        truncated = e.get("truncated")
        out.append(
            "  {%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s},"
            % (c_str(c["name"]), "true" if config.get("interceptor") else "false",
               f"TOOL_NAMES_{i}" if config.get("tool_names") is not None else "NULL",
               c_str(None if rules is None else json.dumps(rules)),
               "true" if config.get("artifacts") else "false", c_str(json.dumps(c["args"])),
               kinds[e["kind"]], c_str(e.get("text")), c_str(e.get("text_starts_with")),
               c_str(e.get("text_ends_with")), "-1" if truncated is None else str(int(truncated)),
               c_str(e.get("suggested_tool")))
        )
    out.append("};")


# tool_definition.json config keys with no conch_tool_options field: a case
# using one is left to the faces that have it (README's table says so).
DEFINITION_NOT_IN_C = {"auto_background_after_ms"}
DEFINITION_IN_C = {"interceptor", "tool_names", "rules", "name", "job_tool_name",
                   "virtual_terminal"}


def tool_definition(cases, out):
    replayed = []
    for c in cases:
        keys = set(c["config"])
        unknown = keys - DEFINITION_IN_C - DEFINITION_NOT_IN_C
        if unknown:
            sys.exit(f"tool_definition.json: {c['name']}: unknown config keys {sorted(unknown)}")
        if not keys & DEFINITION_NOT_IN_C:
            replayed.append(c)
    if not replayed:
        sys.exit("tool_definition.json: no case the C API can replay")
    for i, c in enumerate(replayed):
        names = c["config"].get("tool_names")
        if names is not None:
            listed = ", ".join(c_str(t) for t in names)
            out.append(f"static const char *const DEFINITION_TOOL_NAMES_{i}[] = {{{listed}{', ' if listed else ''}NULL}};")
    out.append("static const struct tool_definition_case TOOL_DEFINITION_CASES[] = {")
    for i, c in enumerate(replayed):
        config = c["config"]
        rules = config.get("rules")
        expect = json.dumps(c["expect"]["bash"], sort_keys=True, separators=(",", ":"),
                            ensure_ascii=False)
        out.append(
            "  {%s, %s, %s, %s, %s, %s, %s, %s},"
            % (c_str(c["name"]), "true" if config.get("interceptor") else "false",
               f"DEFINITION_TOOL_NAMES_{i}" if config.get("tool_names") is not None else "NULL",
               c_str(None if rules is None else json.dumps(rules)),
               c_str(config.get("name")), c_str(config.get("job_tool_name")),
               "true" if config.get("virtual_terminal") else "false", c_str(expect))
        )
    out.append("};")


def strict(where, obj, allowed, file="jobs.json"):
    """Fails on a key the C replay would not compare: a field added to a
    vector must be replayed here too, never skipped silently."""
    if not isinstance(obj, dict):
        sys.exit(f"{file}: {where}: expected an object, got {obj!r}")
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        sys.exit(f"{file}: {where}: keys the C suite does not replay: {', '.join(unknown)}")


def jobs(cases, out):
    for i, c in enumerate(cases):
        strict(c["name"], c, ["name", "runs", "polls", "jobs"])
        runs = "".join(
            "{%s, %s}, " % (c_str(r["command"]), c_str(r["output"])) for r in c["runs"]
        )
        out.append(f"static const struct job_run JOB_RUNS_{i}[] = {{{runs}{{NULL, NULL}}}};")
        polls = []
        for k, p in enumerate(c["polls"]):
            strict(f"{c['name']}: poll {k}", p, ["job", "options", "expect", "error"])
            o = p.get("options") or {}
            strict(f"{c['name']}: poll {k} options", o, ["wait_ms", "until", "max_bytes", "cursor"])
            e = p.get("expect") or {}
            strict(f"{c['name']}: poll {k} expect", e,
                   ["output", "status", "exit_code", "cursor", "next_cursor", "total_bytes",
                    "omitted_bytes"])
            if "exit_code" not in e:
                exit_kind, exit_code = "EXIT_UNCHECKED", 0
            elif e["exit_code"] is None:
                exit_kind, exit_code = "EXIT_NONE", 0
            else:
                exit_kind, exit_code = "EXIT_IS", int(e["exit_code"])
            polls.append(
                "{%s, %s, %d, %s, %d, %s, %s, %s, %s, %s, %d, %s, %s, %s, %s}, "
                % (c_str(f"{c['name']}: poll {k}"), c_int(p.get("job")), o.get("wait_ms", 0),
                   c_str(o.get("until")), o.get("max_bytes", 0), c_int(o.get("cursor")),
                   c_str(p.get("error")), c_str(e.get("output")), c_str(e.get("status")),
                   exit_kind, exit_code, c_int(e.get("cursor")), c_int(e.get("next_cursor")),
                   c_int(e.get("total_bytes")), c_int(e.get("omitted_bytes")))
            )
        out.append(f"static const struct job_poll_case JOB_POLLS_{i}[] = {{{''.join(polls)}{{0}}}};")
        listed = []
        for k, j in enumerate(c.get("jobs") or []):
            strict(f"{c['name']}: job {k}", j, ["command", "status", "total_bytes"])
            listed.append(
                "{%s, %s, %s}, " % (c_str(j["command"]), c_str(j.get("status")),
                                   c_int(j.get("total_bytes")))
            )
        out.append(f"static const struct job_listed JOB_LISTED_{i}[] = {{{''.join(listed)}{{NULL, NULL, -1}}}};")
    out.append("static const struct jobs_case JOBS_CASES[] = {")
    for i, c in enumerate(cases):
        out.append(
            "  {%s, JOB_RUNS_%d, JOB_POLLS_%d, %s, JOB_LISTED_%d},"
            % (c_str(c["name"]), i, i, "true" if "jobs" in c else "false", i)
        )
    out.append("};")


# job_steps.json: what each op takes (besides op, job, expect, error), and
# the fields of its expectation the C replay compares.
STEP_KEYS = {
    "run": ["command", "options"],
    "start": ["command", "options"],
    "poll": ["options"],
    "write": ["data"],
    "close_stdin": [],
    "key": ["key"],
    "signal": ["signal"],
    "kill": [],
    "jobs": [],
    "wait_any": ["jobs", "timeout_ms"],
}
STEP_OPTIONS = {
    "run": ["yield_after_ms"],
    "start": ["cwd", "env", "timeout_ms", "stdin", "pty"],
    "poll": ["wait_ms", "until", "max_bytes", "cursor"],
}
RESULT_FIELDS = ["output", "exit_code", "backgrounded"]
POLL_FIELDS = ["output", "status", "exit_code", "cursor", "next_cursor", "total_bytes",
               "omitted_bytes"]
INFO_FIELDS = ["command", "status", "exit_code", "total_bytes"]
ERROR_STATUS = {
    "invalid_argument": "CONCH_ERR_INVALID_ARG",
    "not_found": "CONCH_ERR_NOT_FOUND",
    "no_input": "CONCH_ERR_NO_INPUT",
    "too_many_jobs": "CONCH_ERR_TOO_MANY_JOBS",
    "closed": "CONCH_ERR_CLOSED",
}


def c_text_arg(text):
    """A string argument as C can pass it. A C string cannot hold a NUL: a
    vector string with one (a command C could never send) becomes the same
    bytes with the NUL as 0xFF, a string the C API refuses as it refuses the
    NUL elsewhere (CONCH_ERR_INVALID_ARG); the expectation is unchanged. It
    is the one change the C replay makes to a vector."""
    if text is None:
        return "NULL"
    data = text.encode("utf-8").replace(b"\0", b"\xff")
    return c_bytes(data)


def step_expect(where, e, fields):
    strict(where, e, fields, "job_steps.json")
    if "exit_code" not in e:
        exit_kind, exit_code = "EXIT_UNCHECKED", 0
    elif e["exit_code"] is None:
        exit_kind, exit_code = "EXIT_NONE", 0
    else:
        exit_kind, exit_code = "EXIT_IS", int(e["exit_code"])
    if "backgrounded" not in e:
        bg = "-2"
    elif e["backgrounded"] is None:
        bg = "-1"
    else:
        bg = str(int(e["backgrounded"]))
    return "{%s, %s, %s, %s, %d, %s, %s, %s, %s, %s}" % (
        c_str(e.get("output")), c_str(e.get("status")), c_str(e.get("command")), exit_kind,
        exit_code, c_int(e.get("cursor")), c_int(e.get("next_cursor")),
        c_int(e.get("total_bytes")), c_int(e.get("omitted_bytes")), bg)


def job_steps(cases, out):
    tables = []
    for i, c in enumerate(cases):
        strict(c["name"], c, ["name", "shell", "steps"], "job_steps.json")
        strict(f"{c['name']}: shell", c.get("shell", {}), ["max_jobs"], "job_steps.json")
        steps = []
        for k, st in enumerate(c["steps"]):
            op = st["op"]
            where = f"{c['name']}: step {k} ({op})"
            if op not in STEP_KEYS:
                sys.exit(f"job_steps.json: {where}: an op the C suite does not replay")
            strict(where, st, ["op", "job", "expect", "error"] + STEP_KEYS[op], "job_steps.json")
            o = st.get("options") or {}
            strict(f"{where} options", o, STEP_OPTIONS.get(op, []), "job_steps.json")
            env = "NULL"
            if "env" in o:
                items = "".join(c_str(f"{name}={value}") + ", " for name, value in o["env"].items())
                out.append(f"static const char *const JOB_STEP_ENV_{i}_{k}[] = {{{items}NULL}};")
                env = f"JOB_STEP_ENV_{i}_{k}"
            wait_jobs, wait_count = "NULL", 0
            if "jobs" in st:
                ids = ", ".join(str(int(j)) for j in st["jobs"])
                out.append(f"static const uint32_t JOB_STEP_WAIT_{i}_{k}[] = {{{ids}}};")
                wait_jobs, wait_count = f"JOB_STEP_WAIT_{i}_{k}", len(st["jobs"])
            pty = o.get("pty", [0, 0])
            if "pty" in o and (len(pty) != 2 or 0 in pty):
                sys.exit(f"job_steps.json: {where}: pty must be [cols, rows], both > 0")
            error = st.get("error")
            if error is not None and error not in ERROR_STATUS:
                sys.exit(f"job_steps.json: {where}: an error kind the C suite does not map: {error}")
            expect = st.get("expect")
            has_expect = "expect" in st
            result = "{NULL, NULL, NULL, EXIT_UNCHECKED, 0, -1, -1, -1, -1, -2}"
            waited, jobs, jobs_count = "-1", "NULL", 0
            if has_expect:
                if op == "run":
                    result = step_expect(where, expect, RESULT_FIELDS)
                elif op in ("poll", "kill"):
                    result = step_expect(where, expect, POLL_FIELDS)
                elif op == "jobs":
                    if not isinstance(expect, list):
                        sys.exit(f"job_steps.json: {where}: expected a list of jobs")
                    items = ", ".join(
                        step_expect(f"{where} job {n}", j, INFO_FIELDS) for n, j in enumerate(expect)
                    )
                    if expect:  # C has no empty arrays: none is NULL, 0
                        out.append(f"static const struct step_expect JOB_STEP_JOBS_{i}_{k}[] = {{{items}}};")
                        jobs, jobs_count = f"JOB_STEP_JOBS_{i}_{k}", len(expect)
                elif op == "wait_any":
                    waited = "-1" if expect is None else str(int(expect))
                else:
                    sys.exit(f"job_steps.json: {where}: an expectation the C suite does not compare")
            data = st.get("data")
            steps.append(
                "  {%s, STEP_%s, %s, %s, %d, %s, %s, %d, %s, %d, %d, %d, %s, %d, %s, %s, %s, %s, %s,"
                " %s, %d, %s, %s, %s, %s, %s, %s, %d},"
                % (c_str(where), op.upper(), c_int(st.get("job")), c_text_arg(st.get("command")),
                   o.get("yield_after_ms", 0), c_str(o.get("cwd")), env,
                   st.get("timeout_ms", o.get("timeout_ms", 0)),
                   "true" if o.get("stdin") else "false", pty[0], pty[1], o.get("wait_ms", 0),
                   c_str(o.get("until")), o.get("max_bytes", 0), c_int(o.get("cursor")),
                   c_str(data), c_len(data), c_str(st.get("key")), c_str(st.get("signal")),
                   wait_jobs, wait_count, ERROR_STATUS[error] if error else "CONCH_OK",
                   c_str(error), "true" if has_expect else "false", result, waited, jobs,
                   jobs_count)
            )
        out.append(f"static const struct job_step JOB_STEPS_{i}[] = {{")
        out.extend(steps)
        out.append("  {0}};")
        tables.append(
            "  {%s, %d, JOB_STEPS_%d}," % (c_str(c["name"]), (c.get("shell") or {}).get("max_jobs", 0), i)
        )
    out.append("static const struct job_steps_case JOB_STEPS_CASES[] = {")
    out.extend(tables)
    out.append("};")


SANDBOX_KEYS = {"writable", "readable", "network", "allow_tcp_ports", "limits", "best_effort"}
LIMIT_KEYS = ["cpu_seconds", "memory_bytes", "file_size_bytes", "open_files", "processes",
              "session_memory_bytes"]


DOMAIN_KEYS = ("allow", "deny", "resolve")


def c_sandbox_name(path):
    """The C name of an option of the vectors: opts->sandbox->limits.cpu_seconds,
    an index [i]; a domain policy's network.allow is domains.allow."""
    head = "domains" if path[0] == "network" and len(path) > 1 else path[0]
    name = "opts->sandbox->" + head
    for part in path[1:]:
        name += f"[{part}]" if isinstance(part, int) else f".{part}"
    return name


def c_expressible(policy):
    """Whether conch_sandbox can hold the policy: known keys only, a network
    of "allow"/"deny" (an enum in C) or a domain policy of known keys
    (conch_domain_policy), limits >= 1 (0 is "none" in C), ports of 0 to
    65535 (uint16_t)."""
    if isinstance(policy, bool):
        return True
    if not set(policy) <= SANDBOX_KEYS:
        return False
    limits = policy.get("limits") or {}
    if not set(limits) <= set(LIMIT_KEYS):
        return False
    if any(not isinstance(v, int) or v < 1 for v in limits.values()):
        return False
    network = policy.get("network", "deny")
    if isinstance(network, dict):
        if not set(network) <= set(DOMAIN_KEYS):
            return False
    elif network not in ("allow", "deny"):
        return False
    return all(isinstance(p, int) and 0 <= p <= 65535 for p in policy.get("allow_tcp_ports", []))


def sandbox_options(cases, out):
    rows = []
    for i, c in enumerate(cases):
        policy = c["sandbox"]
        if not c_expressible(policy):
            out.append(f"/* not expressible in conch_sandbox: {c['name']} */")
            continue
        p = policy if isinstance(policy, dict) else {}
        lists = {}
        for key in ("writable", "readable"):
            lists[key] = c_strings(out, f"SANDBOX_{key.upper()}_{i}", p.get(key))
        ports = p.get("allow_tcp_ports", [])
        if ports:
            out.append("static const uint16_t SANDBOX_PORTS_%d[] = {%s};" % (i, ", ".join(map(str, ports))))
        limits = p.get("limits") or {}
        given = p.get("network", "deny")
        domains = ["NULL", "NULL", "NULL"]
        if isinstance(given, dict):
            network = "CONCH_NETWORK_DOMAINS"
            for k, key in enumerate(DOMAIN_KEYS):
                items = given.get(key)
                if key == "resolve" and items is not None:
                    items = [f"{name}={ip}" for name, ip in items.items()]
                domains[k] = c_strings(out, f"SANDBOX_{key.upper()}_{i}", items)
        else:
            network = {"allow": "CONCH_NETWORK_ALLOW", "deny": "CONCH_NETWORK_DENY"}[given]
        err = c.get("error")
        expect = None if err is None else "conch_shell_new: %s %s" % (c_sandbox_name(err["option"]), err["message"])
        rows.append(
            "  {%s, %s, {%s, %s, %s, %s, %d, {%s}, %s, {%s}}, %s},"
            % (c_str(c["name"]), "true" if policy is False else "false", lists["writable"], lists["readable"],
               network, f"SANDBOX_PORTS_{i}" if ports else "NULL", len(ports),
               ", ".join("UINT64_C(%d)" % limits.get(k, 0) for k in LIMIT_KEYS),
               "true" if p.get("best_effort") else "false", ", ".join(domains), c_str(expect))
        )
    out.append("static const struct sandbox_case SANDBOX_CASES[] = {")
    out.extend(rows)
    out.append("};")


def mask(cases, out):
    rows = []
    for i, c in enumerate(cases):
        env = [f"{k}={v}" for k, v in c["env"].items()]
        c_strings(out, f"MASK_ENV_{i}", env)
        commands = [c["command"]]
        cut = c.get("cut")
        if cut:
            commands += [cut["command"].replace("{k}", str(k)) for k in range(cut["from"], cut["to"])]
        c_strings(out, f"MASK_COMMANDS_{i}", commands)
        given = c.get("mask")
        names = c_strings(out, f"MASK_NAMES_{i}", given if isinstance(given, list) else None)
        if not isinstance(given, list) and given not in (None, True, False):
            sys.exit(f"mask.json: {c['name']!r}: mask must be true, false or a list")
        rows.append(
            "  {%s, MASK_ENV_%d, %s, %s, %s, MASK_COMMANDS_%d, %s},"
            % (c_str(c["name"]), i, "true" if given is False else "false", names,
               c_str('{"mask": true}') if given is True else "NULL", i, c_str(c["expect"]))
        )
    out.append("static const struct mask_case MASK_CASES[] = {")
    out.extend(rows)
    out.append("};")


def shell_bytes(data):
    """``data`` as one bash word, every byte escaped: ``$'\\x61…'``."""
    return "$'" + "".join("\\x%02x" % b for b in data) + "'"


def carriage_commands(text):
    """Commands that write ``text``: whole, then in two writes cut at each
    byte (the same list the Python and Node suites run)."""
    data = text.encode()
    commands = ["printf %s " + shell_bytes(data)]
    for cut in range(1, len(data)):
        commands.append("printf %s " + shell_bytes(data[:cut]) + "; printf %s " + shell_bytes(data[cut:]))
    return commands


def carriage_return(cases, out):
    rows = []
    for i, c in enumerate(cases):
        # Every cut for the default mode; the input whole for the other
        # (each run costs a bash under valgrind).
        commands = carriage_commands(c["input"])
        for mode, given in (("terminal", commands), ("newline", commands[:1])):
            c_strings(out, f"CARRIAGE_COMMANDS_{i}_{mode}", given)
            rows.append("  {%s, %s, CARRIAGE_COMMANDS_%d_%s, %s},"
                        % (c_str(f"{c['name']} ({mode})"),
                           c_str(json.dumps({"carriage_return": mode})), i, mode,
                           c_str(c["expect"][mode])))
    out.append("static const struct carriage_case CARRIAGE_CASES[] = {")
    out.extend(rows)
    out.append("};")


# The vector files the C face replays, and the writer of each one's table.
TABLES = {
    "normalize": normalize,
    "intercept": intercept,
    "sanitize": sanitize,
    "artifact": artifact,
    "keys": keys,
    "tool": tool,
    "tool_definition": tool_definition,
    "jobs": jobs,
    "job_steps": job_steps,
    "sandbox_options": sandbox_options,
    "mask": mask,
    "carriage_return": carriage_return,
}

# The vector files whose functions include/conch.h does not declare, so the
# C face cannot call them; their effects show in the results of the runs
# and of the tool (which the C tests check), and the Rust suite replays them.
NOT_IN_C_API = {
    "sink": "the output sink (head_bytes, chunked pushes) has no C function",
    "notice": "format_size and the truncation notice have no C function",
    "render": "the previews and truncation warnings have no C function",
    "job_tool": "the model's job tool has no C function",
}


def check_files(vectors_dir):
    """Every vector file is replayed or explained, and every one named exists."""
    present = {f[: -len(".json")] for f in os.listdir(vectors_dir) if f.endswith(".json")}
    named = set(TABLES) | set(NOT_IN_C_API)
    missing = sorted(named - present)
    unknown = sorted(present - named)
    if missing:
        sys.exit(f"{vectors_dir}: missing vector files: {', '.join(n + '.json' for n in missing)}")
    if unknown:
        sys.exit(
            f"{vectors_dir}: vector files the C suite neither replays nor explains: "
            f"{', '.join(n + '.json' for n in unknown)} (add them to TABLES or NOT_IN_C_API "
            "in tests/c/gen_vectors.py)"
        )


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    vectors_dir, out_dir = sys.argv[1], sys.argv[2]
    check_files(vectors_dir)
    for name, write in TABLES.items():
        out = [
            f"/* GENERATED by tests/c/gen_vectors.py from tests/vectors/{name}.json; do not edit. */",
            '#include "cases.h"',
        ]
        write(load(vectors_dir, name), out)
        with open(os.path.join(out_dir, f"vectors_{name}.h"), "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()

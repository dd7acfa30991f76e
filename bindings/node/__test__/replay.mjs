// The replay of the shared vectors (tests/vectors/*.json) that more than
// one test file uses: the cases, the loop that replays them, the sink
// cases through a session (a local Shell, or a remote one) and the tool,
// job tool and tool definition cases through a bash tool (a local
// BashTool, or a remote one).
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { machine as osMachine, release as osRelease, tmpdir, type as osType } from 'node:os'
import { execFileSync } from 'node:child_process'
import { ArtifactStore, BlockedError, ToolAbortError, ToolError } from 'conch'
import {
  HANG_GUARD_MS,
  expectGone,
  expectProcesses,
  settlesInTime,
  tempDir,
  uniqueWord,
  vectorsPath,
  waitFor,
} from './helpers.mjs'

/** The cases of `tests/vectors/<name>.json`; a missing file is an error. */
export function vectorCases(name) {
  const path = vectorsPath(name)
  assert.ok(existsSync(path), `tests/vectors/${name}.json is missing`)
  const cases = JSON.parse(readFileSync(path, 'utf8'))
  assert.ok(cases.length > 0, `${name}.json has no cases`)
  return cases
}

/**
 * Runs `check` (which may be async) on every case of
 * `tests/vectors/<name>.json` that `only` accepts, one after the other, and
 * fails listing each case whose check threw.
 */
export async function replay(t, name, check, only = () => true) {
  const cases = vectorCases(name).filter(only)
  const failures = []
  for (const c of cases) {
    try {
      await check(c)
    } catch (err) {
      failures.push(`${c.name}: ${err.message}`)
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${cases.length} cases failed`)
  t.diagnostic(`${cases.length} cases`)
}

/**
 * Writes each piece to a file of `dir` and returns the command that prints
 * them in order, a pause between two, so the engine reads them separately.
 */
export function printPieces(dir, pieces) {
  return pieces
    .map((piece, i) => {
      const file = join(dir, `piece.${i}`)
      writeFileSync(file, piece)
      return `cat ${file}`
    })
    .join('; /bin/sleep 0.02; ')
}

/** The sink options a Shell takes: `maxBytes`, `artifactsDir`, and `head` per run. */
const SHELL_SINK_OPTIONS = ['artifact', 'head_lines', 'max_bytes']

/**
 * Replays the sink vectors through the sessions `makeShell(options)` makes
 * (a `Shell`, or a remote session: it may return a promise).
 */
export async function sinkVectorsThrough(t, makeShell) {
  // Each case's pushes are printed by a real command of a Shell set up with
  // the case's options. A case with a notice, or with a head limit, then
  // waits in a sleep: a head that is satisfied stops the command (the run
  // ends by itself); otherwise the test aborts it, or the deadline of a
  // `timed out` notice ends it, once its output is all in. Cases with
  // options a Shell does not take (the head_bytes of a head+tail window)
  // are counted, not replayed.
  const takes = (c) => Object.keys(c.options).every((k) => SHELL_SINK_OPTIONS.includes(k))
  const skipped = vectorCases('sink').filter((c) => !takes(c)).map((c) => c.name)
  t.diagnostic(`not replayed, options a Shell does not take: ${skipped.join('; ')}`)
  assert.ok(skipped.length < vectorCases('sink').length, 'no sink case replayed')
  await replay(t, 'sink', async (c) => {
    const o = c.options
    const e = c.expect
    const dir = tempDir()
    const artifactsDir = join(dir, 'artifacts')
    const shell = await makeShell({
      snapshot: 'none',
      maxBytes: o.max_bytes,
      artifactsDir: o.artifact ? artifactsDir : undefined,
    })
    try {
      const pieces = c.pushes.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p)))
      const timedOut = c.notice?.match(/^Command timed out after (\d+) seconds$/)
      if (c.notice !== null && !timedOut && c.notice !== 'Command cancelled') throw new Error(`unknown notice ${c.notice}`)
      const word = uniqueWord('8')
      const waits = c.notice !== null || o.head_lines !== undefined
      let command = printPieces(dir, pieces)
      // The braces' redirection keeps bash's report of the killed sleep
      // (`Terminated`) out of the output the case describes.
      if (waits) command = `${command}; { /bin/sleep 100.${word}; } 2>/dev/null`
      let streamed = ''
      const run = shell.run(
        { command, head: o.head_lines, timeoutMs: timedOut ? Number(timedOut[1]) * 1000 : undefined },
        (chunk) => {
          streamed += chunk
        },
      )
      let r
      if (o.head_lines !== undefined && e.head_satisfied) {
        // Only the head stop can end the sleep in time.
        r = await settlesInTime(run, 'a run whose head is satisfied')
        assert.equal(r.cancelled, false)
        assert.equal(r.exitCode, 0)
      } else if (waits) {
        await expectProcesses(word)
        // The line being written streams once it ends (a redrawn line
        // reads as a terminal shows it): the whole lines come first.
        const lines = e.output.slice(0, e.output.lastIndexOf('\n') + 1)
        const allIn = await waitFor(() => Buffer.byteLength(streamed) === e.total_bytes || streamed === lines)
        assert.ok(allIn, `streamed ${JSON.stringify(streamed)}`)
        if (!timedOut) shell.abort()
        r = await settlesInTime(run, 'the stopped run')
        assert.equal(r.cancelled, true)
        assert.equal(r.timedOut, Boolean(timedOut))
        await expectGone(word)
      } else {
        r = await settlesInTime(run, 'the run')
        assert.equal(r.exitCode, 0)
      }
      // A head never satisfied leaves the command running, so the test
      // cancelled it: its notice is the test's doing, not the case's.
      const notice = o.head_lines !== undefined && !e.head_satisfied && c.notice === null ? '[Command cancelled]\n' : ''
      assert.equal(r.output, notice + e.output)
      assert.deepEqual(
        {
          truncated: r.truncated,
          total_lines: r.totalLines,
          total_bytes: r.totalBytes,
          output_lines: r.outputLines,
          output_bytes: r.outputBytes,
          artifact_id: r.artifactId ?? null,
        },
        {
          truncated: e.truncated,
          total_lines: e.total_lines,
          total_bytes: e.total_bytes,
          output_lines: e.output_lines,
          output_bytes: e.output_bytes,
          // A case that gives the sink no artifact: a Shell without
          // artifactsDir has the process's private store, which holds
          // what was truncated.
          artifact_id: o.artifact ? e.artifact_id : e.truncated ? r.artifactId : null,
        },
      )
      if (!o.artifact) assert.equal(r.artifactId != null, e.truncated)
      if (e.artifact_text !== undefined) {
        assert.equal(new ArtifactStore(artifactsDir).resolve(`artifact://${r.artifactId}`), e.artifact_text)
      }
      if (e.artifact_exists !== undefined) {
        const files = existsSync(artifactsDir) ? readdirSync(artifactsDir) : []
        assert.equal(files.length > 0, e.artifact_exists, `artifact files: ${files}`)
      }
    } finally {
      await shell.close()
    }
  }, takes)
}

/** A vector's error kind as the `code` of the error Node gives. */
export const ERROR_CODES = { invalid_argument: 'InvalidArgument', not_found: 'NotFound', io: 'Io' }

/**
 * Replays the artifact vectors through the store `open(dir)` gives (`{
 * store, close }`: a local `ArtifactStore`, or a remote session's, whose
 * reads return promises), the cases `only` keeps.
 */
export async function artifactVectorsThrough(t, open, only = () => true) {
  await replay(t, 'artifact', async (c) => {
    const dir = join(tempDir(), 'artifacts')
    if (c.files !== null) {
      mkdirSync(dir)
      for (const [name, body] of Object.entries(c.files)) writeFileSync(join(dir, name), body)
    }
    const { store, close } = await open(dir, c)
    try {
      const run = async () => {
        switch (c.op) {
          case 'allocate':
            return c.kinds.map((kind) => {
              const a = store.allocate(kind)
              assert.equal(a.path, join(dir, `${a.id}.${kind}.log`))
              return `${a.id}.${kind}.log`
            })
          case 'resolve':
            return store.resolve(c.url)
          case 'read':
            return store.read(c.id, c.offset, c.limit ?? undefined)
          default:
            throw new Error(`unknown op ${c.op}`)
        }
      }
      if (c.expect_error) {
        await assert.rejects(run, {
          code: ERROR_CODES[c.expect_error.kind],
          message: c.expect_error.message,
        })
      } else {
        assert.deepEqual(await run(), c.expect)
      }
    } finally {
      await close()
    }
  }, only)
}

/**
 * A program for the PTY that reports the bytes it receives. In raw mode (no
 * echo, no line editing, no signal keys), with application cursor keys
 * (DECCKM) switched on when its argument is `app`, it prints READY, then
 * for each KEY_END it reads a line `=<hex of the bytes before it>=`; it
 * exits on KEY_QUIT.
 */
const KEY_END = '<<conch-key-end>>'
const KEY_QUIT = '<<conch-key-quit>>'
const KEY_READER = `
process.stdin.setRawMode(true)
const END = Buffer.from(${JSON.stringify(KEY_END)})
const QUIT = Buffer.from(${JSON.stringify(KEY_QUIT)})
let got = Buffer.alloc(0)
process.stdout.write((process.argv[2] === 'app' ? '\\x1b[?1h' : '') + 'READY\\n')
process.stdin.on('data', (data) => {
  got = Buffer.concat([got, data])
  if (got.includes(QUIT)) process.exit(0)
  let at
  while ((at = got.indexOf(END)) >= 0) {
    process.stdout.write('=' + got.subarray(0, at).toString('hex') + '=\\n')
    got = got.subarray(at + END.length)
  }
})
`

/**
 * Replays the keys vectors on `pty` (a `PtySession`, or a remote one whose
 * calls return promises): each case's input (write) or key name
 * (writeKey) is sent to KEY_READER on the terminal, in the cursor-key mode
 * the case names; the bytes the program read are compared with the case's.
 */
export async function keyVectorsThrough(t, pty) {
  const script = join(tempDir(), 'key-reader.cjs')
  writeFileSync(script, KEY_READER)
  // Every case names its mode, so the two passes below replay them all.
  const modeless = vectorCases('keys').filter((c) => typeof c.app_cursor !== 'boolean')
  assert.deepEqual(modeless, [])
  for (const appCursor of [false, true]) {
    let text = ''
    const replies = []
    let wake = () => {}
    /** The next line the reader prints (asked for before what prompts it is sent). */
    const nextReply = async (what) => {
      const index = replies.length
      while (replies.length <= index) {
        await settlesInTime(new Promise((resolve) => (wake = resolve)), what)
      }
      return replies[index]
    }
    const run = pty.start(
      {
        command: `exec '${process.execPath}' '${script}' ${appCursor ? 'app' : 'normal'}`,
        timeoutMs: 6 * HANG_GUARD_MS,
      },
      (chunk) => {
        text += chunk
        if (replies.length === 0 && text.includes('READY')) replies.push('ready')
        for (const m of text.matchAll(/=([0-9a-f]*)=\r?\n/g)) replies.push(m[1])
        text = text.replace(/^[^]*=([0-9a-f]*)=\r?\n/, '')
        wake()
      },
    )
    // Asked for before the reader can print: chunks reach this thread only
    // once this synchronous code has run.
    const ready = nextReply('the key reader starting')
    try {
      assert.equal(await ready, 'ready')
      await replay(
        t,
        'keys',
        async (c) => {
          const reply = nextReply(`the bytes of ${c.name}`)
          // Awaited below unless a write throws first; never left unhandled.
          reply.catch(() => {})
          let refused
          try {
            if (c.key !== undefined) await pty.writeKey(c.key)
            else await pty.write(c.input)
          } catch (err) {
            refused = err
          }
          await pty.write(KEY_END)
          const bytes = await reply
          if (c.error_starts_with !== undefined) {
            assert.ok(refused, 'the key was not refused')
            assert.equal(refused.code, 'InvalidArgument')
            assert.ok(refused.message.startsWith(c.error_starts_with), refused.message)
            assert.equal(bytes, '', 'a refused key sends nothing')
          } else {
            if (refused) throw refused
            assert.equal(bytes, Buffer.from(c.expect, 'utf8').toString('hex'))
          }
        },
        (c) => c.app_cursor === appCursor,
      )
      await pty.write(KEY_QUIT)
      const r = await settlesInTime(run, 'the key reader')
      assert.equal(r.exitCode, 0, r.output)
    } finally {
      // Stops the reader when a case failed; an ended run is no error.
      await Promise.resolve()
        .then(() => pty.kill())
        .catch(() => {})
      await run.catch(() => {})
    }
  }
}

const opt = (v) => (v === null ? undefined : v)

/**
 * The vector's terms for what a BashTool call produced: kind, text, whether
 * truncation metadata came with it, and the suggested tool of a block.
 */
async function toolOutcome(tool, args) {
  try {
    const r = await tool.execute(args)
    return { kind: 'ok', text: r.content[0].text, truncated: r.details !== undefined }
  } catch (err) {
    if (err instanceof BlockedError) return { kind: 'blocked', text: err.message, suggested_tool: err.suggestedTool }
    if (err instanceof ToolAbortError) return { kind: 'aborted', text: err.message, truncated: err.details !== undefined }
    if (err instanceof ToolError) return { kind: 'failed', text: err.message, truncated: err.details !== undefined }
    throw err
  }
}

/**
 * Replays the tool vectors through the bash tools `makeTool(options)` makes
 * (a `BashTool`, or a remote one: it may return a promise).
 */
export async function toolVectorsThrough(t, makeTool) {
  let n = 0
  await replay(t, 'tool', async (c) => {
    n++
    const cwd = realpathSync(tempDir())
    const config = c.config ?? {}
    const tool = await makeTool({
      cwd,
      snapshot: 'none',
      sessionKey: `node-tool-vectors-${process.pid}-${n}`,
      interceptor: config.interceptor ?? false,
      toolNames: config.tool_names ?? [],
      rules: opt(config.rules)?.map((r) => ({ ...r, flags: opt(r.flags) })),
      artifactsDir: config.artifacts ? join(cwd, 'artifacts') : undefined,
    })
    let got
    try {
      got = await toolOutcome(tool, Object.fromEntries(Object.entries(c.args).filter(([, v]) => v !== null)))
    } finally {
      await tool.close()
    }
    const want = (key) => c.expect[key]?.replaceAll('{cwd}', cwd)
    const wrong = []
    for (const key of ['kind', 'truncated', 'suggested_tool']) {
      if (c.expect[key] !== undefined && c.expect[key] !== got[key]) wrong.push(`${key}: ${got[key]}`)
    }
    if (want('text') !== undefined && got.text !== want('text')) wrong.push(`text: ${JSON.stringify(got.text.slice(0, 200))}`)
    if (want('text_starts_with') !== undefined && !got.text.startsWith(want('text_starts_with'))) {
      wrong.push(`text starts: ${JSON.stringify(got.text.slice(0, 200))}`)
    }
    if (want('text_ends_with') !== undefined && !got.text.endsWith(want('text_ends_with'))) {
      wrong.push(`text ends: ${JSON.stringify(got.text.slice(-200))}`)
    }
    assert.deepEqual(wrong, [])
  })
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Whether `text` is `want`, each `{secs}` in it a whole number of seconds. */
function textMatches(want, text) {
  const pattern = want.split('{secs}').map(escape).join('\\d+')
  return new RegExp(`^${pattern}$`).test(text)
}

/**
 * Replays the job_tool vectors (each case on a session of its own, every
 * text exact) through the bash tools `makeTool(options)` makes (it may
 * return a promise) and the job tool `jobToolOf(bash)` gives for each.
 */
export async function jobToolVectorsThrough(t, makeTool, jobToolOf) {
  let n = 0
  await replay(t, 'job_tool', async (c) => {
    n++
    const bash = await makeTool({
      cwd: tmpdir(),
      snapshot: 'none',
      sessionKey: `job-tool-vectors-${process.pid}-${n}`,
      autoBackgroundAfterMs: c.config?.auto_background_after_ms,
    })
    const jobs = jobToolOf(bash)
    try {
      for (const [i, step] of c.steps.entries()) {
        const at = `step ${i} (${step.tool} ${JSON.stringify(step.args)})`
        const tool = { bash, job: jobs }[step.tool]
        assert.ok(tool, `${at}: unknown tool`)
        let kind
        let text
        try {
          const r = await settlesInTime(tool.execute(step.args), at, 20_000)
          kind = 'ok'
          text = r.content[0].text
        } catch (err) {
          // The model's mistakes and failed commands are the ToolError class.
          assert.ok(err instanceof ToolError, `${at}: ${err?.stack ?? err}`)
          kind = 'failed'
          text = err.message
        }
        const want = step.expect
        assert.equal(kind, want.kind, `${at}: ${text}`)
        if (want.text !== undefined) {
          assert.ok(textMatches(want.text, text), `${at}:\n${text}\n---\n${want.text}`)
        }
        if (want.text_starts_with !== undefined) {
          assert.ok(text.startsWith(want.text_starts_with), `${at}:\n${text}`)
        }
      }
    } finally {
      await bash.close()
    }
  })
}

/** The tool_definition vectors' configuration keys, as a BashTool's options. */
const DEFINITION_OPTIONS = {
  interceptor: 'interceptor',
  tool_names: 'toolNames',
  rules: 'rules',
  name: 'name',
  job_tool_name: 'jobToolName',
  virtual_terminal: 'virtualTerminal',
  auto_background_after_ms: 'autoBackgroundAfterMs',
}

const asVector = ({ name, description, inputSchema }) => ({ name, description, input_schema: inputSchema })

/**
 * Replays the tool_definition vectors through the bash tools
 * `makeTool(options)` makes (it may return a promise) and the job tool
 * `jobToolOf(bash)` gives for each.
 */
// What the vectors' `{system}` stands for, read here as a user would:
// `bash` on `PATH` and `uname`.
function systemSentence() {
  const version = execFileSync('bash', ['-c', 'printf %s "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}"'], { encoding: 'utf8' })
  const system = osType() === 'Darwin' ? 'macOS' : osType()
  return `The shell is bash ${version} on ${system} ${osRelease()} (${osMachine()}).`
}

export async function toolDefinitionVectorsThrough(t, makeTool, jobToolOf) {
  const system = systemSentence()
  await replay(t, 'tool_definition', async (c) => {
    c.expect.bash.description = c.expect.bash.description.replace('{system}', system)
    const options = { cwd: tmpdir(), snapshot: 'none' }
    for (const [key, value] of Object.entries(c.config)) {
      assert.ok(key in DEFINITION_OPTIONS, `unknown config key ${key}`)
      options[DEFINITION_OPTIONS[key]] = value
    }
    const bash = await makeTool(options)
    try {
      const job = jobToolOf(bash)
      assert.deepEqual({ bash: asVector(bash.definition()), job: asVector(job.definition()) }, c.expect)
    } finally {
      await bash.close()
    }
  })
}

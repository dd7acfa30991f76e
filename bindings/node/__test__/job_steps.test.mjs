// Replays tests/vectors/job_steps.json step by step through the Node face
// (Shell.start, write, closeStdin, writeKey, signal, kill, waitAny, poll,
// jobs, run with yieldAfterMs), the way core/tests/shell/job_steps.rs does
// in Rust: same steps, same `expect` fields, and `error` compared with the
// kind the rejection's `code` names; on a local Shell and on a remote
// session (`conch serve --stdio`).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { Shell, connect } from 'conch'
import { STDIO_SERVER, settlesInTime, vectorsPath } from './helpers.mjs'

/** The error kind of the vectors for each `code` of the Node face. */
const KINDS = {
  InvalidArgument: 'invalid_argument',
  NotFound: 'not_found',
  NoInput: 'no_input',
  TooManyJobs: 'too_many_jobs',
  Closed: 'closed',
  Io: 'io',
  Spawn: 'spawn',
}

const camel = (key) => key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

/** `want` against `got`: an object field by field, a list element by element, else whole. */
function expect(got, want, at) {
  if (Array.isArray(want)) {
    assert.ok(Array.isArray(got), `${at}: ${JSON.stringify(got)}`)
    assert.equal(got.length, want.length, `${at}: ${JSON.stringify(got)}`)
    want.forEach((w, i) => expect(got[i], w, `${at} [${i}]`))
  } else if (want !== null && typeof want === 'object') {
    for (const [key, value] of Object.entries(want)) {
      // An absent optional field (`exitCode`) is the vectors' null.
      assert.deepEqual(got[camel(key)] ?? null, value, `${at}: ${key} of ${JSON.stringify(got)}`)
    }
  } else {
    assert.deepEqual(got, want, at)
  }
}

/** One step; resolves with what it returned (undefined for input and signals). */
async function play(shell, step, job, state) {
  const o = step.options ?? {}
  switch (step.op) {
    case 'run': {
      const r = await shell.run({ command: step.command, yieldAfterMs: o.yield_after_ms })
      if (r.backgrounded !== undefined) state.last = r.backgrounded
      return r
    }
    case 'start': {
      const id = await shell.start({
        command: step.command,
        cwd: o.cwd,
        env: o.env,
        timeoutMs: o.timeout_ms,
        stdin: o.stdin,
        pty: o.pty && { cols: o.pty[0], rows: o.pty[1] },
      })
      state.last = id
      return id
    }
    case 'poll':
      return shell.poll(job, {
        waitMs: o.wait_ms, until: o.until, maxBytes: o.max_bytes, cursor: o.cursor,
      })
    case 'write':
      return shell.write(job, step.data)
    case 'close_stdin':
      return shell.closeStdin(job)
    case 'key':
      return shell.writeKey(job, step.key)
    case 'signal':
      return shell.signal(job, step.signal)
    case 'kill':
      return shell.kill(job)
    case 'jobs':
      return shell.jobs()
    case 'wait_any':
      return shell.waitAny(step.jobs ?? [state.last], step.timeout_ms)
    default:
      throw new Error(`unknown op ${step.op}`)
  }
}

/** Replays every case on the shells `open(options)` makes. */
async function replayAll(t, open) {
  const path = vectorsPath('job_steps')
  assert.ok(existsSync(path), 'tests/vectors/job_steps.json is missing')
  const cases = JSON.parse(readFileSync(path, 'utf8'))
  assert.ok(cases.length > 0)
  const failures = []
  let steps = 0
  for (const c of cases) {
    const shell = await open({ snapshot: 'none', maxJobs: c.shell?.max_jobs })
    const state = { last: 0 }
    try {
      for (const [i, step] of c.steps.entries()) {
        const at = `${c.name}: step ${i} (${step.op})`
        const job = step.job ?? state.last
        steps += 1
        let got
        let err
        try {
          // A bad value may throw at the call or reject: either is the error.
          got = await settlesInTime(Promise.resolve().then(() => play(shell, step, job, state)), at, 20_000)
        } catch (e) {
          err = e
        }
        if (step.error !== undefined) {
          assert.ok(err instanceof Error, `${at}: expected ${step.error}, got ${JSON.stringify(got)}`)
          assert.equal(KINDS[err.code], step.error, `${at}: ${err.code} ${err.message}`)
          continue
        }
        if (err !== undefined) throw new Error(`${at}: ${err.code} ${err.message}`)
        if ('expect' in step) expect(got, step.expect, at)
      }
    } catch (err) {
      failures.push(`${c.name}: ${err.message}`)
    } finally {
      await shell.close()
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${cases.length} cases failed`)
  t.diagnostic(`${cases.length} cases, ${steps} steps`)
}

test('job_steps vectors, every case and step', (t) => replayAll(t, (options) => new Shell(options)))

test('job_steps vectors, through a remote session', async (t) => {
  const remote = await connect(STDIO_SERVER)
  try {
    await replayAll(t, (options) => remote.shell(options))
  } finally {
    remote.close()
  }
})

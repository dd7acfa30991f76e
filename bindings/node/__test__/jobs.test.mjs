// Session jobs from Node: what a command leaves writing in the background is
// a job of the session (`Shell.jobs`, `Shell.poll`), never output of a later
// run; a poll waits off the JS thread, a signal ends its wait and spares the
// job, bad input is refused with the addon's errors. The shared vectors
// (tests/vectors/jobs.json) are replayed in vectors.test.mjs.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Shell } from 'conch'
import { connect } from 'node:net'
import {
  HANG_GUARD_MS,
  RELEASE,
  expectGone,
  gated,
  expectProcesses,
  settlesInTime,
  tempDir,
  uniqueWord,
} from './helpers.mjs'

const require = createRequire(import.meta.url)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Throws or rejects: the error, whichever way the call reports it. */
async function failure(call) {
  try {
    await call()
  } catch (err) {
    return err
  }
  assert.fail('expected an error')
}

/** Runs `command`, which leaves one job behind, and returns that job's number. */
async function jobOf(sh, command) {
  const before = sh.jobs().length
  await sh.run({ command })
  const jobs = sh.jobs()
  assert.equal(jobs.length, before + 1, JSON.stringify(jobs))
  assert.equal(jobs.at(-1).command, command)
  return jobs.at(-1).job
}

describe('Shell jobs', () => {
  const sh = new Shell({ snapshot: 'none' })
  after(() => sh.close())

  test('late output belongs to the job that wrote it, not to the next run', async () => {
    const fresh = new Shell({ snapshot: 'none' })
    try {
      const command = `${gated('/bin/sleep 0.3; echo late')} echo started`
      const before = Date.now()
      assert.equal((await fresh.run({ command })).output, 'started\n')
      await fresh.run({ command: RELEASE })
      await sleep(1000)
      assert.equal((await fresh.run({ command: 'echo next' })).output, 'next\n')

      const jobs = fresh.jobs()
      assert.equal(jobs.length, 1, JSON.stringify(jobs))
      const [j] = jobs
      assert.equal(j.command, command)
      assert.equal(j.status, 'exited')
      assert.equal(j.exitCode, undefined)
      assert.equal(j.totalBytes, 5)
      assert.equal(j.artifactId, undefined)
      // Milliseconds since the epoch, like Date.now() (a clock step aside).
      assert.ok(Math.abs(j.startedMs - before) < HANG_GUARD_MS, `${j.startedMs} vs ${before}`)
      assert.ok(j.elapsedMs >= 300 && j.elapsedMs < HANG_GUARD_MS, `${j.elapsedMs}`)

      const p = await fresh.poll(j.job)
      assert.deepEqual(
        { output: p.output, status: p.status, cursor: p.cursor, nextCursor: p.nextCursor },
        { output: 'late\n', status: 'exited', cursor: 0, nextCursor: 5 },
      )
      assert.equal(p.job, j.job)
      assert.equal(p.totalBytes, 5)
      assert.equal(p.omittedBytes, 0)
      assert.equal(p.exitCode, undefined)
      assert.equal(p.elapsedMs, j.elapsedMs)
      // The next poll reads on from where this one stopped.
      const again = await fresh.poll(j.job)
      assert.deepEqual([again.output, again.cursor], ['', 5])
    } finally {
      fresh.close()
    }
  })

  test('a command that leaves nothing behind makes no job', async () => {
    const fresh = new Shell({ snapshot: 'none' })
    try {
      await fresh.run({ command: 'echo a; (echo b) & wait' })
      assert.deepEqual(fresh.jobs(), [])
    } finally {
      fresh.close()
    }
  })

  test('the event loop keeps running during a long poll', async () => {
    // The job ends only once a timer of the event loop has created the
    // marker: a poll that held the JS thread would wait out its waitMs and
    // find the job still running.
    const marker = join(tempDir(), 'from-the-event-loop')
    const job = await jobOf(sh, `(until [ -e ${marker} ]; do /bin/sleep 0.02; done; echo seen) &`)
    let ticks = 0
    const ticker = setInterval(() => {
      ticks++
      if (ticks === 5) writeFileSync(marker, '')
    }, 20)
    try {
      const p = await settlesInTime(sh.poll(job, { waitMs: HANG_GUARD_MS }), 'the long poll')
      assert.deepEqual([p.output, p.status], ['seen\n', 'exited'])
      assert.ok(ticks >= 5, `${ticks} ticks`)
    } finally {
      clearInterval(ticker)
    }
  })

  test('runs go on while a poll waits, and the poll sees nothing of them', async () => {
    const job = await jobOf(sh, '(/bin/sleep 1; echo done) &')
    const polled = sh.poll(job, { waitMs: HANG_GUARD_MS })
    const r = await settlesInTime(sh.run({ command: 'echo meanwhile' }), 'a run during a poll')
    assert.equal(r.output, 'meanwhile\n')
    const p = await settlesInTime(polled, 'the poll')
    assert.deepEqual([p.output, p.status], ['done\n', 'exited'])
  })

  test('until ends the wait while the job runs', async () => {
    // The job writes only after the run returned: what a job writes before
    // that is the run's own output.
    const job = await jobOf(sh, gated('echo one; /bin/sleep 0.2; echo two; /bin/sleep 30'))
    await sh.run({ command: RELEASE })
    const started = Date.now()
    const p = await sh.poll(job, { waitMs: HANG_GUARD_MS, until: 'one\ntw[o]' })
    assert.ok(Date.now() - started < HANG_GUARD_MS, 'until did not end the wait')
    assert.deepEqual([p.output, p.status], ['one\ntwo\n', 'running'])
    // A cursor reads again from any offset; maxBytes keeps the newest.
    const back = await sh.poll(job, { cursor: 2, maxBytes: 3 })
    assert.deepEqual(
      [back.output, back.cursor, back.nextCursor, back.omittedBytes],
      ['wo\n', 5, 8, 3],
    )
  })

  test('an AbortSignal ends a poll early and the job goes on', async () => {
    const job = await jobOf(sh, '(/bin/sleep 1.5; echo still) &')
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 200)
    const started = Date.now()
    const p = await settlesInTime(sh.poll(job, { waitMs: 3 * HANG_GUARD_MS, signal: ac.signal }), 'the aborted poll')
    assert.ok(Date.now() - started < HANG_GUARD_MS, 'the abort did not end the poll')
    assert.deepEqual([p.output, p.status], ['', 'running'])
    // An already-aborted signal: the poll reads what is there and returns.
    const now = await settlesInTime(sh.poll(job, { waitMs: 3 * HANG_GUARD_MS, signal: ac.signal }), 'pre-aborted')
    assert.equal(now.status, 'running')
    const end = await settlesInTime(sh.poll(job, { waitMs: HANG_GUARD_MS }), 'the poll after the abort')
    assert.deepEqual([end.output, end.status], ['still\n', 'exited'])
  })

  test('a long-lived signal collects no listener per poll', async () => {
    const job = await jobOf(sh, gated('echo x'))
    await sh.run({ command: RELEASE })
    const ac = new AbortController()
    const warnings = []
    const onWarning = (w) => warnings.push(w)
    process.on('warning', onWarning)
    try {
      for (let i = 0; i < 30; i++) await sh.poll(job, { waitMs: 1, signal: ac.signal })
      await sleep(10)
    } finally {
      process.off('warning', onWarning)
    }
    assert.deepEqual(warnings.map(String), [])
  })

  test('closing the shell ends a waiting poll: the job was killed', async () => {
    const fresh = new Shell({ snapshot: 'none' })
    const job = await jobOf(fresh, '(/bin/sleep 30; echo never) &')
    const polled = fresh.poll(job, { waitMs: 3 * HANG_GUARD_MS })
    setTimeout(() => fresh.close(), 100)
    const p = await settlesInTime(polled, 'the poll of a closed shell')
    assert.deepEqual([p.output, p.status], ['', 'killed'])
    assert.deepEqual(fresh.jobs(), [])
    const err = await failure(() => fresh.poll(job))
    assert.equal(err.code, 'Closed')
    assert.equal(err.message, 'shell is closed')
  })
})

describe('Shell.poll misuse', () => {
  const sh = new Shell({ snapshot: 'none' })
  after(() => sh.close())

  test('arguments of the wrong type are TypeErrors naming them', async () => {
    const cases = [
      ['job must be a number, got string', () => sh.poll('1')],
      ['job must be a number, got undefined', () => sh.poll()],
      ['job must be a number, got bigint', () => sh.poll(1n)],
      ['options must be an object or undefined, got number', () => sh.poll(1, 5)],
      ['waitMs: invalid type: string "10", expected a number', () => sh.poll(1, { waitMs: '10' })],
      ['until: invalid type: map, expected a string', () => sh.poll(1, { until: /x/ })],
      ['maxBytes: invalid type: boolean `true`, expected a number', () => sh.poll(1, { maxBytes: true })],
      ['cursor: invalid type: map, expected a number', () => sh.poll(1, { cursor: {} })],
      ['options.signal must be an AbortSignal, got number', () => sh.poll(1, { signal: 5 })],
    ]
    for (const [message, call] of cases) {
      const err = await failure(call)
      assert.ok(err instanceof TypeError, message)
      assert.equal(err.message, message)
      assert.equal(err.code, 'InvalidArg')
    }
  })

  test('bad values are InvalidArgument, checked by the core, before anything waits', async () => {
    const cases = [
      [/^job must be a whole number >= 0, got -1$/, () => sh.poll(-1)],
      [/^job must be .+, got 1\.5$/, () => sh.poll(1.5)],
      [/^job must be .+, got NaN$/, () => sh.poll(NaN)],
      [/^waitMs must be a number >= 0 of milliseconds up to \d+, got -1$/, () => sh.poll(1, { waitMs: -1 })],
      [/^waitMs must be .+, got NaN$/, () => sh.poll(1, { waitMs: NaN })],
      [/^waitMs must be .+, got 1e300$/, () => sh.poll(1, { waitMs: 1e300 })],
      [/^until must be a valid regular expression, got "\(" \(.+\)$/, () => sh.poll(1, { until: '(' })],
      [/^maxBytes must be a whole number >= 1, got 0$/, () => sh.poll(1, { maxBytes: 0 })],
      [/^cursor must be a whole number >= 0, got -2$/, () => sh.poll(1, { cursor: -2 })],
    ]
    for (const [message, call] of cases) {
      const err = await failure(call)
      assert.ok(err instanceof Error)
      assert.equal(err.code, 'InvalidArgument', err.message)
      assert.match(err.message, message)
    }
  })

  test('an unknown job rejects with NotFound', async () => {
    for (const job of [0, 99, 2 ** 40]) {
      const err = await failure(() => sh.poll(job, { waitMs: HANG_GUARD_MS }))
      assert.equal(err.code, 'NotFound')
      assert.equal(err.message, `no job ${job} in this session`)
    }
  })

  test('a closed or disposed shell lists no job and refuses polls', async () => {
    for (const end of [(s) => s.close(), (s) => s[Symbol.dispose](), (s) => s[Symbol.asyncDispose]()]) {
      const s = new Shell({ snapshot: 'none' })
      const job = await jobOf(s, '/bin/sleep 30 &')
      await end(s)
      assert.deepEqual(s.jobs(), [])
      const err = await failure(() => s.poll(job, { waitMs: 10 }))
      assert.equal(err.code, 'Closed')
      assert.equal(err.message, 'shell is closed')
    }
  })

  test('the addon itself refuses wrong types with an Error, never a crash', async () => {
    // Through the generated loader, without the package's checks.
    const native = require('../index.js')
    const raw = new native.Shell({ snapshot: 'none' })
    try {
      for (const call of [
        () => raw.poll('1'),
        () => raw.poll(),
        () => raw.poll(1, { waitMs: 'x' }),
        () => raw.poll(1, { until: 5 }),
        () => raw.poll(1, { signal: 5 }),
        () => native.Shell.prototype.poll.call({}, 1),
        () => native.Shell.prototype.jobs.call({}),
      ]) {
        const err = await failure(call)
        assert.ok(err instanceof Error)
        assert.ok(err.message.length > 0)
      }
      assert.equal((await raw.run({ command: 'echo still here' })).output, 'still here\n')
    } finally {
      raw.close()
    }
  })
})

/** Whether something accepts connections on 127.0.0.1:`port`. */
function listening(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

describe('Shell.start: jobs started beside the session', () => {
  test('a dev server: polled until it serves, curled from a run, killed with its port', async () => {
    const sh = new Shell({ snapshot: 'none' })
    try {
      const job = await sh.start({
        command: 'exec python3 -m http.server 0 --bind 127.0.0.1',
        env: { PYTHONUNBUFFERED: '1' },
      })
      const started = Date.now()
      const ready = await sh.poll(job, { waitMs: 5000, until: 'Serving HTTP on \\S+ port \\d+' })
      assert.ok(Date.now() - started < 5000, `ready after ${Date.now() - started} ms`)
      assert.equal(ready.status, 'running', ready.output)
      const port = Number(/port (\d+)/.exec(ready.output)?.[1])
      assert.ok(port > 0, ready.output)
      // The session's own runs go on while the job serves.
      const r = await sh.run({
        command: `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:${port}/`,
        timeoutMs: 10_000,
      })
      assert.equal(r.exitCode, 0, r.output)
      assert.equal(r.output, '200')
      assert.equal(r.backgrounded, undefined)
      const log = await sh.poll(job, { waitMs: 2000, until: 'GET / ' })
      assert.match(log.output, /"GET \/ HTTP\/1\.1" 200/)
      const killed = await settlesInTime(sh.kill(job), 'kill')
      assert.equal(killed.status, 'killed')
      assert.equal(killed.exitCode, undefined)
      assert.equal(await listening(port), false, `port ${port} still open after kill`)
    } finally {
      sh.close()
    }
  })

  test('start takes its turn when called: runs before it are seen, runs after it are not', async () => {
    const sh = new Shell({ snapshot: 'none' })
    try {
      for (let i = 0; i < 5; i++) {
        const before = sh.run({ command: `X=before${i}` })
        const started = sh.start({ command: 'echo "$X"' })
        const after = sh.run({ command: `X=after${i}` })
        const job = await started
        await Promise.all([before, after])
        const p = await sh.poll(job, { waitMs: HANG_GUARD_MS })
        assert.equal(p.output, `before${i}\n`)
      }
    } finally {
      sh.close()
    }
  })

  test("'jobExit' fires once per job end with its exit code; off removes a listener", async () => {
    const sh = new Shell({ snapshot: 'none' })
    try {
      const seen = []
      const removed = []
      const other = (info) => removed.push(info)
      sh.on('jobExit', (info) => seen.push(info))
      sh.on('jobExit', other)
      sh.off('jobExit', other)
      const job = await sh.start({ command: 'echo bye; exit 4' })
      const ended = await sh.waitAny([job], HANG_GUARD_MS)
      assert.equal(ended, job)
      const deadline = Date.now() + HANG_GUARD_MS
      while (seen.length === 0 && Date.now() < deadline) await sleep(10)
      assert.equal(seen.length, 1)
      assert.equal(seen[0].job, job)
      assert.equal(seen[0].status, 'exited')
      assert.equal(seen[0].exitCode, 4)
      assert.equal(seen[0].command, 'echo bye; exit 4')
      assert.equal(seen[0].artifactTruncated, false)
      await sleep(50)
      assert.equal(seen.length, 1)
      assert.deepEqual(removed, [])
      assert.throws(() => sh.on('exit', () => {}), { name: 'TypeError', code: 'InvalidArg' })
      assert.throws(() => sh.on('jobExit', 1), { name: 'TypeError', code: 'InvalidArg' })
    } finally {
      sh.close()
    }
  })

  test('close() with running jobs leaves no process behind', async () => {
    const word = uniqueWord('9')
    const sh = new Shell({ snapshot: 'none' })
    const piped = await sh.start({ command: `/bin/sleep 100.${word}`, stdin: true })
    const onPty = await sh.start({ command: `/bin/sleep 100.${word}`, pty: { cols: 80, rows: 24 } })
    const moved = await sh.run({ command: `/bin/sleep 100.${word}`, yieldAfterMs: 100 })
    assert.equal(typeof moved.backgrounded, 'number')
    assert.deepEqual(sh.jobs().map((j) => j.status), ['running', 'running', 'running'])
    assert.ok(piped < onPty)
    await expectProcesses(word, 3)
    sh.close()
    await expectGone(word)
    const err = await failure(() => sh.start({ command: 'true' }))
    assert.equal(err.code, 'Closed')
  })

  test('input, keys, signals and waitAny; misuse is refused with its code', async () => {
    const sh = new Shell({ snapshot: 'none', maxJobs: 2 })
    try {
      const job = await sh.start({ command: 'read -r a; read -r b; echo "$a/$b"', stdin: true })
      await sh.write(job, 'text\n')
      await sh.write(job, Buffer.from('bytes\n'))
      assert.equal(await sh.waitAny([job], HANG_GUARD_MS), job)
      const p = await sh.poll(job)
      assert.equal(p.output, 'text/bytes\n')
      assert.equal(p.exitCode, 0)
      assert.equal((await failure(() => sh.closeStdin(job))).code, 'NoInput')
      assert.equal((await failure(() => sh.writeKey(job, 'enter'))).code, 'NoInput')
      const a = await sh.start({ command: 'trap "exit 9" USR1; while :; do /bin/sleep 0.05; done' })
      const b = await sh.start({ command: '/bin/sleep 30' })
      const err = await failure(() => sh.start({ command: 'true' }))
      assert.equal(err.code, 'TooManyJobs')
      assert.equal(await sh.waitAny([a, b], 50), null)
      await sh.poll(a, { waitMs: 200 })
      await sh.signal(a, 'USR1')
      assert.equal(await sh.waitAny([a, b], HANG_GUARD_MS), a)
      assert.equal((await sh.poll(a)).exitCode, 9)
      await sh.signal(b, 9)
      assert.equal(await sh.waitAny([b], HANG_GUARD_MS), b)
      assert.equal((await sh.kill(b)).status, 'exited')
      assert.equal((await failure(() => sh.kill(99))).code, 'NotFound')
      assert.equal((await failure(() => sh.signal(a, 'NOPE'))).code, 'InvalidArgument')
      assert.equal((await failure(() => sh.signal(a, 1.5))).code, 'InvalidArgument')
      assert.equal((await failure(() => sh.start({ command: 'true', timeoutMs: 0 }))).code, 'InvalidArgument')
      assert.equal((await failure(() => sh.waitAny([a], -1))).code, 'InvalidArgument')
      assert.equal((await failure(() => sh.write('1', 'x'))).code, 'InvalidArg')
      assert.equal((await failure(() => sh.write(a, 5))).code, 'InvalidArg')
      assert.equal((await failure(() => sh.waitAny(1, 10))).code, 'InvalidArg')
      assert.equal((await failure(() => sh.run({ command: 'true', yieldAfterMs: 0 }))).code, 'InvalidArgument')
    } finally {
      sh.close()
    }
  })
})

describe('Shell.start: floods and races', () => {
  test('yes for 20 s with a 10 MiB artifact cap: bounded memory, the artifact stops at the cap', async () => {
    const dir = tempDir()
    const cap = 10 * 1024 * 1024
    const sh = new Shell({ snapshot: 'none', maxBytes: 4096, jobArtifactCap: cap, artifactsDir: dir })
    try {
      const before = process.memoryUsage().rss
      const job = await sh.start({ command: 'yes' })
      const deadline = Date.now() + 20_000
      let skipped = false
      while (Date.now() < deadline) {
        const p = await sh.poll(job, { waitMs: 1000 })
        assert.equal(p.status, 'running')
        assert.ok(Buffer.byteLength(p.output) <= 4096, `${Buffer.byteLength(p.output)} bytes`)
        skipped ||= p.omittedBytes > 0
      }
      assert.ok(skipped, 'a poll of a flood says what it skipped')
      const grown = process.memoryUsage().rss - before
      assert.ok(grown < 32 * 1024 * 1024, `rss grew ${grown} bytes`)
      const last = await settlesInTime(sh.kill(job), 'kill')
      assert.equal(last.status, 'killed')
      assert.equal(last.artifactTruncated, true)
      const file = readdirSync(dir).find((f) => f.startsWith(`${last.artifactId}.`))
      assert.equal(statSync(join(dir, file)).size, cap)
    } finally {
      sh.close()
    }
  })

  test('polls, writes and a kill racing: every byte read once, exit codes exact, nothing hangs', async () => {
    const sh = new Shell({ snapshot: 'none' })
    try {
      for (let i = 0; i < 5; i++) {
        const job = await sh.start({ command: 'echo a; echo b' })
        const p = await sh.poll(job, { waitMs: HANG_GUARD_MS })
        assert.deepEqual([p.output, p.exitCode], ['a\nb\n', 0])
      }
      const job = await sh.start({ command: 'while read -r l; do echo got $l; done', stdin: true })
      let seen = ''
      const poller = async () => {
        for (;;) {
          const p = await sh.poll(job, { waitMs: 200 })
          seen += p.output
          if (p.status !== 'running') return p.status
        }
      }
      const pollers = [poller(), poller()]
      for (let i = 0; i < 20; i++) await sh.write(job, `${i}\n`)
      const deadline = Date.now() + HANG_GUARD_MS
      while ((seen.match(/got/g) ?? []).length < 20 && Date.now() < deadline) await sleep(20)
      const last = await settlesInTime(sh.kill(job), 'kill')
      assert.deepEqual(await Promise.all(pollers), ['killed', 'killed'])
      const expected = Array.from({ length: 20 }, (_, i) => `got ${i}\n`).join('')
      assert.equal(seen + last.output, expected)
    } finally {
      sh.close()
    }
  })
})

describe('Shell.start: output read piece by piece, prompts, yieldAfterMs, the default limit', () => {
  test('a job printing 1..50 polled every 300 ms: each line read exactly once, exit 0 last', async () => {
    const sh = new Shell({ snapshot: 'none' })
    try {
      const job = await sh.start({ command: 'for i in $(seq 1 50); do echo $i; /bin/sleep 0.1; done' })
      let output = ''
      const statuses = []
      const deadline = Date.now() + 6 * HANG_GUARD_MS
      for (;;) {
        await sleep(300)
        const p = await sh.poll(job)
        output += p.output
        statuses.push([p.status, p.exitCode])
        if (p.status !== 'running' || Date.now() > deadline) break
      }
      const lines = Array.from({ length: 50 }, (_, i) => `${i + 1}\n`).join('')
      assert.equal(output, lines)
      assert.ok(statuses.length > 2, JSON.stringify(statuses))
      assert.deepEqual(statuses.at(-1), ['exited', 0])
      for (const [status, code] of statuses.slice(0, -1)) {
        assert.deepEqual([status, code], ['running', undefined])
      }
      // Nothing is read twice: a poll after the end has nothing new.
      const after = await sh.poll(job)
      assert.deepEqual([after.output, after.status, after.exitCode], ['', 'exited', 0])
    } finally {
      sh.close()
    }
  })

  test('a prompt answered on a pipe and on a terminal', async () => {
    const sh = new Shell({ snapshot: 'none' })
    try {
      const piped = await sh.start({ command: 'read -r n; echo hi $n', stdin: true })
      await sh.write(piped, 'ann\n')
      const p = await sh.poll(piped, { waitMs: HANG_GUARD_MS })
      assert.deepEqual([p.output, p.status, p.exitCode], ['hi ann\n', 'exited', 0])

      const onPty = await sh.start({
        command: `python3 -c 'print(input("name? "))'`,
        pty: { cols: 80, rows: 24 },
      })
      const prompt = await sh.poll(onPty, { waitMs: HANG_GUARD_MS, until: 'name\\? ' })
      assert.deepEqual([prompt.output, prompt.status], ['name? ', 'running'])
      await sh.write(onPty, 'ann\n')
      const answered = await sh.poll(onPty, { waitMs: HANG_GUARD_MS })
      // The terminal echoes what was typed, then the program prints it.
      assert.deepEqual([answered.output, answered.status, answered.exitCode], ['ann\nann\n', 'exited', 0])
    } finally {
      sh.close()
    }
  })

  test('yieldAfterMs: the run resolves at the mark with backgrounded, the session as it was', async () => {
    const sh = new Shell({ snapshot: 'none' })
    try {
      await sh.run({ command: 'cd /tmp; unset X' })
      const command = 'cd /; export X=1; /bin/sleep 3; echo done'
      const before = Date.now()
      const r = await sh.run({ command, yieldAfterMs: 1000 })
      const took = Date.now() - before
      // At the mark, before the command could have ended.
      assert.ok(took >= 990 && took < 3000, `returned after ${took} ms`)
      assert.equal(typeof r.backgrounded, 'number')
      assert.equal(r.exitCode, undefined)
      assert.match(r.output, new RegExp(`^\\[Command still running after 1 seconds?: it goes on as background job ${r.backgrounded} `))
      const job = sh.jobs().find((j) => j.job === r.backgrounded)
      assert.deepEqual([job?.command, job?.status], [command, 'running'])

      const state = await sh.run({ command: 'echo "$PWD ${X-unset}"' })
      assert.deepEqual([state.output, state.backgrounded], ['/tmp unset\n', undefined])

      const p = await sh.poll(r.backgrounded, { waitMs: HANG_GUARD_MS })
      assert.deepEqual([p.output, p.status, p.exitCode], ['done\n', 'exited', 0])
    } finally {
      sh.close()
    }
  })

  test('the 17th start with 16 running is refused with TooManyJobs, nothing started', async () => {
    const word = uniqueWord('7')
    const sh = new Shell({ snapshot: 'none' })
    try {
      const jobs = []
      for (let i = 0; i < 16; i++) jobs.push(await sh.start({ command: `/bin/sleep 100.${word}` }))
      await expectProcesses(word, 16)
      const err = await failure(() => sh.start({ command: `/bin/sleep 100.${word}` }))
      assert.equal(err.code, 'TooManyJobs')
      assert.match(err.message, /^16 jobs are running in this session/)
      assert.equal(sh.jobs().length, 16)
      await expectProcesses(word, 16)
      // One ended, one more may start.
      assert.equal((await sh.kill(jobs[0])).status, 'killed')
      const next = await sh.start({ command: 'true' })
      assert.ok(next > jobs.at(-1))
    } finally {
      sh.close()
    }
    await expectGone(word)
  })

  test("a 'jobExit' listener that uses its shell does not keep the shell from being collected", async () => {
    // In a child with --expose-gc: a shell dropped unclosed is collected
    // (its jobs killed) even when its listener refers to it.
    const word = uniqueWord('5')
    const script = `
      const { Shell } = require(${JSON.stringify(require.resolve('conch'))})
      const alive = () => require('node:fs').readdirSync('/proc').some((p) => {
        try { return require('node:fs').readFileSync('/proc/' + p + '/cmdline', 'latin1').startsWith('/bin/sleep') &&
          require('node:fs').readFileSync('/proc/' + p + '/cmdline', 'latin1').includes('${word}') } catch { return false }
      })
      ;(async () => {
        await (async () => {
          const sh = new Shell({ snapshot: 'none' })
          sh.on('jobExit', () => sh.jobs())
          await sh.start({ command: '/bin/sleep 100.${word}' })
        })()
        const end = Date.now() + ${HANG_GUARD_MS}
        while (!alive() && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
        if (!alive()) process.exit(2)
        while (alive() && Date.now() < end) {
          globalThis.gc()
          await new Promise((r) => setTimeout(r, 50))
        }
        process.exit(alive() ? 1 : 0)
      })()
    `
    execFileSync(process.execPath, ['--expose-gc', '-e', script], { stdio: 'inherit', timeout: 3 * HANG_GUARD_MS })
    await expectGone(word)
  })
})

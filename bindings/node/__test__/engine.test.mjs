// Engine behaviour seen from Node: the event loop stays free, abort and
// timeout kill what the command started, background jobs never hold a call,
// a dying shell comes back.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { Shell, executeShell, executeBash, closeBashSession } from 'conch'
import {
  HANG_GUARD_MS,
  expectGone,
  expectProcesses,
  settlesInTime,
  tempDir,
  uniqueWord,
  waitFor,
} from './helpers.mjs'

describe('engine', () => {
  const sh = new Shell({ snapshot: 'none' })
  after(() => sh.close())

  test('the event loop keeps running while a command runs', async () => {
    // The command ends only once a timer of the event loop has created the
    // marker: a run that held the JS thread could never end but by its
    // deadline, which would say timedOut.
    const marker = join(tempDir(), 'from-the-event-loop')
    const run = sh.run({
      command: `until [ -e ${marker} ]; do /bin/sleep 0.02; done; echo seen`,
      timeoutMs: HANG_GUARD_MS,
    })
    setTimeout(() => writeFileSync(marker, ''), 10)
    const r = await run
    assert.equal(r.timedOut, false)
    assert.equal(r.exitCode, 0)
    assert.equal(r.output, 'seen\n')
  })

  test('chunks carry ASCII and other text intact, split or not', async () => {
    // 200,000 x's come in pieces; the other lines take the non-ASCII path.
    const chunks = []
    const r = await sh.run(
      { command: "printf 'abc\\n'; printf 'h\\303\\251llo \\342\\234\\223 \\346\\227\\245\\n'; head -c 200000 /dev/zero | tr '\\0' x; printf '\\n\\303\\274\\n'" },
      (c) => chunks.push(c),
    )
    assert.equal(r.exitCode, 0)
    assert.equal(chunks.join(''), `abc\nhéllo ✓ 日\n${'x'.repeat(200000)}\nü\n`)
    assert.ok(chunks.length >= 2, `${chunks.length} chunks`)
  })

  test('chunks come in order and before the promise settles, quick or not', async () => {
    // Ends at once; waits past the JS thread's wait; holds more output than it keeps for the JS thread.
    const cases = [
      ["printf 'a\\n'; printf 'b\\n'", 'a\nb\n'],
      ["printf 'a\\n'; /bin/sleep 0.05; printf 'b\\n'", 'a\nb\n'],
      ["head -c 3000000 /dev/zero | tr '\\0' y; printf '\\nz\\n'", `${'y'.repeat(3000000)}\nz\n`],
    ]
    for (const [command, expected] of cases) {
      const chunks = []
      const r = await sh.run({ command }, (c) => chunks.push(c))
      assert.equal(r.exitCode, 0, command)
      assert.equal(chunks.join(''), expected, command)
    }
  })

  test('a callback that throws rejects the run with what it threw, quick or not', async () => {
    for (const command of ['echo hi', 'echo hi; /bin/sleep 0.05']) {
      const err = new Error(`from the callback: ${command}`)
      await assert.rejects(
        sh.run({ command }, () => {
          throw err
        }),
        (e) => e === err,
      )
      assert.equal((await sh.run({ command: 'echo after' })).output, 'after\n')
    }
  })

  test('AbortController aborts a running command and kills it', async () => {
    const word = uniqueWord('1')
    const ac = new AbortController()
    const run = sh.run({ command: `/bin/sleep 100.${word}`, signal: ac.signal })
    await expectProcesses(word)
    ac.abort()
    // The sleep would hold the call 100 s: settling at all is the abort's doing.
    const r = await settlesInTime(run, 'the aborted run')
    assert.equal(r.cancelled, true)
    assert.equal(r.timedOut, false)
    assert.equal(r.exitCode, undefined)
    assert.match(r.output, /^\[Command cancelled\]\n/)
    await expectGone(word)
  })

  test('an already-aborted signal never spawns anything', async () => {
    const dir = tempDir()
    const marker = join(dir, 'spawned')
    const signal = AbortSignal.abort()
    const r = await sh.run({ command: `touch ${marker}`, signal })
    assert.equal(r.cancelled, true)
    assert.equal(existsSync(marker), false)
    const one = await executeShell({ command: `touch ${marker}`, signal })
    assert.equal(one.cancelled, true)
    const cached = await executeBash(`touch ${marker}`, { signal, sessionKey: `pre-${process.pid}` })
    assert.equal(cached.cancelled, true)
    closeBashSession(`pre-${process.pid}`)
    assert.equal(existsSync(marker), false)
  })

  test('signal: null is no signal; a non-signal is refused', async () => {
    assert.equal((await sh.run({ command: 'echo ok', signal: null })).output, 'ok\n')
    for (const signal of [{}, 5, 'abort']) {
      assert.throws(() => sh.run({ command: 'echo never', signal }), {
        message: /^options\.signal must be an AbortSignal, got (object|number|string)$/,
      })
    }
  })

  test('the signal listener is removed when the call settles', async () => {
    const ac = new AbortController()
    let removed = 0
    const remove = ac.signal.removeEventListener.bind(ac.signal)
    ac.signal.removeEventListener = (...args) => {
      removed++
      return remove(...args)
    }
    for (let i = 0; i < 3; i++) await sh.run({ command: 'true', signal: ac.signal })
    assert.equal(removed, 3)
    ac.abort()
  })

  test('abort() cancels the running command, children included', async () => {
    const word = uniqueWord('2')
    // one in the foreground, one the command put in the background
    const run = sh.run({ command: `sh -c '/bin/sleep 100.${word} & /bin/sleep 100.${word}; wait'` })
    await expectProcesses(word, 2)
    sh.abort()
    const r = await settlesInTime(run, 'the aborted run')
    assert.equal(r.cancelled, true)
    await expectGone(word)
  })

  test('a timeout ends the whole command line and says so', async () => {
    // 3 s: ample time for `before` and for the test to see the sleep alive
    // before the deadline kills it.
    const word = uniqueWord('3')
    const run = sh.run({ command: `echo before; /bin/sleep 100.${word}; echo after`, timeoutMs: 3000 })
    await expectProcesses(word)
    const r = await settlesInTime(run, 'the run past its deadline')
    assert.equal(r.timedOut, true)
    assert.equal(r.cancelled, true)
    assert.equal(r.output, '[Command timed out after 3 seconds]\nbefore\n')
    await expectGone(word)
  })

  test('a background job returns at once, is listed, and dies with close()', async () => {
    const word = uniqueWord('4')
    const s = new Shell({ snapshot: 'none' })
    try {
      // A call that waited for the job would take its 100 s.
      const r = await settlesInTime(s.run({ command: `/bin/sleep 100.${word} & echo started` }), 'the run')
      assert.equal(r.output, 'started\n')
      const [pid] = await expectProcesses(word)
      assert.ok(s.backgroundJobs().includes(pid))
    } finally {
      s.close()
    }
    await expectGone(word)
  })

  test('a timeout and an abort keep the shell and its state', async () => {
    const s = new Shell({ snapshot: 'none' })
    try {
      await s.run({ command: "cd /tmp; export A=1; B=2; f() { echo f; }; alias g='echo g'; shopt -s expand_aliases" })
      const t = await s.run({ command: '/bin/sleep 30; touch never', timeoutMs: 1000 })
      assert.equal(t.timedOut, true)
      assert.equal(t.sessionEnded, false)
      const ac = new AbortController()
      const a = await s.run({ command: 'echo started; /bin/sleep 30; touch never', signal: ac.signal }, (chunk) => {
        if (chunk.includes('started')) ac.abort()
      })
      assert.equal(a.cancelled, true)
      assert.equal(a.sessionEnded, false)
      const r = await s.run({ command: "pwd; echo $A$B; f; g; ls never 2>/dev/null || echo 'no never'" })
      assert.equal(r.output, '/tmp\n12\nf\ng\nno never\n')
      assert.equal(r.sessionReset, false)
    } finally {
      s.close()
    }
  })

  test('exit ends the session; the next run starts afresh in the same cwd', async () => {
    const dir = tempDir()
    const s = new Shell({ snapshot: 'none', cwd: dir })
    try {
      const r = await s.run({ command: 'X=1; exit 4' })
      assert.equal(r.exitCode, 4)
      assert.equal(r.sessionEnded, true)
      const next = await s.run({ command: 'echo "[$X]"; pwd' })
      assert.equal(next.sessionReset, true)
      assert.equal(next.sessionEnded, false)
      assert.match(next.output, /^\[\]\n/)
      assert.ok(next.output.trimEnd().endsWith(dir.split('/').pop()))
      const after = await s.run({ command: 'true' })
      assert.equal(after.sessionReset, false)
    } finally {
      s.close()
    }
  })

  test('close() during a run ends it and kills its processes', async () => {
    const word = uniqueWord('5')
    const s = new Shell({ snapshot: 'none' })
    const chunks = []
    const run = s.run({ command: `echo go; /bin/sleep 100.${word}` }, (c) => chunks.push(c))
    await expectProcesses(word)
    s.close()
    const r = await settlesInTime(run, 'the run close() ended')
    assert.equal(r.cancelled, true)
    assert.equal(chunks.join(''), 'go\n')
    await expectGone(word)
  })

  test('close() while a flood fills the chunk queue does not deadlock', async () => {
    const s = new Shell({ snapshot: 'none' })
    let bytes = 0
    const run = s.run({ command: 'yes conch-flood' }, (c) => {
      bytes += c.length
    })
    assert.ok(await waitFor(() => bytes > 1 << 20), `only ${bytes} bytes of the flood arrived`)
    s.close()
    const r = await settlesInTime(run, 'the flood close() ended')
    assert.equal(r.cancelled, true)
    assert.equal(bytes, r.totalBytes)
  })
})

const require = createRequire(import.meta.url)

describe('nothing outlives a Node host that dies', () => {
  for (const how of ['SIGKILL', 'SIGTERM', 'exit']) {
    test(`killed by ${how}`, async () => {
      const stamp = `1000.${Math.floor(Math.random() * 1e9)}`
      const code = `
        const { Shell } = require(${JSON.stringify(require.resolve('conch'))})
        const sh = new Shell({ snapshot: 'none' })
        ;(async () => {
          await sh.run({ command: '/bin/sleep ${stamp}1 & setsid /bin/sleep ${stamp}2 & ( (/bin/sleep ${stamp}3 &) )' })
          console.log('ready')
          const running = sh.run({ command: '/bin/sleep ${stamp}4' })
          process.stdin.once('data', () => process.exit(0))
          await running
        })()`
      const host = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] })
      try {
        await new Promise((resolve) => host.stdout.once('data', resolve))
        for (const n of [1, 2, 3, 4]) await expectProcesses(`${stamp}${n}`)
        const exited = new Promise((resolve) => host.once('exit', resolve))
        if (how === 'exit') host.stdin.write('x')
        else host.kill(how)
        await settlesInTime(exited, 'the host')
        const died = Date.now()
        for (const n of [1, 2, 3, 4]) await expectGone(`${stamp}${n}`)
        assert.ok(Date.now() - died < 1000, `${Date.now() - died} ms`)
      } finally {
        host.kill('SIGKILL')
      }
    })
  }
})

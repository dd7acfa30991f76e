// One test per misuse once seen to crash the host, lose a descriptor or
// answer with an unreadable error; each ran against the unfixed package.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { readdirSync, readFileSync } from 'node:fs'
import * as conch from 'conch'
import { expectGone, expectProcesses, settlesInTime, tempDir, uniqueWord, waitFor } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { Shell, BashTool, PtySession, ArtifactStore, executeShell, executeBash, closeBashSession } = conch

/** Throws or rejects: the error, whichever way the call reports it. */
async function failure(call) {
  try {
    await call()
  } catch (err) {
    return err
  }
  assert.fail('expected an error')
}

const BAD_NUMBERS = [1e300, Infinity, -Infinity, NaN, -1, 0]

describe('out-of-range numbers are InvalidArgument, never a crash', () => {
  const sh = new Shell({ snapshot: 'none' })
  const pty = new PtySession()
  const key = `regress-${process.pid}`
  const runs = {
    'Shell.run': (timeoutMs) => sh.run({ command: 'true', timeoutMs }),
    executeShell: (timeoutMs) => executeShell({ command: 'true', timeoutMs }),
    executeBash: (timeoutMs) => executeBash('true', { timeoutMs, snapshot: 'none', sessionKey: key }),
    'PtySession.start': (timeoutMs) => pty.start({ command: 'true', timeoutMs }),
  }
  for (const [name, run] of Object.entries(runs)) {
    test(`${name}: timeoutMs`, async () => {
      for (const timeoutMs of BAD_NUMBERS) {
        const err = await failure(() => run(timeoutMs))
        assert.ok(err instanceof Error, `${timeoutMs}`)
        assert.equal(err.code, 'InvalidArgument', `${timeoutMs}: ${err.message}`)
        assert.match(err.message, /^timeoutMs must be .+, got /, `${timeoutMs}`)
      }
    })
  }

  test('counts, sizes and intervals go through the core checkers', async () => {
    const checks = [
      ['head', () => sh.run({ command: 'true', head: -1 })],
      ['tail', () => executeShell({ command: 'true', tail: NaN })],
      ['maxBytes', () => new Shell({ snapshot: 'none', maxBytes: 0 })],
      ['cols', () => pty.start({ command: 'true', cols: -Infinity })],
      ['cols', () => pty.resize(-1, 10)],
      ['rows', () => pty.resize(80, NaN)],
      ['updateIntervalMs', () => new BashTool({ cwd: '/', updateIntervalMs: 1e300 })],
      ['offset', () => new ArtifactStore(tempDir()).read('0', 2.5)],
    ]
    for (const [name, call] of checks) {
      const err = await failure(call)
      assert.equal(err.code, 'InvalidArgument', `${name}: ${err.message}`)
      assert.match(err.message, new RegExp(`^${name} must be .+, got `), name)
    }
  })

  test('cleanup', () => {
    sh.close()
    closeBashSession(key)
  })
})

describe('arguments of the wrong type are named', () => {
  const sh = new Shell({ snapshot: 'none' })
  const pty = new PtySession()
  const tool = new BashTool({ cwd: '/', snapshot: 'none' })

  test('a callback that is not a function', async () => {
    const cases = [
      ['onChunk must be a function, got number', () => sh.run({ command: 'echo hi' }, 5)],
      ['onChunk must be a function, got object', () => executeShell({ command: 'echo hi' }, {})],
      ['onChunk must be a function, got string', () => pty.start({ command: 'echo hi' }, 'x')],
      ['options.onChunk must be a function, got number', () => executeBash('echo hi', { onChunk: 5 })],
      ['options.onUpdate must be a function, got number', () => tool.execute({ command: 'true' }, { onUpdate: 5 })],
      ['options.signal must be an AbortSignal, got number', () => sh.run({ command: 'true', signal: 5 })],
      ['options.signal must be an AbortSignal, got string',
        () => tool.execute({ command: 'true' }, { signal: 'abort' })],
    ]
    for (const [message, call] of cases) {
      const err = await failure(call)
      assert.ok(err instanceof TypeError, message)
      assert.equal(err.message, message)
      assert.equal(err.code, 'InvalidArg')
    }
  })

  test('the addon itself refuses a non-function onChunk before a run starts', async () => {
    // Through the generated loader, without the package's checks: the run
    // must not start and hold the shell's place (a later run would wait
    // for ever).
    const native = require('../index.js')
    const raw = new native.Shell({ snapshot: 'none' })
    const err = await failure(() => raw.run({ command: 'echo hi' }, 5))
    assert.equal(err.message, 'onChunk must be a function, got number')
    const r = await settlesInTime(raw.run({ command: 'echo after' }), 'a run after the refused one')
    assert.equal(r.output, 'after\n')
    raw.close()
  })

  test('options that are not an object', async () => {
    const cases = [
      ['options must be an object or undefined, got number', () => new Shell(5)],
      ['options must be an object or undefined, got string', () => new Shell('x')],
      ['options must be an object, got array', () => new BashTool([])],
      ['options must be an object, got null', () => sh.run(null)],
      ['options must be an object, got number', () => executeShell(1)],
      ['options must be an object or undefined, got number', () => executeBash('true', 5)],
      ['options must be an object, got boolean', () => pty.start(true)],
      ['args must be an object, got string', () => tool.execute('true')],
      ['options must be an object or undefined, got number', () => tool.execute({ command: 'true' }, 5)],
      ['env: invalid type: integer `5`, expected a mapping of str to str', () => sh.run({ command: 'true', env: 5 })],
      ['envPolicy: invalid type: string "none", expected an object with `inherit` and `exclude`', () => new Shell({ envPolicy: 'none' })],
    ]
    for (const [message, call] of cases) {
      const err = await failure(call)
      assert.ok(err instanceof TypeError, message)
      assert.equal(err.message, message)
    }
  })

  test('a class called without new', () => {
    for (const Class of [Shell, BashTool, PtySession, ArtifactStore]) {
      assert.throws(() => Class({ cwd: '/' }), {
        name: 'TypeError',
        message: `Class constructor ${Class.name} cannot be invoked without 'new'`,
      })
    }
  })

  test('cleanup', () => {
    sh.close()
    tool.close()
  })
})

/** The descriptors this process has open. */
function descriptors() {
  return readdirSync('/proc/self/fd').length
}

describe('close and dispose', () => {
  test('close() releases every descriptor of a shell still referenced', async () => {
    const before = descriptors()
    const sh = new Shell({ snapshot: 'none' })
    await sh.run({ command: 'true' })
    assert.ok(descriptors() > before)
    sh.close()
    assert.equal(descriptors(), before)
    const err = await failure(() => sh.run({ command: 'true' }))
    assert.equal(err.code, 'Closed')
    assert.equal(err.message, 'shell is closed')
    assert.deepEqual(sh.backgroundJobs(), [])
    sh.abort()
    sh.close()
  })

  test('Shell: Symbol.dispose and Symbol.asyncDispose close it', async () => {
    for (const dispose of [(s) => s[Symbol.dispose](), (s) => s[Symbol.asyncDispose]()]) {
      const sh = new Shell({ snapshot: 'none' })
      await dispose(sh)
      assert.equal((await failure(() => sh.run({ command: 'true' }))).code, 'Closed')
    }
  })

  test('BashTool: disposing of it closes its own session', async () => {
    for (const sym of [Symbol.dispose, Symbol.asyncDispose]) {
      const word = uniqueWord('71')
      const tool = new BashTool({ cwd: '/', snapshot: 'none', sessionKey: `dispose-${word}` })
      const running = tool.execute({ command: `/bin/sleep 100.${word}` }).catch((e) => e)
      await expectProcesses(word)
      await tool[sym]()
      await expectGone(word)
      assert.equal((await running).name, 'ToolError')
    }
  })

  test('PtySession: disposing of it kills what runs; an idle one is no error', async () => {
    const pty = new PtySession()
    pty[Symbol.dispose]()
    const word = uniqueWord('72')
    const result = pty.start({ command: `/bin/sleep 100.${word}` })
    await expectProcesses(word)
    assert.ok(await waitFor(() => pty.isRunning()))
    await pty[Symbol.asyncDispose]()
    assert.equal((await settlesInTime(result, 'the disposed PTY run')).cancelled, true)
  })
})

test('npm run build is the release build, the one the tests and the packages use', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url)))
  assert.equal(pkg.scripts.build, 'napi build --platform --release')
  assert.equal(pkg.scripts['build:debug'], 'napi build --platform')
  const script = readFileSync(new URL('../../../scripts/build.sh', import.meta.url), 'utf8')
  assert.match(script, /^\(cd bindings\/node && npm run --silent build\)$/m)
})

test('fifty parallel runs leave threads and descriptors as they were', { timeout: 60_000 }, async () => {
  const threads = () => readdirSync('/proc/self/task').length
  const fds = () => readdirSync('/proc/self/fd').length
  // One run first, so what the process starts once (libuv's pool, the
  // addon's first thread) is in the baseline.
  const warm = new Shell({ snapshot: 'none' })
  await warm.run({ command: 'true' })
  warm.close()
  const [threadsBefore, fdsBefore] = [threads(), fds()]
  const shells = Array.from({ length: 50 }, () => new Shell({ snapshot: 'none' }))
  const results = await Promise.all(shells.map((s) => s.run({ command: '/bin/sleep 0.2; echo done' })))
  assert.deepEqual(results.map((r) => r.output), Array(50).fill('done\n'))
  assert.ok(threads() > threadsBefore + 10, `the runs ran in parallel (${threads()} threads)`)
  for (const s of shells) s.close()
  // Idle helper threads end after 10 s.
  const deadline = Date.now() + 20_000
  while (threads() > threadsBefore + 2 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  assert.ok(threads() <= threadsBefore + 2, `threads: ${threadsBefore} before, ${threads()} after`)
  assert.ok(fds() <= fdsBefore + 2, `descriptors: ${fdsBefore} before, ${fds()} after`)
})

describe('a closed BashTool is closed for good', () => {
  test('execute, async starts and its job tool reject with Closed, not on a fresh bash', async () => {
    const tool = new BashTool({ cwd: tempDir('closed-tool'), snapshot: 'none', sessionKey: `closed-${process.pid}` })
    const jobs = new conch.JobTool(tool)
    assert.equal((await tool.execute({ command: 'export MARK=kept; echo $MARK' })).content[0].text, 'kept')
    tool.close()
    tool.close()
    for (const call of [
      () => tool.execute({ command: 'echo $MARK' }),
      () => tool.execute({ command: 'echo started', async: true }),
      () => jobs.execute({ op: 'list' }),
    ]) {
      const err = await failure(call)
      assert.equal(err.code, 'Closed', err.message)
      assert.equal(err.message, 'bash tool is closed')
    }
  })
})

describe('a nested run from a chunk callback is refused, quick or slow', () => {
  for (const [kind, command] of [['quick', 'echo hi'], ['slow', 'echo hi; /bin/sleep 0.3; echo bye']]) {
    test(kind, async () => {
      const sh = new Shell({ snapshot: 'none' })
      try {
        let nested
        await sh.run({ command }, () => {
          if (!nested) nested = failure(() => sh.run({ command: 'echo nested' }))
        })
        const err = await nested
        assert.equal(err.code, 'InvalidArgument', err.message)
        assert.match(err.message, /from inside a callback/)
      } finally {
        sh.close()
      }
    })
  }
})

test('env: null is the default in executeBash and PtySession.start; a wrong type names it', async () => {
  const key = `env-null-${process.pid}`
  try {
    assert.equal((await executeBash('echo ok', { env: null, sessionEnv: null, snapshot: 'none', sessionKey: key })).output, 'ok\n')
    const err = await failure(() => executeBash('true', { env: 5, snapshot: 'none', sessionKey: key }))
    assert.ok(err instanceof TypeError && err.code === 'InvalidArg', `${err.code}: ${err.message}`)
    assert.match(err.message, /env/)
  } finally {
    closeBashSession(key)
  }
  const pty = new PtySession()
  assert.equal((await pty.start({ command: 'echo ok', env: null })).output.trim(), 'ok')
})

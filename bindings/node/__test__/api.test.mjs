// The API of the package: names, options, results, errors, chunk delivery.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { readFileSync, existsSync, realpathSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import * as conch from 'conch'
import { settlesInTime, tempDir } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { Shell, executeShell, executeBash, closeBashSession, ArtifactStore } = conch

describe('package', () => {
  test('CommonJS and ESM entries export the same objects', () => {
    const cjs = require('conch')
    assert.deepEqual(Object.keys(conch).filter((k) => k !== 'default').sort(), Object.keys(cjs).sort())
    for (const name of Object.keys(cjs)) assert.equal(conch[name], cjs[name], name)
  })

  test('every export of the addon is exported by the package', () => {
    const native = require('../index.js')
    const cjs = require('conch')
    // The classes are JS subclasses of the addon's (`new` enforced, dispose
    // symbols), except those only the addon makes (the remote ones, whose
    // prototypes conch.js extends); the functions with callbacks or
    // checked arguments are wrapped (argument types named); everything else
    // is the addon's own.
    const wrapped = ['executeShell', 'executeBash', 'connect']
    const madeByTheAddon = [
      'Remote', 'RemoteArtifactStore', 'RemoteFiles', 'RemoteJobTool', 'RemotePty', 'RemoteShell', 'RemoteTool',
    ]
    for (const name of Object.keys(native).filter((k) => !k.startsWith('__'))) {
      if (madeByTheAddon.includes(name)) {
        assert.equal(cjs[name], native[name], name)
      } else if (/^[A-Z]/.test(name)) {
        assert.ok(cjs[name].prototype instanceof native[name], name)
        assert.equal(cjs[name].name, name)
      } else if (wrapped.includes(name)) {
        assert.equal(typeof cjs[name], 'function', name)
      } else {
        assert.equal(cjs[name], native[name], name)
      }
    }
  })

  test('the documented public names exist', () => {
    for (const name of [
      'Shell', 'executeShell', 'executeBash', 'normalizeBashCommand', 'applyHeadTail',
      'checkBashInterception', 'sanitizeText', 'ArtifactStore',
      'BashTool', 'PtySession', 'ToolError', 'ToolAbortError', 'BlockedError',
    ]) {
      assert.equal(typeof conch[name], 'function', name)
    }
    for (const method of ['run', 'abort', 'backgroundJobs', 'jobs', 'poll', 'close']) {
      assert.equal(typeof Shell.prototype[method], 'function', method)
    }
    assert.equal(typeof conch.BashTool.prototype.execute, 'function')
    for (const method of ['start', 'write', 'resize', 'kill', 'screenText']) {
      assert.equal(typeof conch.PtySession.prototype[method], 'function', method)
    }
  })

  test('error classes are Error subclasses with name, code and their fields', () => {
    const blocked = new conch.BlockedError('Blocked: x', 'read', { meta: 1 })
    assert.ok(blocked instanceof conch.ToolError)
    assert.ok(blocked instanceof Error)
    assert.equal(blocked.name, 'BlockedError')
    assert.equal(blocked.suggestedTool, 'read')
    assert.deepEqual(blocked.details, { meta: 1 })
    const abort = new conch.ToolAbortError('Command aborted')
    assert.ok(abort instanceof Error)
    assert.ok(!(abort instanceof conch.ToolError))
    assert.equal(abort.name, 'ToolAbortError')
  })
})

describe('Shell', () => {
  const sh = new Shell({ snapshot: 'none' })
  after(() => sh.close())

  test('runs a command and returns the result in camelCase', async () => {
    const r = await sh.run({ command: 'echo out; echo err >&2; exit_code_is() { return 3; }; exit_code_is' })
    assert.equal(r.output, 'out\nerr\n')
    assert.equal(r.exitCode, 3)
    assert.equal(r.cancelled, false)
    assert.equal(r.timedOut, false)
    assert.equal(r.truncated, false)
    assert.equal(r.totalLines, 2)
    assert.equal(r.totalBytes, 8)
    assert.equal(r.outputLines, 2)
    assert.equal(r.outputBytes, 8)
    assert.equal(r.artifactId, undefined)
    assert.equal(r.sessionReset, false)
    assert.equal(typeof r.workingDir, 'string')
  })

  test('state carries over between runs', async () => {
    const dir = realpathSync(tempDir())
    await sh.run({ command: `cd ${dir} && export CONCH_X=41 && f() { echo $((CONCH_X + 1)); }` })
    const r = await sh.run({ command: 'pwd; f' })
    assert.equal(r.output, `${dir}\n42\n`)
    assert.equal(r.workingDir, dir)
  })

  test('per-run env and cwd apply to that run only', async () => {
    const dir = realpathSync(tempDir())
    const before = (await sh.run({ command: 'pwd' })).output
    const r = await sh.run({ command: 'echo "$ONLY_HERE"; pwd', env: { ONLY_HERE: 'yes' }, cwd: dir })
    assert.equal(r.output, `yes\n${dir}\n`)
    const again = await sh.run({ command: 'echo "[$ONLY_HERE]"; pwd' })
    assert.equal(again.output, `[]\n${before}`)
  })

  test('onChunk receives the whole output, in order, before the promise settles', async () => {
    const chunks = []
    const r = await sh.run({ command: 'for i in $(seq 1 2000); do echo line$i; done' }, (c) => chunks.push(c))
    const expected = Array.from({ length: 2000 }, (_, i) => `line${i + 1}\n`).join('')
    assert.equal(chunks.join(''), expected)
    assert.equal(r.totalLines, 2000)
  })

  test('head and tail keep lines of the complete stream', async () => {
    const r = await sh.run({ command: 'seq 1 100', head: 10, tail: 3 })
    assert.equal(r.output, '8\n9\n10\n')
  })

  test('output past maxBytes is truncated and spilled whole to an artifact', async () => {
    const dir = tempDir()
    const small = new Shell({ snapshot: 'none', maxBytes: 1000, artifactsDir: dir })
    try {
      const r = await small.run({ command: 'seq 1 5000' })
      assert.equal(r.truncated, true)
      assert.equal(r.totalLines, 5000)
      assert.ok(r.outputBytes <= 1000)
      assert.ok(r.output.endsWith('4999\n5000\n'))
      assert.equal(typeof r.artifactId, 'string')
      const store = new ArtifactStore(dir)
      const full = store.resolve(`artifact://${r.artifactId}`)
      assert.equal(full, Array.from({ length: 5000 }, (_, i) => `${i + 1}\n`).join(''))
      assert.equal(store.read(r.artifactId, 4998), '4999\n5000\n')
    } finally {
      small.close()
    }
  })

  test('a throwing onChunk aborts the run and rejects with the thrown value', async () => {
    // The command never ends by itself: only the abort the throw causes
    // can settle the call. The callback holds the JS thread a while before
    // it throws, so more ticks are queued for it by then: none reaches it.
    const boom = new Error('stop reading')
    let calls = 0
    await assert.rejects(
      settlesInTime(
        sh.run({ command: "sh -c 'while :; do echo tick; /bin/sleep 0.01; done'" }, () => {
          calls++
          const until = Date.now() + 300
          while (Date.now() < until);
          throw boom
        }),
        'the run the callback aborted',
      ),
      (err) => err === boom,
    )
    assert.equal(calls, 1)
    const r = await sh.run({ command: 'echo still alive' })
    assert.equal(r.output, 'still alive\n')
  })

  test('a thrown non-Error value is what the promise rejects with', async () => {
    await assert.rejects(
      sh.run({ command: 'echo x' }, () => {
        throw 'plain string'
      }),
      (err) => err === 'plain string',
    )
  })

  test('a non-Error thrown on the JS thread survives the hand-over to a pooled thread', async () => {
    // The callback holds the JS thread past the time it drives a call, so
    // the call, still running, goes on on a pooled thread carrying what
    // was thrown. The command outlives the abort's first signal.
    for (const thrown of ['plain string', 42, null]) {
      await assert.rejects(
        settlesInTime(
          sh.run({ command: "echo x; sh -c 'trap \"\" INT; exec /bin/sleep 0.3'" }, () => {
            const until = Date.now() + 10
            while (Date.now() < until) {}
            throw thrown
          }),
          'the run the callback aborted',
        ),
        (err) => err === thrown,
      )
    }
    const r = await sh.run({ command: 'echo still alive' })
    assert.equal(r.output, 'still alive\n')
  })

  test('bad options are InvalidArgument errors', async () => {
    assert.throws(() => sh.run({ command: 'true', timeoutMs: -5 }), { code: 'InvalidArgument' })
    assert.throws(() => sh.run({ command: 'true', head: 1.5 }), { code: 'InvalidArgument' })
    assert.throws(() => new Shell({ envPolicy: { inherit: 'some' } }), { code: 'InvalidArgument' })
    // An empty snapshot path is a mistake, refused with the core's text on every face.
    assert.throws(() => new Shell({ snapshot: '' }), {
      code: 'InvalidArgument',
      message: 'snapshot must be "auto", "none" or the path of a snapshot file, got ""',
    })
    await assert.rejects(sh.run({ command: 'true', cwd: '/no/such/dir/for/conch' }), (err) => {
      assert.ok(err instanceof Error)
      assert.equal(err.code, 'InvalidArgument')
      assert.match(err.message, /\/no\/such\/dir\/for\/conch/)
      return true
    })
    await assert.rejects(sh.run({ command: 'echo \0' }), { code: 'InvalidArgument' })
  })

  test('a bad shell path throws Spawn', () => {
    assert.throws(() => new Shell({ shell: '/no/such/bash' }), { code: 'Spawn' })
  })

  test('a closed shell rejects runs with Closed', async () => {
    const s = new Shell({ snapshot: 'none' })
    s.close()
    s.close()
    await assert.rejects(s.run({ command: 'true' }), { code: 'Closed' })
    assert.deepEqual(s.backgroundJobs(), [])
  })

  test('reset starts the session afresh in its start directory', async () => {
    const dir = realpathSync(tempDir())
    const s = new Shell({ snapshot: 'none', cwd: dir })
    try {
      await s.run({ command: 'cd / && export LEFT=1' })
      const job = await s.start({ command: '/bin/sleep 60' })
      // The second reset takes the spare the first one's bash forked.
      for (let i = 0; i < 2; i++) {
        await s.reset()
        const r = await s.run({ command: 'echo ${LEFT:-unset}; pwd; [[ $$ == $BASHPID ]] && echo own' })
        assert.equal(r.output, `unset\n${dir}\nown\n`)
        assert.equal(r.sessionReset, false)
        assert.deepEqual(await s.jobs(), [])
        await s.run({ command: 'export LEFT=1' })
      }
      await assert.rejects(s.poll(job), { code: 'NotFound' })
    } finally {
      s.close()
    }
    await assert.rejects(s.reset(), { code: 'Closed' })
  })

  test('concurrent runs queue in order', async () => {
    // Run 1 holds the session until the test lets it go; runs 2-4 are
    // submitted meanwhile. Each run appends its number to a shell variable
    // and prints it, so each output shows which runs executed before it in
    // this bash. (The order in which the promises settle is not asserted:
    // a run's promise settles after its chunks reach JS, and the next run
    // may already have ended by then.)
    const go = join(tempDir(), 'go')
    let held
    const heldSeen = new Promise((resolve) => {
      held = resolve
    })
    const settled = []
    let firstOutput = ''
    const first = sh.run(
      { command: `ORDER=1; echo held; until [ -e ${go} ]; do /bin/sleep 0.02; done; echo "$ORDER"` },
      (c) => {
        firstOutput += c
        if (firstOutput.startsWith('held\n')) held()
      },
    )
    const runs = [first]
    for (const i of [2, 3, 4]) runs.push(sh.run({ command: `ORDER="$ORDER ${i}"; echo "$ORDER"` }))
    runs.forEach((run, i) => run.then(() => settled.push(i + 1)))
    await settlesInTime(heldSeen, 'run 1 printing held')
    assert.deepEqual(settled, [], 'no run settled while run 1 holds the session')
    writeFileSync(go, '')
    const outputs = (await settlesInTime(Promise.all(runs), 'the queued runs')).map((r) => r.output)
    assert.deepEqual(outputs, ['held\n1\n', '1 2\n', '1 2 3\n', '1 2 3 4\n'])
  })

  test('session env and envPolicy reach the shell', async () => {
    process.env.CONCH_TEST_SECRET_TOKEN = 'hidden'
    const s = new Shell({
      snapshot: 'none',
      env: { GREETING: 'hello' },
      envPolicy: { exclude: ['*SECRET*'] },
    })
    try {
      const r = await s.run({ command: 'echo "$GREETING [$CONCH_TEST_SECRET_TOKEN] $PAGER"' })
      assert.equal(r.output, 'hello [] cat\n')
    } finally {
      s.close()
      delete process.env.CONCH_TEST_SECRET_TOKEN
    }
  })
})

describe('executeShell', () => {
  test('runs a fresh process per call', async () => {
    const chunks = []
    const r = await executeShell({ command: 'X=1; echo $X; echo $0' , shell: '/bin/sh' }, (c) => chunks.push(c))
    assert.equal(r.output, '1\n/bin/sh\n')
    assert.equal(chunks.join(''), r.output)
    assert.equal(r.exitCode, 0)
    const again = await executeShell({ command: 'echo "[$X]"' })
    assert.equal(again.output, '[]\n')
  })

  test('exit status and timeout', async () => {
    assert.equal((await executeShell({ command: 'exit 7' })).exitCode, 7)
    // A deadline far inside the sleep: it ends the command whatever the
    // load, and a sub-second deadline reads in fractional seconds.
    const r = await executeShell({ command: '/bin/sleep 10', timeoutMs: 200 })
    assert.equal(r.timedOut, true)
    assert.equal(r.cancelled, true)
    assert.equal(r.exitCode, undefined)
    assert.match(r.output, /^\[Command timed out after 0\.2 seconds\]\n/)
  })
})

describe('executeBash', () => {
  test('calls with the same sessionKey share a session', async () => {
    const sessionKey = `api-test-${process.pid}`
    try {
      await executeBash('export SHARED=yes; cd /', { sessionKey })
      const chunks = []
      const r = await executeBash('echo "$SHARED"; pwd', { sessionKey, onChunk: (c) => chunks.push(c) })
      assert.equal(r.output, 'yes\n/\n')
      assert.equal(chunks.join(''), r.output)
      const other = await executeBash('echo "[$SHARED]"', { sessionKey: `${sessionKey}-other` })
      assert.equal(other.output, '[]\n')
      closeBashSession(`${sessionKey}-other`)
    } finally {
      closeBashSession(sessionKey)
    }
    const fresh = await executeBash('echo "[$SHARED]"', { sessionKey })
    assert.equal(fresh.output, '[]\n')
    closeBashSession(sessionKey)
  })

  test('works without options', async () => {
    const r = await executeBash('echo plain')
    assert.equal(r.output, 'plain\n')
  })
})

describe('ArtifactStore', () => {
  test('processDefault is where a shell without artifactsDir spills, locked while the process lives', async () => {
    const sh = new Shell({ cwd: tempDir(), snapshot: 'none', maxBytes: 1000 })
    try {
      const r = await sh.run({ command: 'seq 1 2000' })
      const store = ArtifactStore.processDefault()
      assert.equal(store.resolve(`artifact://${r.artifactId}`), Array.from({ length: 2000 }, (_, i) => `${i + 1}\n`).join(''))
      assert.equal(basename(dirname(store.dir)), `conch-${process.getuid()}`)
      assert.ok(existsSync(join(store.dir, '.lock')))
    } finally {
      sh.close()
    }
  })

  test('allocates sequential ids and reads them back', () => {
    const dir = tempDir()
    const store = new ArtifactStore(join(dir, 'a'))
    const a = store.allocate('bash')
    const b = store.allocate('bash')
    assert.deepEqual([a.id, b.id], ['0', '1'])
    assert.equal(a.url, 'artifact://0')
    assert.equal(a.path, join(dir, 'a', '0.bash.log'))
    assert.equal(store.dir, join(dir, 'a'))
    // Allocating reserves the id as an empty file (no other process can take it).
    assert.equal(readFileSync(a.path, 'utf8'), '')
    assert.equal(store.resolve('artifact://1'), '')
    assert.throws(() => store.resolve('artifact://2'), { code: 'NotFound', message: 'Artifact 2 not found. Available: 0, 1' })
    assert.throws(() => store.allocate('../x'), { code: 'InvalidArgument' })
    assert.throws(() => store.read('0', -1), { code: 'InvalidArgument' })
    // What a writer puts at the allocated path is what the store reads back.
    writeFileSync(a.path, 'one\ntwo\nthree\n')
    assert.equal(readFileSync(join(dir, 'a', '0.bash.log'), 'utf8'), 'one\ntwo\nthree\n')
    assert.equal(store.resolve('artifact://0'), 'one\ntwo\nthree\n')
    assert.equal(store.read('0', 1, 1), 'two\n')
    assert.equal(store.read('artifact://0', 2), 'three\n')
    assert.throws(() => store.resolve('artifact://7'), { code: 'NotFound', message: 'Artifact 7 not found. Available: 0, 1' })
  })
})

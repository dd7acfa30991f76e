// The `engine` option and `shell.engine()`: which loop runs the commands
// inside bash (the loop builtin or the eval loop), as chosen and as the two
// differ, locally and through `conch serve`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { BashTool, Shell, closeBashSession, connect, executeBash } from 'conch'
import { STDIO_SERVER, tempDir } from './helpers.mjs'

// The loop a session runs when nothing chooses it: `CONCH_ENGINE` (the test
// command runs every suite once with `eval`), else the builtin.
const EXPECTED = process.env.CONCH_ENGINE || 'builtin'

// How each loop words a syntax error: the builtin runs a command as
// `bash -c` input, the eval loop through `eval`.
const SYNTAX_ERROR = { builtin: 'bash: -c: line 1: ', eval: 'bash: eval: line 1: ' }

test('the default engine is the expected one', async () => {
  const sh = new Shell({ cwd: tempDir(), snapshot: 'none' })
  try {
    assert.equal(await sh.engine(), EXPECTED)
    assert.equal((await sh.run({ command: 'echo ok' })).output, 'ok\n')
    assert.equal(await sh.engine(), EXPECTED)
  } finally {
    sh.close()
  }
})

for (const engine of ['builtin', 'eval']) {
  test(`engine '${engine}' runs that loop`, async () => {
    const sh = new Shell({ cwd: tempDir(), snapshot: 'none', engine })
    try {
      assert.equal(await sh.engine(), engine)
      const r = await sh.run({ command: 'if then' })
      assert.equal(r.exitCode, 2)
      assert.ok(r.output.startsWith(`${SYNTAX_ERROR[engine]}syntax error`), r.output)
    } finally {
      sh.close()
    }
  })
}

test("engine 'auto' is the default", async () => {
  const sh = new Shell({ cwd: tempDir(), snapshot: 'none', engine: 'auto' })
  try {
    assert.equal(await sh.engine(), EXPECTED)
  } finally {
    sh.close()
  }
})

test('a bad engine is a clear error', () => {
  // A word the option does not take, as any enum option's: named, with the
  // words it takes.
  assert.throws(() => new Shell({ snapshot: 'none', engine: 'bash' }), {
    name: 'TypeError',
    code: 'InvalidArg',
    message: 'engine: unknown variant `bash`, expected one of `auto`, `builtin`, `eval`',
  })
  assert.throws(() => new Shell({ snapshot: 'none', engine: 1 }), { name: 'TypeError', code: 'InvalidArg' })
})

test('a closed shell rejects with Closed', async () => {
  const sh = new Shell({ snapshot: 'none' })
  sh.close()
  await assert.rejects(sh.engine(), { code: 'Closed' })
})

test('the engine is read while a run goes on', async () => {
  const sh = new Shell({ cwd: tempDir(), snapshot: 'none' })
  try {
    const seen = []
    const run = sh.run({ command: 'echo one; /bin/sleep 0.2; echo two' }, () => {
      seen.push(sh.engine())
    })
    await run
    assert.ok(seen.length > 0)
    assert.deepEqual(new Set(await Promise.all(seen)), new Set([EXPECTED]))
  } finally {
    sh.close()
  }
})

test('a remote shell tells its engine', async () => {
  const remote = await connect(STDIO_SERVER)
  try {
    const sh = await remote.shell({ cwd: tempDir(), snapshot: 'none' })
    assert.equal(await sh.engine(), EXPECTED)
    await sh.close()
    await assert.rejects(sh.engine(), { code: 'Closed' })
    for (const engine of ['builtin', 'eval']) {
      const chosen = await remote.shell({ cwd: tempDir(), snapshot: 'none', engine })
      assert.equal(await chosen.engine(), engine)
      const r = await chosen.run({ command: 'if then' })
      assert.ok(r.output.startsWith(SYNTAX_ERROR[engine]), r.output)
      await chosen.close()
    }
    await assert.rejects(remote.shell({ engine: 'bash' }), {
      name: 'TypeError',
      message: 'engine: unknown variant `bash`, expected one of `auto`, `builtin`, `eval`',
    })
  } finally {
    remote.close()
  }
})

for (const engine of ['builtin', 'eval']) {
  test(`the bash tool and executeBash take engine '${engine}'`, async () => {
    const tool = new BashTool({ cwd: tempDir(), snapshot: 'none', engine, sessionKey: `engine-tool-${engine}-${process.pid}` })
    try {
      await assert.rejects(tool.execute({ command: 'if then' }), (e) => {
        assert.ok(e.message.startsWith(`${SYNTAX_ERROR[engine]}syntax error`), e.message)
        return true
      })
    } finally {
      tool.close()
    }
    const sessionKey = `engine-execute-bash-${engine}-${process.pid}`
    try {
      const r = await executeBash('if then', { sessionKey, snapshot: 'none', engine })
      assert.ok(r.output.startsWith(`${SYNTAX_ERROR[engine]}syntax error`), r.output)
    } finally {
      closeBashSession(sessionKey)
    }
  })
}

test('the bash tool refuses a bad engine with the words it takes', () => {
  assert.throws(() => new BashTool({ cwd: tempDir(), engine: 'bash' }), /engine must be "auto", "builtin" or "eval"/)
})

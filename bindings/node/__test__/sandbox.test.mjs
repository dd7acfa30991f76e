// The `sandbox` option of the Node face. Replays
// tests/vectors/sandbox_options.json (also replayed by the C and Python
// suites, keys in snake_case there, camelCase here): a policy is read into
// the core's, every value checked by the core's parser under its Node name
// (`sandbox.limits.cpuSeconds`). Then the sandbox at work on a real
// session: writes outside the allowed paths and network connections are
// refused.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { BashTool, PtySession, Shell, ToolError, closeBashSession, executeBash, executeShell } from 'conch'
import { tempDir, vectorsPath } from './helpers.mjs'

const camel = (key) => key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

/** A vector's policy with Node's keys (the keys of `limits` too). */
function nodePolicy(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [camel(k), k === 'limits' ? nodePolicy(v) : v]),
  )
}

/** The Node name of an option of the vectors: `sandbox.limits.cpuSeconds`, an index `[i]`. */
function optionName(path) {
  return path.reduce((name, part) => (typeof part === 'number' ? `${name}[${part}]` : `${name}.${camel(part)}`), 'sandbox')
}

function cases() {
  const path = vectorsPath('sandbox_options')
  assert.ok(existsSync(path), 'tests/vectors/sandbox_options.json is missing')
  const loaded = JSON.parse(readFileSync(path, 'utf8'))
  assert.ok(loaded.length > 0)
  return loaded
}

test('sandbox_options vectors', async (t) => {
  const cwd = tempDir()
  for (const c of cases()) {
    await t.test(c.name, () => {
      const options = { cwd, snapshot: 'none', sandbox: nodePolicy(c.sandbox) }
      if (c.error) {
        assert.throws(() => new Shell(options), {
          code: 'InvalidArgument',
          message: `${optionName(c.error.option)} ${c.error.message}`,
        })
        return
      }
      assert.equal(c.expect, 'ok')
      let shell
      try {
        shell = new Shell(options)
      } catch (err) {
        // Read, but this kernel cannot enforce it: also an accepted value.
        assert.equal(err.code, 'SandboxUnavailable', err.message)
        return
      }
      shell.close()
    })
  }
})

test('what only Node can pass is refused by name', () => {
  const cwd = tempDir()
  for (const [sandbox, message] of [
    [{ allow_tcp_ports: [80] }, 'sandbox.allow_tcp_ports is not an option'],
    [{ limits: { cpu_seconds: 1 } }, 'sandbox.limits.cpu_seconds is not an option'],
    [{ limits: { memoryBytes: 1.5 } }, 'sandbox.limits.memoryBytes must be a whole number >= 1, got 1.5'],
    [{ allowTcpPorts: [80.5] }, 'sandbox.allowTcpPorts[0] must be a TCP port, 1 to 65535, got 80.5'],
  ]) {
    assert.throws(() => new Shell({ cwd, snapshot: 'none', sandbox }), { code: 'InvalidArgument', message })
  }
  assert.throws(() => new Shell({ cwd, snapshot: 'none', sandbox: 5 }), {
    name: 'TypeError',
    code: 'InvalidArg',
    message: 'sandbox: invalid type: integer `5`, expected a sandbox policy (an object), true, false or null',
  })
  assert.throws(() => new Shell({ cwd, snapshot: 'none', sandbox: { writable: '/tmp' } }), {
    name: 'TypeError',
    code: 'InvalidArg',
    message: 'sandbox.writable: invalid type: string "/tmp", expected a sequence',
  })
})

test('a write outside the allowed paths is refused, inside it works', async () => {
  const root = tempDir()
  const [work, outside, extra] = ['work', 'outside', 'extra'].map((n) => join(root, n))
  for (const d of [work, outside, extra]) mkdirSync(d)
  const shell = new Shell({ cwd: work, snapshot: 'none', sandbox: { writable: [extra] } })
  try {
    const inside = await shell.run({ command: 'echo in > inside.txt && cat inside.txt' })
    assert.deepEqual([inside.exitCode, inside.output], [0, 'in\n'])
    assert.equal((await shell.run({ command: `echo x > ${extra}/f && touch "$TMPDIR/t"` })).exitCode, 0)
    const refused = await shell.run({ command: `echo out > ${outside}/f` })
    assert.notEqual(refused.exitCode, 0)
    assert.match(refused.output, /Read-only file system/)
  } finally {
    shell.close()
  }
  assert.ok(!existsSync(join(outside, 'f')))
  assert.equal(readFileSync(join(extra, 'f'), 'utf8'), 'x\n')
})

test('network deny refuses a TCP connect to a local server', async () => {
  const server = createServer((socket) => socket.end())
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const connect = `exec 3<>/dev/tcp/127.0.0.1/${server.address().port} && echo connected`
  const cwd = tempDir()
  try {
    for (const [sandbox, expected] of [
      [undefined, true], // the control: no sandbox
      [true, false],
      [{ network: 'allow' }, true],
    ]) {
      const shell = new Shell({ cwd, snapshot: 'none', sandbox })
      try {
        const r = await shell.run({ command: connect })
        assert.equal(r.output === 'connected\n', expected, `${JSON.stringify(sandbox)}: ${r.output}`)
      } finally {
        shell.close()
      }
    }
  } finally {
    server.close()
  }
})

test('executeShell and PtySession take the same sandbox', async () => {
  const root = tempDir()
  const [work, outside] = ['work', 'outside'].map((n) => join(root, n))
  for (const d of [work, outside]) mkdirSync(d)
  const r = await executeShell({ command: `echo in > one && echo out > ${outside}/one`, cwd: work, sandbox: true })
  assert.notEqual(r.exitCode, 0)
  assert.match(r.output, /Read-only file system/)
  assert.ok(existsSync(join(work, 'one')) && !existsSync(join(outside, 'one')))
  assert.throws(() => executeShell({ command: 'true', sandbox: { network: 'none' } }), {
    code: 'InvalidArgument',
    message: /^sandbox\.network must be/,
  })
  const pty = new PtySession()
  const p = await pty.start({ command: `echo out > ${outside}/pty`, cwd: work, timeoutMs: 20000, sandbox: {} })
  assert.ok(p.exitCode !== undefined && p.exitCode !== 0, JSON.stringify(p))
  assert.ok(!existsSync(join(outside, 'pty')))
  assert.throws(() => pty.start({ command: 'true', sandbox: { limits: { cpu: 1 } } }), {
    code: 'InvalidArgument',
    message: 'sandbox.limits.cpu is not an option',
  })
})

test('a kernel without Landlock is the SandboxUnavailable error', async () => {
  // The core's test hook caps the Landlock ABI it believes the kernel has.
  process.env.CONCH_TEST_LANDLOCK_ABI = '0'
  const cwd = tempDir()
  try {
    assert.throws(() => new Shell({ cwd, snapshot: 'none', sandbox: {} }), {
      code: 'SandboxUnavailable',
      message: /^the sandbox cannot be enforced: /,
    })
    await assert.rejects(executeShell({ command: 'true', cwd, sandbox: true }), { code: 'SandboxUnavailable' })
    const shell = new Shell({ cwd, snapshot: 'none', sandbox: { bestEffort: true } })
    try {
      assert.equal((await shell.run({ command: 'echo ok' })).output, 'ok\n')
    } finally {
      shell.close()
    }
  } finally {
    delete process.env.CONCH_TEST_LANDLOCK_ABI
  }
})

test('the bash tool and executeBash take the same sandbox', async () => {
  const root = tempDir()
  const [work, outside] = ['work', 'outside'].map((n) => join(root, n))
  for (const d of [work, outside]) mkdirSync(d)
  const sessionKey = `sandbox-${process.pid}`
  const tool = new BashTool({ cwd: work, snapshot: 'none', sessionKey, sandbox: {} })
  try {
    assert.match(tool.definition().description, /Commands run in a sandbox/)
    assert.equal((await tool.execute({ command: 'echo in > one && cat one' })).content[0].text, 'in')
    await assert.rejects(tool.execute({ command: `echo out > ${outside}/one` }), (e) => e instanceof ToolError && /Read-only file system/.test(e.message))
    assert.ok(!existsSync(join(outside, 'one')))
  } finally {
    tool.close()
  }
  assert.throws(() => new BashTool({ cwd: work, sandbox: { limits: { cpuSeconds: 0 } } }), {
    code: 'InvalidArgument',
    message: /^sandbox\.limits\.cpuSeconds must be/,
  })
  const r = await executeBash(`echo out > ${outside}/two`, { cwd: work, sessionKey, snapshot: 'none', sandbox: true })
  assert.notEqual(r.exitCode, 0)
  assert.ok(!existsSync(join(outside, 'two')))
  closeBashSession(sessionKey)
  process.env.CONCH_TEST_LANDLOCK_ABI = '0'
  try {
    assert.throws(() => new BashTool({ cwd: work, sandbox: true }), { code: 'SandboxUnavailable' })
  } finally {
    delete process.env.CONCH_TEST_LANDLOCK_ABI
  }
})

test('sandboxApplied names what of the sandbox is in force', async () => {
  const cwd = tempDir()
  const plain = new Shell({ cwd, snapshot: 'none' })
  try {
    assert.equal(plain.sandboxApplied, null)
  } finally {
    plain.close()
  }
  let strict
  try {
    strict = new Shell({ cwd, snapshot: 'none', sandbox: {} })
  } catch (err) {
    assert.equal(err.code, 'SandboxUnavailable', err.message)
    return // the strict default needs Landlock and seccomp
  }
  const applied = strict.sandboxApplied
  try {
    assert.ok(applied.landlockAbi >= 1)
    assert.equal(applied.filesystem, true)
    assert.equal(applied.network, true)
    assert.equal(applied.limits, false) // none asked
    assert.equal(applied.tcpPorts, false)
    assert.equal(applied.processes, false)
    assert.equal(applied.sessionMemory, false)
    assert.deepEqual(applied.notApplied, [])
  } finally {
    strict.close()
  }
  assert.deepEqual(strict.sandboxApplied, applied) // still answers once closed
  // The core's test hook caps the Landlock ABI it believes the kernel has.
  process.env.CONCH_TEST_LANDLOCK_ABI = '0'
  try {
    const shell = new Shell({ cwd, snapshot: 'none', sandbox: { bestEffort: true } })
    try {
      const downgraded = shell.sandboxApplied
      assert.equal(downgraded.landlockAbi, 0)
      assert.equal(downgraded.filesystem, false)
      assert.ok(downgraded.notApplied.length > 0)
      assert.ok(downgraded.notApplied.some((why) => /Landlock/.test(why)), downgraded.notApplied.join('; '))
    } finally {
      shell.close()
    }
  } finally {
    delete process.env.CONCH_TEST_LANDLOCK_ABI
  }
})

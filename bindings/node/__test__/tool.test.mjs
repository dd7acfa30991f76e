// BashTool: the agent-facing pipeline and its errors.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { realpathSync } from 'node:fs'
import { BashTool, ToolError, BlockedError, ToolAbortError, ArtifactStore } from 'conch'
import { expectAbortKills, tempDir, updatedWhileRunning } from './helpers.mjs'

describe('BashTool', () => {
  const cwd = realpathSync(tempDir())
  const artifactsDir = tempDir()
  const tool = new BashTool({
    cwd,
    artifactsDir,
    toolNames: ['read', 'grep'],
    interceptor: true,
    sessionKey: `tool-test-${process.pid}`,
    snapshot: 'none',
  })
  after(() => tool.close())

  test('a successful call resolves with the text the model reads', async () => {
    const r = await tool.execute({ command: 'pwd; echo hello' })
    assert.deepEqual(r, { content: [{ type: 'text', text: `${cwd}\nhello` }] })
    const empty = await tool.execute({ command: 'true' })
    assert.equal(empty.content[0].text, '(no output)')
  })

  test('a non-zero exit rejects with ToolError carrying the text', async () => {
    await assert.rejects(tool.execute({ command: 'echo oops; (exit 3)' }), (err) => {
      assert.ok(err instanceof ToolError)
      assert.ok(!(err instanceof BlockedError))
      assert.equal(err.name, 'ToolError')
      assert.equal(err.code, 'ToolError')
      assert.equal(err.message, 'oops\n\nCommand exited with code 3')
      return true
    })
  })

  test('a blocked command rejects with BlockedError and the suggested tool', async () => {
    await assert.rejects(tool.execute({ command: 'cat README.md' }), (err) => {
      assert.ok(err instanceof BlockedError)
      assert.ok(err instanceof ToolError)
      assert.equal(err.suggestedTool, 'read')
      assert.match(err.message, /^Blocked: .*\n\nOriginal command: cat README\.md$/s)
      return true
    })
    // a rule whose tool the host lacks does not apply
    await assert.rejects(tool.execute({ command: 'sed -i s/a/b/ nothing' }), (err) => !(err instanceof BlockedError))
  })

  test('a bad cwd is a ToolError with the documented text', async () => {
    await assert.rejects(tool.execute({ command: 'true', cwd: 'no-such-dir' }), {
      name: 'ToolError',
      message: `Working directory does not exist: ${cwd}/no-such-dir`,
    })
  })

  test('head/tail from the command and the arguments; truncation details on the result', async () => {
    const r = await tool.execute({ command: 'seq 1 100000 | tail -n 3' })
    assert.match(r.content[0].text, /^99998\n99999\n100000/)
    const big = await tool.execute({ command: 'seq 1 100000' })
    const truncation = big.details.meta.truncation
    assert.equal(truncation.direction, 'tail')
    assert.equal(truncation.totalLines, 100000)
    assert.equal(typeof truncation.artifactId, 'string')
    assert.match(big.content[0].text, new RegExp(`Full: artifact://${truncation.artifactId}\\]$`))
    const full = new ArtifactStore(artifactsDir).resolve(`artifact://${truncation.artifactId}`)
    assert.equal(full.split('\n').length, 100001)
  })

  test('onUpdate gets the tail while the command runs, before the promise settles', async () => {
    const { updates, result: r } = await updatedWhileRunning(tool)
    assert.ok(updates.some((u) => u.content[0].text === 'step1\n'), 'no update showed step1 alone')
    for (const u of updates) assert.equal(u.content[0].type, 'text')
    assert.equal(updates.at(-1).content[0].text, 'step1\nstep2\n')
    assert.equal(r.content[0].text, 'step1\nstep2')
  })

  test('an aborted signal rejects with ToolAbortError and kills the command', async () => {
    await expectAbortKills(tool)
    await assert.rejects(tool.execute({ command: 'echo never' }, { signal: AbortSignal.abort() }), ToolAbortError)
  })

  test('a timeout is a ToolError, not an abort', async () => {
    await assert.rejects(tool.execute({ command: '/bin/sleep 5', timeout: 1 }), (err) => {
      assert.ok(err instanceof ToolError)
      assert.match(err.message, /^\[Command timed out after 1 seconds\]/)
      return true
    })
  })

  test('a throwing onUpdate rejects with the thrown value', async () => {
    const mine = new Error('host failed')
    mine.code = 'ToolError'
    await assert.rejects(
      tool.execute({ command: 'echo x; /bin/sleep 0.2; echo y' }, {
        onUpdate: () => {
          throw mine
        },
      }),
      (err) => err === mine && !(err instanceof ToolError),
    )
  })

  test('bad configuration throws', () => {
    assert.throws(
      () => new BashTool({ cwd, interceptor: true, rules: [{ pattern: '(', tool: 'read', message: 'x' }] }),
      { code: 'InvalidArgument' },
    )
  })
})

describe('BashTool mask', () => {
  test('secrets of sessionEnv are masked unless mask is false; executeBash takes it too', async () => {
    const token = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a'
    const sessionEnv = { GITHUB_TOKEN: token, DB_URL: 'postgres://app:pw@db/app' }
    const cases = [
      [undefined, '[masked: GITHUB_TOKEN] postgres://app:pw@db/app'],
      [['DB_URL'], '[masked: GITHUB_TOKEN] [masked: DB_URL]'],
      [false, `${token} postgres://app:pw@db/app`],
    ]
    for (const [mask, expect] of cases) {
      const tool = new BashTool({
        cwd: tempDir(),
        sessionKey: `tool-mask-${process.pid}-${String(mask)}`,
        snapshot: 'none',
        sessionEnv,
        mask,
      })
      try {
        const r = await tool.execute({ command: 'echo "$GITHUB_TOKEN" "$DB_URL"' })
        assert.equal(r.content[0].text, expect)
      } finally {
        tool.close()
      }
    }
    assert.throws(() => new BashTool({ cwd: tempDir(), mask: 'yes' }), /mask/)
    const { executeBash, closeBashSession } = await import('conch')
    const sessionKey = `bash-mask-${process.pid}`
    const masked = await executeBash('echo "$GITHUB_TOKEN"', { sessionKey, snapshot: 'none', sessionEnv })
    assert.equal(masked.output, '[masked: GITHUB_TOKEN]\n')
    const shown = await executeBash('echo "$GITHUB_TOKEN"', { sessionKey, snapshot: 'none', sessionEnv, mask: false })
    assert.equal(shown.output, `${token}\n`)
    closeBashSession(sessionKey)
  })
})

// `Remote.tool`: the model's bash and job tools on a real `conch serve`
// (the release binary, over stdio), with the calls, results and
// rejections of a local BashTool and JobTool; the tool, job_tool and
// tool_definition vectors replay through a remote tool and agree with the
// local ones.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { BashTool, BlockedError, JobTool, RemoteTool, ToolAbortError, ToolError, connect } from 'conch'
import { expectAbortKills, tempDir, updatedWhileRunning } from './helpers.mjs'
import { jobToolVectorsThrough, toolDefinitionVectorsThrough, toolVectorsThrough } from './replay.mjs'

const CONCH = process.env.CONCH_BIN ?? fileURLToPath(new URL('../../../target/release/conch', import.meta.url))

describe('a remote tool', () => {
  let remote
  before(async () => {
    remote = await connect([CONCH, 'serve', '--stdio'])
  })
  after(() => remote.close())

  test('tool vectors agree through a remote tool', (t) => toolVectorsThrough(t, (options) => remote.tool(options)))

  test('job_tool vectors agree through a remote tool', (t) =>
    jobToolVectorsThrough(t, (options) => remote.tool(options), (bash) => bash.jobTool()))

  test('tool_definition vectors agree through a remote tool', (t) =>
    toolDefinitionVectorsThrough(t, (options) => remote.tool(options), (bash) => bash.jobTool()))

  test('has the calls, updates and rejections of a local tool', async () => {
    const cwd = realpathSync(tempDir())
    const options = { cwd, snapshot: 'none', interceptor: true, toolNames: ['read'], updateIntervalMs: 0 }
    const tool = await remote.tool(options)
    assert.ok(tool instanceof RemoteTool)
    const local = new BashTool(options)
    try {
      assert.deepEqual(tool.definition(), local.definition())
      assert.deepEqual(tool.jobTool().definition(), new JobTool(local).definition())

      const { updates, result: r } = await updatedWhileRunning(tool)
      assert.ok(updates.some((u) => u.content[0].text === 'step1\n'), 'no update showed step1 alone')
      assert.deepEqual(r, { content: [{ type: 'text', text: 'step1\nstep2' }] })
      assert.equal(updates.at(-1).content[0].text, 'step1\nstep2\n')

      await assert.rejects(tool.execute({ command: 'echo oops; (exit 3)' }), (err) => {
        assert.ok(err instanceof ToolError && !(err instanceof BlockedError))
        assert.equal(err.message, 'oops\n\nCommand exited with code 3')
        return true
      })
      const big = await tool.execute({ command: 'seq 1 100000' })
      assert.equal(big.details.meta.truncation.totalLines, 100000)
      await assert.rejects(tool.execute({ command: 'cat README.md' }), (err) => {
        assert.ok(err instanceof BlockedError)
        assert.equal(err.suggestedTool, 'read')
        return true
      })

      await expectAbortKills(tool)
      await assert.rejects(tool.execute({ command: 'echo never' }, { signal: AbortSignal.abort() }), ToolAbortError)

      const mine = new Error('host failed')
      await assert.rejects(
        tool.execute({ command: 'echo x; /bin/sleep 0.2; echo y' }, {
          onUpdate: () => {
            throw mine
          },
        }),
        (err) => err === mine,
      )

      // The arguments are read here as locally: the same throws.
      for (const bad of [{ cwd: '.' }, { command: 'true', head: -1 }]) {
        const errorOf = (t) => {
          try {
            t.execute(bad)
          } catch (err) {
            return { name: err.name, code: err.code, message: err.message }
          }
          return null
        }
        const want = errorOf(local)
        assert.ok(want, JSON.stringify(bad))
        assert.deepEqual(errorOf(tool), want)
      }
      assert.throws(() => tool.execute({ command: 'true' }, { onUpdate: 7 }), { name: 'TypeError' })

      const jobs = tool.jobTool()
      const started = await tool.execute({ command: 'echo ready; read line; echo got $line', async: true })
      assert.match(started.content[0].text, /^Started job 1: /)
      const wrote = await jobs.execute({ op: 'write', job: 1, input: 'x\n', wait: 30 })
      assert.match(wrote.content[0].text, /ready\ngot x/)
      await assert.rejects(jobs.execute({ op: 'poll', job: 1.5 }), (err) => {
        assert.ok(err instanceof ToolError)
        assert.match(err.message, /^job must be/)
        return true
      })
    } finally {
      local.close()
      await tool.close()
    }
    await tool.close() // idempotent
    await assert.rejects(tool.execute({ command: 'true' }), { code: 'Closed', message: 'bash tool is closed' })
    await assert.rejects(tool.jobTool().execute({ op: 'list' }), { code: 'Closed' })
  })

  test('bad options are refused as locally', async () => {
    await assert.rejects(remote.tool({ cwd: '.', rules: [{ pattern: '(', tool: 'read', message: 'x' }] }), {
      code: 'InvalidArgument',
    })
    await assert.rejects(remote.tool({ cwd: '.', updateIntervalMs: -1 }), { code: 'InvalidArgument' })
    assert.throws(() => remote.tool(7), { name: 'TypeError' })
  })
})

// `Remote.tool`: the model's bash and job tools on a real `conch serve`
// (the release binary, over stdio), with the calls, results and
// rejections of a local BashTool and JobTool; the tool, job_tool and
// tool_definition vectors replay through a remote tool and agree with the
// local ones.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BashTool, BlockedError, JobTool, RemoteTool, ToolAbortError, ToolError, connect } from 'conch'
import { expectGone, expectProcesses, settlesInTime, tempDir, uniqueWord } from './helpers.mjs'
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

      // The command prints step2 only after an update showed step1.
      const marker = join(tempDir(), 'step1-seen')
      const updates = []
      const r = await tool.execute(
        { command: `echo step1; until [ -e ${marker} ]; do /bin/sleep 0.02; done; echo step2`, timeout: 30 },
        {
          onUpdate: (partial) => {
            updates.push(partial)
            if (partial.content[0].text === 'step1\n') writeFileSync(marker, '')
          },
        },
      )
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

      const word = uniqueWord('7')
      const ac = new AbortController()
      const call = tool.execute({ command: `echo started; /bin/sleep 100.${word}` }, { signal: ac.signal })
      await expectProcesses(word)
      ac.abort()
      await assert.rejects(settlesInTime(call, 'the aborted call'), (err) => {
        assert.ok(err instanceof ToolAbortError)
        assert.match(err.message, /^\[Command cancelled\]\nstarted/)
        return true
      })
      await expectGone(word)

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

// Replays tests/vectors/job_tool.json, the scripted model loop (bash with
// `async`, a run past autoBackgroundAfterMs, the job tool's poll, write,
// kill and list, the model's mistakes), the way core/tests/tool/job_tool.rs
// does in Rust: each case on a session of its own, every text exact
// (`{secs}` stands for a whole number of seconds).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { BashTool, JobTool, ToolError } from 'conch'
import { settlesInTime } from './helpers.mjs'
import { jobToolVectorsThrough } from './replay.mjs'

test('job_tool vectors, every case and step', (t) =>
  jobToolVectorsThrough(t, (options) => new BashTool(options), (bash) => new JobTool(bash)))

test('JobTool: a signal ends the wait and spares the job; a bad job number is the model\'s ToolError', async () => {
  assert.throws(() => new JobTool({}), { name: 'TypeError', code: 'InvalidArg' })
  const bash = new BashTool({ cwd: tmpdir(), snapshot: 'none', sessionKey: `job-tool-signal-${process.pid}` })
  const jobs = new JobTool(bash)
  try {
    const started = await bash.execute({ command: '/bin/sleep 30', async: true })
    assert.match(started.content[0].text, /^Started job 1: \/bin\/sleep 30\n/)
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 100)
    const t0 = Date.now()
    const r = await settlesInTime(jobs.execute({ op: 'poll', job: 1, wait: 30 }, { signal: ac.signal }), 'poll')
    assert.ok(Date.now() - t0 < 5000)
    assert.match(r.content[0].text, /running for \d+s\n\(no new output\)\n\[Still running/)
    for (const job of [-1, 1.5]) {
      const err = await jobs.execute({ op: 'poll', job }).then(() => null, (e) => e)
      assert.ok(err instanceof ToolError, String(err))
      assert.match(err.message, /^job must be/)
    }
    const killed = await jobs.execute({ op: 'kill', job: 1 })
    assert.match(killed.content[0].text, /killed after \d+s/)
  } finally {
    bash.close()
  }
})

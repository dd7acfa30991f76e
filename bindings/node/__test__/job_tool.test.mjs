// Replays tests/vectors/job_tool.json, the scripted model loop (bash with
// `async`, a run past autoBackgroundAfterMs, the job tool's poll, write,
// kill and list, the model's mistakes), the way core/tests/tool/job_tool.rs
// does in Rust: each case on a session of its own, every text exact
// (`{secs}` stands for a whole number of seconds).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { BashTool, JobTool, ToolError } from 'conch'
import { settlesInTime, vectorsPath } from './helpers.mjs'

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

function textMatches(want, text) {
  const pattern = want.split('{secs}').map(escape).join('\\d+')
  return new RegExp(`^${pattern}$`).test(text)
}

test('job_tool vectors, every case and step', async (t) => {
  const path = vectorsPath('job_tool')
  assert.ok(existsSync(path), 'tests/vectors/job_tool.json is missing')
  const cases = JSON.parse(readFileSync(path, 'utf8'))
  assert.ok(cases.length > 0)
  const failures = []
  for (const [n, c] of cases.entries()) {
    const bash = new BashTool({
      cwd: tmpdir(),
      snapshot: 'none',
      sessionKey: `job-tool-vectors-${process.pid}-${n}`,
      autoBackgroundAfterMs: c.config?.auto_background_after_ms,
    })
    const jobs = new JobTool(bash)
    try {
      for (const [i, step] of c.steps.entries()) {
        const at = `step ${i} (${step.tool} ${JSON.stringify(step.args)})`
        const tool = { bash, job: jobs }[step.tool]
        assert.ok(tool, `${at}: unknown tool`)
        let kind
        let text
        try {
          const r = await settlesInTime(tool.execute(step.args), at, 20_000)
          kind = 'ok'
          text = r.content[0].text
        } catch (err) {
          // The model's mistakes and failed commands are the ToolError class.
          assert.ok(err instanceof ToolError, `${at}: ${err?.stack ?? err}`)
          kind = 'failed'
          text = err.message
        }
        const want = step.expect
        assert.equal(kind, want.kind, `${at}: ${text}`)
        if (want.text !== undefined) {
          assert.ok(textMatches(want.text, text), `${at}:\n${text}\n---\n${want.text}`)
        }
        if (want.text_starts_with !== undefined) {
          assert.ok(text.startsWith(want.text_starts_with), `${at}:\n${text}`)
        }
      }
    } catch (err) {
      failures.push(`${c.name}: ${err.message}`)
    } finally {
      bash.close()
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${cases.length} cases failed`)
  t.diagnostic(`${cases.length} cases`)
})

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

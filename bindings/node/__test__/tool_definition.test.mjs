// Replays tests/vectors/tool_definition.json: `BashTool.definition()` and
// `JobTool.definition()` give, for the same configuration, the definitions
// every face gives (`inputSchema` here, `input_schema` in the vectors), the
// JSON Schema's own keys as the core wrote them.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { BashTool, JobTool } from 'conch'
import { vectorsPath } from './helpers.mjs'

const OPTIONS = {
  interceptor: 'interceptor',
  tool_names: 'toolNames',
  rules: 'rules',
  name: 'name',
  job_tool_name: 'jobToolName',
  virtual_terminal: 'virtualTerminal',
  auto_background_after_ms: 'autoBackgroundAfterMs',
}

function tool(config) {
  const options = { cwd: tmpdir(), snapshot: 'none' }
  for (const [key, value] of Object.entries(config)) {
    assert.ok(key in OPTIONS, `unknown config key ${key}`)
    options[OPTIONS[key]] = value
  }
  return new BashTool(options)
}

const asVector = ({ name, description, inputSchema }) => ({ name, description, input_schema: inputSchema })

test('tool_definition vectors', () => {
  const path = vectorsPath('tool_definition')
  assert.ok(existsSync(path), 'tests/vectors/tool_definition.json is missing')
  const cases = JSON.parse(readFileSync(path, 'utf8'))
  assert.ok(cases.length > 0)
  for (const c of cases) {
    const bash = tool(c.config)
    const job = new JobTool(bash)
    assert.deepEqual(
      { bash: asVector(bash.definition()), job: asVector(job.definition()) },
      c.expect,
      c.name,
    )
  }
})

// A tool loop as an agent host writes it against an LLM API, with a
// scripted model in place of the network: register the tools' definitions
// verbatim (Anthropic's and OpenAI's shapes), dispatch each tool call to
// `execute`, stream its updates, cancel one with an AbortSignal, read a
// truncated output back from its artifact, one session per conversation.
//
// Set up once (README): cd bindings/node && npm ci && npm run build
// Then:                 node examples/node/llm_tool_loop.mjs
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ArtifactStore, BashTool, JobTool } from '../../bindings/node/conch.mjs'

const project = mkdtempSync(join(tmpdir(), 'conch-loop-'))
const artifactsDir = join(project, '.artifacts')
// One conversation, one persistent shell: its own session key.
const bash = new BashTool({ cwd: project, artifactsDir, sessionKey: 'conversation-1', snapshot: 'none' })
const tools = { bash, job: new JobTool(bash) }

// Registered verbatim: the three fields in each API's shape.
const definitions = Object.values(tools).map((t) => t.definition())
const anthropicTools = definitions.map(({ name, description, inputSchema }) => ({ name, description, input_schema: inputSchema }))
const openaiTools = definitions.map(({ name, description, inputSchema }) => ({
  type: 'function', function: { name, description, parameters: inputSchema },
}))
assert.deepEqual(openaiTools.map((t) => t.function.name), ['bash', 'job'])

// The "model": the next tool call, only with what the schemas allow.
const script = [
  ['bash', { command: "echo 'console.log(40 + 2)' > app.js && node app.js" }],
  ['bash', { command: 'seq 1 100000' }],
  ['bash', { command: 'sleep 1; echo server ready; sleep 300', async: true }],
  ['job', { op: 'poll', job: 1, until: 'ready', wait: 30 }],
  ['job', { op: 'kill', job: 1 }],
  ['bash', { command: 'ls missing', timeout: 5 }],
]
const schemas = Object.fromEntries(anthropicTools.map((t) => [t.name, t.input_schema]))

async function call(name, args, signal) {
  const schema = schemas[name]
  assert.ok(schema.required.every((k) => k in args) && Object.keys(args).every((k) => k in schema.properties))
  try {
    const result = await tools[name].execute(args, { signal, onUpdate: name === 'bash' ? () => {} : undefined })
    return { text: result.content[0].text, isError: false }
  } catch (e) {
    return { text: e.message, isError: true } // ToolError, BlockedError, ToolAbortError: the model's text
  }
}

for (const [name, args] of script) {
  const { text, isError } = await call(name, args)
  console.log(`> ${name} ${JSON.stringify(args)}\n${isError ? '[error] ' : ''}${text.slice(-300)}\n`)
  const artifact = /Full: artifact:\/\/(\d+)\]$/.exec(text)
  if (artifact) {
    assert.equal(new ArtifactStore(artifactsDir).read(artifact[1], 99997), '99998\n99999\n100000\n')
  }
}

// The user presses Esc: the signal kills the command's process tree; the
// session stays for the next call.
const controller = new AbortController()
setTimeout(() => controller.abort(), 500)
const cancelled = await call('bash', { command: 'sleep 300' }, controller.signal)
assert.ok(cancelled.isError, cancelled.text)
console.log(`> bash sleep 300, cancelled\n${cancelled.text}\n`)
assert.equal((await call('bash', { command: 'cat app.js' })).text, 'console.log(40 + 2)')
bash.close()
rmSync(project, { recursive: true, force: true })

// An agent-style host driving conch's BashTool: the "model" asks for shell
// commands, the host runs them with live output, shows the model the text
// it gets back, and has an abort button (here an AbortController pressed
// after half a second on a command that would run for a minute).
//
// Set up once (README): cd bindings/node && npm ci && npm run build
// Then:                 node examples/node/agent.mjs
// In a project that depends on the package: import { BashTool, ... } from 'conch'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BashTool, BlockedError, ToolAbortError, ToolError } from '../../bindings/node/conch.mjs'

const workspace = mkdtempSync(join(tmpdir(), 'conch-agent-'))
const tool = new BashTool({
  cwd: workspace,
  artifactsDir: join(workspace, '.artifacts'),
  toolNames: ['read', 'grep', 'find', 'edit', 'write'], // the host's other tools
  interceptor: true,
  sessionKey: 'example-agent',
})

/** Runs one tool call and prints what the user and the model would see. */
async function call(args, { abortAfterMs } = {}) {
  console.log(`\n$ ${args.command}`)
  const abort = new AbortController()
  const button = abortAfterMs && setTimeout(() => {
    console.log('  [user pressed abort]')
    abort.abort()
  }, abortAfterMs)
  let lastLine = ''
  const onUpdate = (partial) => {
    // the tail of the output so far; show its last complete line
    const lines = partial.content[0].text.split('\n')
    const line = lines.at(-2)
    if (line && line !== lastLine) console.log(`  live: ${(lastLine = line)}`)
  }
  try {
    const result = await tool.execute(args, { onUpdate, signal: abort.signal })
    report('ok', result.content[0].text, result.details)
  } catch (err) {
    if (err instanceof ToolAbortError) report('aborted', err.message, err.details)
    else if (err instanceof BlockedError) report(`blocked, use the ${err.suggestedTool} tool`, err.message)
    else if (err instanceof ToolError) report('error', err.message, err.details)
    else throw err
  } finally {
    clearTimeout(button)
  }
}

function report(kind, text, details) {
  const lines = text.split('\n')
  const shown = lines.length > 6 ? [...lines.slice(0, 2), '…', ...lines.slice(-3)] : lines
  console.log(`  → ${kind}; the model reads:`)
  for (const line of shown) console.log(`    ${line}`)
  const truncation = details?.meta?.truncation
  if (truncation) console.log(`    (${truncation.totalLines} lines in all, full output in artifact://${truncation.artifactId})`)
}

try {
  await call({ command: 'git --version >/dev/null 2>&1 && echo "git present"; uname -s' })
  await call({ command: 'mkdir -p src && touch src/main.rs src/lib.rs && ls src' })
  await call({ command: 'export BUILD_MODE=release; greet() { echo "hello from $1"; }' })
  await call({ command: 'greet "$BUILD_MODE"', cwd: 'src' }) // one shell session: state persists
  await call({ command: 'for i in 1 2 3; do echo "building step $i"; sleep 0.2; done' })
  await call({ command: 'seq 1 200000' }) // too long for the model: truncated, spilled
  await call({ command: 'cat main.rs' }) // the host has a read tool
  await call({ command: 'ls no-such-file' })
  await call({ command: 'sleep 5', timeout: 1 })
  await call({ command: 'echo "long job started"; sleep 60' }, { abortAfterMs: 500 })
} finally {
  tool.close()
  rmSync(workspace, { recursive: true, force: true })
}

// Shared helpers of the node:test suite.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ToolAbortError, ToolError } from 'conch'

/**
 * How long a wait for an event may take before the test calls it a hang.
 * It bounds waits for things that take milliseconds (a process appearing,
 * a line of output, a kill ladder of about a second), so it is far past
 * them even on a busy machine; it never measures speed.
 */
export const HANG_GUARD_MS = 10_000

/** The directories `tempDir` made in this process (a test file's). */
const made = []
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

/** A fresh private directory, removed when the test file's process exits. */
export function tempDir(prefix = 'conch-node-') {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}

/**
 * Runs on `tool` (a BashTool, or a remote one) a command that prints step2
 * only after an update showed step1, so that update came while it ran (its
 * 30 s timeout is a hang guard); the updates and the result.
 */
export async function updatedWhileRunning(tool) {
  const marker = join(tempDir(), 'step1-seen')
  const updates = []
  const result = await tool.execute(
    { command: `echo step1; until [ -e ${marker} ]; do /bin/sleep 0.02; done; echo step2`, timeout: 30 },
    {
      onUpdate: (partial) => {
        updates.push(partial)
        if (partial.content[0].text === 'step1\n') writeFileSync(marker, '')
      },
    },
  )
  return { updates, result }
}

/**
 * A background command whose `body` runs once the session's next run is
 * `RELEASE`: it is still running when the run that starts it returns,
 * however loaded the machine (what it printed before would be that run's
 * output). It waits while the file its run made is there; `$$` is the
 * session's bash, in the subshell too.
 */
export function gated(body) {
  return `: > /tmp/conch-gate-$$; (while [ -e /tmp/conch-gate-$$ ]; do /bin/sleep 0.02; done; ${body}) &`
}

/** The run that lets a `gated` command go on: it removes the file. */
export const RELEASE = 'rm /tmp/conch-gate-$$'

/**
 * Digits no other process on the machine has in its command line, to be
 * used as the fraction of a sleep time: `/bin/sleep 100.<word>`.
 */
export function uniqueWord(tag) {
  return `${tag}${process.pid}0${Date.now() % 1e7}0${Math.floor(Math.random() * 1e9)}`
}

/** Pids of live (non-zombie) processes with an argument ending in `word`. */
export function processesWith(word) {
  const pids = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1')
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
      const args = cmdline.split('\0')
      if (args.some((a) => a.endsWith(word) && !a.includes(' ')) && state !== 'Z') pids.push(Number(entry))
    } catch {
      // the process ended while we looked
    }
  }
  return pids
}

/**
 * Polls `check()` until it is truthy or the hang guard `ms` passes;
 * returns its last value (the caller asserts it).
 */
export async function waitFor(check, ms = HANG_GUARD_MS) {
  const end = Date.now() + ms
  let value = check()
  while (!value && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20))
    value = check()
  }
  return value
}

/**
 * Waits until `count` live processes carry `word` and returns their pids:
 * the presence half of a kill check.
 */
export async function expectProcesses(word, count = 1) {
  const pids = await waitFor(() => {
    const found = processesWith(word)
    return found.length === count && found
  })
  assert.ok(pids, `expected ${count} process(es) with ${word}, found ${processesWith(word).length}`)
  return pids
}

/**
 * Waits until no live process carries `word`: the absence half of a kill
 * check, after `expectProcesses` saw them alive. A kill may still be on its
 * way down its ladder (SIGINT, SIGTERM, SIGKILL), so this polls.
 */
export async function expectGone(word) {
  const gone = await waitFor(() => processesWith(word).length === 0)
  assert.ok(gone, `processes with ${word} still alive: ${processesWith(word).join(', ')}`)
}

/**
 * `promise`, or a rejection naming `what` if it has not settled within the
 * hang guard (for calls that only a bug would keep from settling).
 */
export function settlesInTime(promise, what, ms = HANG_GUARD_MS) {
  let timer
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms)
  })
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer))
}

/** The `conch` binary the remote tests serve from (scripts/test-node.sh
 * names the release build's), and the argv of a stdio server. */
export const CONCH = process.env.CONCH_BIN ?? fileURLToPath(new URL('../../../target/release/conch', import.meta.url))
export const STDIO_SERVER = [CONCH, 'serve', '--stdio']

/** The directory of the repository's shared test vectors. */
export const VECTORS_DIR = new URL('../../../tests/vectors/', import.meta.url)

/** The repository's shared test vectors. */
export function vectorsPath(name) {
  return new URL(`${name}.json`, VECTORS_DIR)
}

/**
 * Aborts by its signal a call of `tool` (a BashTool, or a remote one)
 * while its command runs: the call rejects with ToolAbortError, with the
 * output so far, and the command is gone.
 */
export async function expectAbortKills(tool) {
  const word = uniqueWord('7')
  const ac = new AbortController()
  const call = tool.execute({ command: `echo started; /bin/sleep 100.${word}` }, { signal: ac.signal })
  await expectProcesses(word)
  ac.abort()
  await assert.rejects(settlesInTime(call, 'the aborted call'), (err) => {
    assert.ok(err instanceof ToolAbortError)
    assert.ok(!(err instanceof ToolError))
    assert.match(err.message, /^\[Command cancelled\]\nstarted/)
    return true
  })
  await expectGone(word)
}

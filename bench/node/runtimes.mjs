// The ways a Node host runs a model's command (conch with either of its
// session loops, spawn per command, pi-natives' Shell), behind one shape:
//   { name, run(command, onChunk, {cwd, timeoutMs, signal}) -> Promise<{exitCode, timedOut, cancelled}>,
//     session() -> a fresh one of the same kind, close() }
// A runtime that cannot be loaded is returned as { name, unavailable: why }.

import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const require = createRequire(import.meta.url)

/** `child_process.spawn('bash', ['-c', command])` per command, output decoded as UTF-8. */
export function spawnRuntime() {
  const rt = {
    name: 'spawn',
    run(command, onChunk, { cwd, timeoutMs, signal } = {}) {
      return new Promise((resolve, reject) => {
        const child = spawn('bash', ['-c', command], {
          cwd,
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: timeoutMs,
          signal,
        })
        child.stdout.setEncoding('utf8')
        child.stderr.setEncoding('utf8')
        child.stdout.on('data', onChunk)
        child.stderr.on('data', onChunk)
        // Spawn reports an abort as an error event, then closes.
        child.on('error', (err) => {
          if (err.name !== 'AbortError') reject(err)
        })
        child.on('close', (code, sig) =>
          resolve({
            exitCode: code ?? undefined,
            timedOut: Boolean(timeoutMs) && sig !== null && !signal?.aborted,
            cancelled: sig !== null,
          }),
        )
      })
    },
    session: () => rt,
    close() {},
  }
  return rt
}

/** The pi-natives platform addon: the `.node` file the package's loader would pick. */
function piNativesPath(benchDir) {
  const dir = join(benchDir, 'node_modules', '@oh-my-pi', 'pi-natives-linux-x64')
  const avx2 = /\bavx2\b/.test(readFileSync('/proc/cpuinfo', 'utf8'))
  for (const variant of avx2 ? ['modern', 'baseline'] : ['baseline']) {
    const file = join(dir, `pi_natives.linux-x64-${variant}.node`)
    if (existsSync(file)) return file
  }
  return null
}

/** `new Shell()` of @oh-my-pi/pi-natives (an embedded brush interpreter). */
export function piRuntime(benchDir) {
  let native
  try {
    const file = piNativesPath(benchDir)
    if (!file) return { name: 'pi-natives', unavailable: 'not installed (npm ci in bench/ failed?)' }
    native = require(file)
  } catch (err) {
    return { name: 'pi-natives', unavailable: `cannot load: ${err.message.split('\n')[0]}` }
  }
  const make = () => {
    const shell = new native.Shell({})
    return {
      name: 'pi-natives',
      async run(command, onChunk, { cwd, timeoutMs, signal } = {}) {
        const r = await shell.run({ command, cwd, timeoutMs, signal }, (err, chunk) => {
          if (!err) onChunk(chunk)
        })
        return { exitCode: r.exitCode, timedOut: r.timedOut, cancelled: r.cancelled }
      },
      session: make,
      // pi-natives has no close(); the session goes with its object.
      close() {},
    }
  }
  return make()
}

/**
 * The session loops of conch a runtime can run (`docs/engine.md`): the
 * runtime's name in the records, the `engine` option it is made with, and
 * the loop `shell.engine()` must then report.
 */
export const CONCH_ENGINES = {
  // The default: the loop builtin (conch-loop.so) where bash loads it.
  conch: { option: 'auto', runs: 'builtin' },
  // The previous implementation, bash text run with `eval`.
  'conch-eval': { option: 'eval', runs: 'eval' },
}

/**
 * conch's Node addon (bindings/node), built by run.sh, running the loop
 * `CONCH_ENGINES[name]` names. Throws when the session runs another loop
 * than the one its name claims: its figures would be another runtime's.
 */
export async function conchRuntime(name = 'conch') {
  const { option, runs } = CONCH_ENGINES[name]
  const dir = process.env.BENCH_CONCH_NODE
  if (!dir) {
    return { name, unavailable: process.env.BENCH_CONCH_NODE_PENDING || 'pending: Node addon not built' }
  }
  let conch
  try {
    conch = require(dir)
  } catch (err) {
    return { name, unavailable: `cannot load: ${err.message.split('\n')[0]}` }
  }
  const make = () => {
    const shell = new conch.Shell({ snapshot: 'none', engine: option })
    return {
      name,
      shell,
      async run(command, onChunk, { cwd, timeoutMs, signal } = {}) {
        const r = await shell.run({ command, cwd, timeoutMs, signal }, onChunk)
        return { exitCode: r.exitCode, timedOut: r.timedOut, cancelled: r.cancelled }
      },
      session: make,
      close: () => shell.close(),
    }
  }
  const rt = make()
  const engine = await rt.shell.engine()
  if (engine !== runs) {
    rt.close()
    throw new Error(`${name}: made with engine '${option}', the session runs the '${engine}' loop, not '${runs}'`)
  }
  return rt
}

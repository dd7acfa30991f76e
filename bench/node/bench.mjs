// conch's benchmarks from Node: the conch addon, child_process.spawn per
// command, and the Shell of @oh-my-pi/pi-natives, measured in one process
// on the same commands. Prints one JSON record per line (the format of
// bench/rust/src/record.rs); bench/report.py makes the table.
//
//   node bench.mjs suite            every scenario except the flood
//   node bench.mjs flood RUNTIME    peak RSS growth during the flood, in
//                                   this fresh process (conch|spawn|pi-natives)
//
// Settings come from the environment, set by bench/run.sh (BENCH_*).

import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { conchRuntime, piRuntime, spawnRuntime } from './runtimes.mjs'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const env = process.env
const quick = env.BENCH_QUICK === '1'
const only = env.BENCH_ONLY ? env.BENCH_ONLY.split(',') : null
const wants = (s) => !only || only.includes(s)
const reps = (full, small) => (quick ? small : full)
const repo = env.BENCH_REPO
const sequence = readFileSync(env.BENCH_SEQUENCE, 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => l.replaceAll('@REPO@', repo))

const ABORT_AFTER_MS = 300
const TIMEOUT_MS = 500
const SESSIONS = 100
const SESSION_COMMANDS = ['cd /tmp', 'echo $((6 * 7))', '/bin/true', 'pwd']
const noop = () => {}
const now = () => process.hrtime.bigint()
const us = (t0) => Number(now() - t0) / 1e3
const ms = (t0) => Number(now() - t0) / 1e6

function emit(scenario, runtime, unit, samples, note) {
  const rec = { lang: 'node', runtime, scenario, unit, samples }
  if (note) rec.note = note
  console.log(JSON.stringify(rec))
}

function unavailable(scenario, rt) {
  console.log(JSON.stringify({ lang: 'node', runtime: rt.name, scenario, unavailable: rt.unavailable }))
}

async function latency(scenario, command, rt, [warm, n]) {
  const samples = []
  let failures = 0
  for (let i = 0; i < warm + n; i++) {
    const t0 = now()
    const r = await rt.run(command, noop)
    const took = us(t0)
    if (r.exitCode !== 0) failures++
    if (i >= warm) samples.push(took)
  }
  emit(scenario, rt.name, 'us', samples, failures ? `${failures} runs did not exit 0` : undefined)
}

async function runSequence(rt, [warm, n]) {
  const samples = []
  const failed = new Set()
  // A process per command keeps no `cd`: it runs every command in the repo.
  const opts = rt.name === 'spawn' ? { cwd: repo } : {}
  for (let i = 0; i < warm + n; i++) {
    const t0 = now()
    for (const command of sequence) {
      const r = await rt.run(command, noop, opts)
      if (r.exitCode !== 0) failed.add(command)
    }
    if (i >= warm) samples.push(ms(t0))
  }
  emit('sequence', rt.name, 'ms', samples, failed.size ? `non-zero exit: ${[...failed].join('; ')}` : undefined)
}

async function throughput(rt, [warm, n]) {
  const expected = Number(env.BENCH_THROUGHPUT_BYTES)
  const samples = []
  let short = false
  for (let i = 0; i < warm + n; i++) {
    let bytes = 0
    const t0 = now()
    await rt.run(env.BENCH_THROUGHPUT_CMD, (chunk) => {
      bytes += chunk.length
    })
    const secs = Number(now() - t0) / 1e9
    if (bytes !== expected) short = true
    if (i >= warm) samples.push(bytes / secs / 1e6)
  }
  emit('throughput', rt.name, 'MB/s', samples, short ? 'did not deliver every byte' : undefined)
}

async function abort(rt, [warm, n]) {
  const samples = []
  let notCancelled = 0
  for (let i = 0; i < warm + n; i++) {
    // A stop may replace the session: start the new one outside the measure.
    await rt.run('true', noop)
    const ctl = new AbortController()
    let settled
    const run = rt.run('/bin/sleep 100', noop, { signal: ctl.signal }).then((r) => {
      settled = now()
      return r
    })
    await sleep(ABORT_AFTER_MS)
    const t0 = now()
    ctl.abort()
    const r = await run
    if (!r.cancelled) notCancelled++
    if (i >= warm) samples.push(Number(settled - t0) / 1e6)
  }
  const how = { spawn: 'the signal option: SIGTERM to bash only, its children survive' }[rt.name]
  emit('abort', rt.name, 'ms', samples, notCancelled ? `${notCancelled} runs not reported as cancelled` : how)
}

async function timeout(rt, [warm, n]) {
  const samples = []
  let notTimedOut = 0
  for (let i = 0; i < warm + n; i++) {
    await rt.run('true', noop)
    const t0 = now()
    const r = await rt.run('/bin/sleep 10', noop, { timeoutMs: TIMEOUT_MS })
    const took = ms(t0)
    if (!r.timedOut && !r.cancelled) notTimedOut++
    if (i >= warm) samples.push(took - TIMEOUT_MS)
  }
  const how = { spawn: 'the timeout option: SIGTERM to bash only, its children survive' }[rt.name]
  emit('timeout', rt.name, 'ms', samples, notTimedOut ? `${notTimedOut} runs did not time out` : how)
}

async function concurrent(rt, [warm, n]) {
  const samples = []
  let failures = 0
  for (let i = 0; i < warm + n; i++) {
    const t0 = now()
    await Promise.all(
      Array.from({ length: SESSIONS }, async () => {
        const session = rt.session()
        for (const command of SESSION_COMMANDS) {
          const r = await session.run(command, noop)
          if (r.exitCode !== 0) failures++
        }
        session.close()
      }),
    )
    if (i >= warm) samples.push(ms(t0))
  }
  emit('concurrent', rt.name, 'ms', samples, failures ? `${failures} commands did not exit 0` : undefined)
}

async function suite() {
  const runtimes = [conchRuntime(), spawnRuntime(), piRuntime(benchDir)]
  const plan = [
    ['builtin', (rt) => latency('builtin', 'true', rt, reps([50, 500], [5, 30]))],
    ['external', (rt) => latency('external', '/bin/true', rt, reps([20, 300], [5, 30]))],
    ['sequence', (rt) => runSequence(rt, reps([1, 10], [1, 3]))],
    ['throughput', (rt) => throughput(rt, reps([0, 3], [0, 1]))],
    ['abort', (rt) => abort(rt, reps([1, 10], [0, 3]))],
    ['timeout', (rt) => timeout(rt, reps([0, 5], [0, 2]))],
    ['concurrent', (rt) => concurrent(rt, reps([0, 3], [0, 1]))],
  ]
  for (const [scenario, measure] of plan) {
    if (!wants(scenario)) continue
    for (const rt of runtimes) {
      if (rt.unavailable) unavailable(scenario, rt)
      else await measure(rt)
    }
  }
  for (const rt of runtimes) if (!rt.unavailable) rt.close()
}

async function flood(name) {
  const make = { conch: conchRuntime, spawn: spawnRuntime, 'pi-natives': () => piRuntime(benchDir) }[name]
  if (!make) throw new Error(`unknown runtime ${name}`)
  const rt = make()
  if (rt.unavailable) return unavailable('flood_rss', rt)
  await rt.run('true', noop)
  const before = process.resourceUsage().maxRSS
  let bytes = 0
  await rt.run(env.BENCH_FLOOD_CMD, (chunk) => {
    bytes += chunk.length
  })
  const grown = (process.resourceUsage().maxRSS - before) / 1024
  const expected = Number(env.BENCH_FLOOD_BYTES)
  emit('flood_rss', rt.name, 'MiB', [grown], bytes !== expected ? `delivered ${bytes} of ${expected} bytes` : undefined)
  rt.close()
}

const [cmd, arg] = process.argv.slice(2)
if (cmd === 'suite') await suite()
else if (cmd === 'flood') await flood(arg)
else {
  console.error('usage: node bench.mjs suite | flood conch|spawn|pi-natives')
  process.exit(2)
}
// pi-natives sessions keep the event loop alive; the measurements are done.
process.exit(0)

// conch's benchmarks from Node: the conch addon (with the loop builtin, and
// with the eval loop), child_process.spawn per command, and the Shell of
// @oh-my-pi/pi-natives, measured in one process on the same commands. Prints one JSON record per line (the format of
// bench/rust/src/record.rs); bench/report.py makes the table.
//
//   node bench.mjs suite            every scenario except the flood
//   node bench.mjs flood RUNTIME    peak RSS growth during the flood, in
//                                   this fresh process (conch|conch-eval|
//                                   spawn|pi-natives)
//
// Settings come from the environment, set by bench/run.sh (BENCH_*).

import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { CONCH_ENGINES, conchRuntime, piRuntime, spawnRuntime } from './runtimes.mjs'

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

/**
 * Measures `trial` for every runtime in turns of `block` repetitions (after
 * `warm` unmeasured ones each), so that a slow moment of the machine falls
 * on all of them alike. Each turn starts with block/10 unmeasured
 * repetitions: the runtime before leaves the process in another state.
 * `trial(rt)` returns `{ sample, problem? }`; problems are counted per
 * runtime and reported as the record's note (else `notes[rt.name]`).
 */
async function interleave(scenario, unit, rts, [warm, n], trial, { block = 1, notes = {} } = {}) {
  const samples = new Map(rts.map((rt) => [rt.name, []]))
  const problems = new Map(rts.map((rt) => [rt.name, new Map()]))
  const once = async (rt, keep) => {
    const { sample, problem } = await trial(rt)
    if (problem) problems.get(rt.name).set(problem, (problems.get(rt.name).get(problem) ?? 0) + 1)
    if (keep) samples.get(rt.name).push(sample)
  }
  for (const rt of rts) for (let i = 0; i < warm; i++) await once(rt, false)
  for (let done = 0; done < n; done += block) {
    for (const rt of rts) {
      for (let i = 0; i < Math.floor(block / 10); i++) await once(rt, false)
      for (let i = 0; i < Math.min(block, n - done); i++) await once(rt, true)
    }
  }
  for (const rt of rts) {
    const seen = [...problems.get(rt.name)].map(([p, k]) => `${p} (${k}×)`)
    emit(scenario, rt.name, unit, samples.get(rt.name), seen.length ? seen.join('; ') : notes[rt.name])
  }
}

// Builtin runs per host-CPU sample: enough to measure, few enough to repeat.
const CPU_RUNS = 100

/** The CPU time this process (every thread of it) spends per builtin run, µs. */
async function hostCpu(rt) {
  const c0 = process.cpuUsage()
  let failed = 0
  for (let i = 0; i < CPU_RUNS; i++) if ((await rt.run('true', noop)).exitCode !== 0) failed++
  const c = process.cpuUsage(c0)
  return { sample: (c.user + c.system) / CPU_RUNS, problem: failed ? 'did not exit 0' : undefined }
}

const latency = (command) => async (rt) => {
  const t0 = now()
  const r = await rt.run(command, noop)
  return { sample: us(t0), problem: r.exitCode !== 0 ? 'did not exit 0' : undefined }
}

async function runSequence(rt) {
  // A process per command keeps no `cd`: it runs every command in the repo.
  const opts = rt.name === 'spawn' ? { cwd: repo } : {}
  const failed = []
  const t0 = now()
  for (const command of sequence) {
    const r = await rt.run(command, noop, opts)
    if (r.exitCode !== 0) failed.push(command)
  }
  return { sample: ms(t0), problem: failed.length ? `non-zero exit: ${failed.join('; ')}` : undefined }
}

async function throughput(rt) {
  let bytes = 0
  const t0 = now()
  await rt.run(env.BENCH_THROUGHPUT_CMD, (chunk) => {
    bytes += chunk.length
  })
  const secs = Number(now() - t0) / 1e9
  const short = bytes !== Number(env.BENCH_THROUGHPUT_BYTES)
  return { sample: bytes / secs / 1e6, problem: short ? 'did not deliver every byte' : undefined }
}

async function abort(rt) {
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
  return { sample: Number(settled - t0) / 1e6, problem: r.cancelled ? undefined : 'not reported as cancelled' }
}

async function timeout(rt) {
  await rt.run('true', noop)
  const t0 = now()
  const r = await rt.run('/bin/sleep 10', noop, { timeoutMs: TIMEOUT_MS })
  const took = ms(t0)
  return { sample: took - TIMEOUT_MS, problem: r.timedOut || r.cancelled ? undefined : 'did not time out' }
}

async function concurrent(rt) {
  let failures = 0
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
  return { sample: ms(t0), problem: failures ? `${failures} commands did not exit 0` : undefined }
}

const STOP_NOTES = {
  abort: { spawn: 'the signal option: SIGTERM to bash only, its children survive' },
  timeout: { spawn: 'the timeout option: SIGTERM to bash only, its children survive' },
}

async function suite() {
  const conchs = await Promise.all(Object.keys(CONCH_ENGINES).map((name) => conchRuntime(name)))
  const runtimes = [...conchs, spawnRuntime(), piRuntime(benchDir)]
  const plan = [
    ['builtin', 'us', reps([50, 500], [5, 30]), latency('true'), { block: 50 }],
    ['external', 'us', reps([20, 300], [5, 30]), latency('/bin/true'), { block: 50 }],
    ['cpu', 'us', reps([2, 30], [1, 5]), hostCpu, { block: 5 }],
    ['sequence', 'ms', reps([1, 10], [1, 3]), runSequence],
    ['throughput', 'MB/s', reps([0, 3], [0, 1]), throughput],
    ['abort', 'ms', reps([1, 10], [0, 3]), abort],
    ['timeout', 'ms', reps([0, 5], [0, 2]), timeout],
    ['concurrent', 'ms', reps([0, 3], [0, 1]), concurrent],
  ]
  const live = runtimes.filter((rt) => !rt.unavailable)
  for (const [scenario, unit, counts, trial, how = {}] of plan) {
    if (!wants(scenario)) continue
    for (const rt of runtimes) if (rt.unavailable) unavailable(scenario, rt)
    await interleave(scenario, unit, live, counts, trial, { notes: STOP_NOTES[scenario], ...how })
  }
  for (const rt of live) rt.close()
}

async function flood(name) {
  const make = name in CONCH_ENGINES
    ? () => conchRuntime(name)
    : { spawn: spawnRuntime, 'pi-natives': () => piRuntime(benchDir) }[name]
  if (!make) throw new Error(`unknown runtime ${name}`)
  const rt = await make()
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
  console.error('usage: node bench.mjs suite | flood conch|conch-eval|spawn|pi-natives')
  process.exit(2)
}
// pi-natives sessions keep the event loop alive; the measurements are done.
process.exit(0)

// Property-based misuse: random types and values for every argument of every
// export, calls on closed handles and calls made from inside callbacks.
// Every call must throw or reject with an `Error` that has a message, or
// return a result; none may crash the process or hang.
//
// The loop runs in a child Node process (this file, with
// CONCH_MISUSE_CHILD=1): an abort of the addon then shows as the child's
// exit code or signal instead of taking the test runner down with it. A
// call that neither settles nor throws within CALL_GUARD_MS fails the
// property; a call that blocks the JS thread for good is caught by the
// parent's guard on the whole child. The seed is fixed (CONCH_MISUSE_SEED
// overrides it) and printed on failure, with the counterexample.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const SEED = Number(process.env.CONCH_MISUSE_SEED ?? 424242)
const RUNS = Number(process.env.CONCH_MISUSE_RUNS ?? 3000)
const CALL_GUARD_MS = 10_000

if (process.env.CONCH_MISUSE_CHILD === '1') {
  await child()
} else {
  const { test } = await import('node:test')
  const assert = (await import('node:assert/strict')).default
  test('misuse of every export: an Error or a result, never a crash or a hang', () => {
    const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], {
      env: { ...process.env, CONCH_MISUSE_CHILD: '1' },
      encoding: 'utf8',
      // The whole loop takes seconds; this only catches a JS thread that
      // blocked for good.
      timeout: 120_000,
      killSignal: 'SIGKILL',
      maxBuffer: 64 << 20,
    })
    const said = `seed ${SEED}, ${RUNS} runs\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr.slice(-20_000)}`
    assert.equal(run.error?.code, undefined, `child failed to run or hung: ${run.error}\n${said}`)
    assert.equal(run.signal, null, `child killed by ${run.signal}\n${said}`)
    assert.equal(run.status, 0, `child exited with ${run.status}\n${said}`)
    assert.match(run.stdout, /^misuse: \d+ calls checked/m, said)
  })
}

async function child() {
  const fc = (await import('fast-check')).default
  const conch = await import('conch')
  const { tempDir } = await import('./helpers.mjs')

  const dir = tempDir('conch-misuse-')
  const MB = 'a'.repeat(1 << 20)
  const weirdValues = [
    NaN, Infinity, -Infinity, 1e300, -1e300, -1, 0, 1, 2.5, 2 ** 53, 2 ** 31, -0,
    '', 'x', MB, 'a\0b', '\0', '\uD800', 'x\uDC00y', '../..', '/', 'artifact://0',
    {}, [], [1, 'a'], { a: 1 }, null, undefined, () => {}, Symbol('s'), 10n, -10n,
    true, false, new Date(0), /re/, Buffer.from('hi'), new Uint8Array(3),
    Object.create(null),
  ]
  const weird = fc.constantFrom(...weirdValues)
  /**
   * A weird value or a valid one; valid ones are the likelier, so that a
   * call with several arguments often gets past the first check.
   */
  const mostly = (valid, weight = 10) => fc.oneof({ arbitrary: weird, weight: 1 }, { arbitrary: valid, weight })
  const arg = (...valid) => mostly(fc.constantFrom(...valid), 15)
  const commands = arg('true', 'echo hi', 'printf x', 'echo out; echo err >&2', 'exit 3')
  const smallCounts = arg(1, 2, 10)
  const env = mostly(fc.oneof(fc.dictionary(fc.constantFrom('A', 'B_', 'A\0', '', '=', 'PATH'), weird, { maxKeys: 2 }),
    fc.constant({ FUZZ: 'yes' })))
  const envPolicy = mostly(fc.record({ inherit: arg('all', 'core', 'none'), exclude: arg(['*_KEY'], []) },
    { requiredKeys: [] }))

  // Shared handles; the fuzz also closes some of them.
  const handles = {
    shell: new conch.Shell({ snapshot: 'none' }),
    closedShell: new conch.Shell({ snapshot: 'none' }),
    tool: new conch.BashTool({ cwd: dir, snapshot: 'none', sessionKey: `misuse-${process.pid}` }),
    closedTool: new conch.BashTool({ cwd: dir, snapshot: 'none', sessionKey: `misuse-closed-${process.pid}` }),
    pty: new conch.PtySession(),
    store: new conch.ArtifactStore(dir),
  }
  handles.closedShell.close()
  // A job for the polls (ids 1 and 2 of the shell; others name none).
  await handles.shell.run({ command: '(/bin/sleep 0.2; echo late) & (echo now) &' })
  handles.closedTool.close()
  const made = [] // handles the fuzz constructed, closed at the end
  const pending = [] // promises started from inside callbacks

  /** What a callback does: nothing, throw, or call back into conch. */
  const callbackKind = fc.constantFrom('noop', 'throw', 'abort', 'jobs', 'poll', 'run', 'close-victim', 'pure', 'pty', 'tool')
  function makeCallback(kind) {
    if (kind === 'noop') return () => {}
    if (kind === 'throw') return () => { throw new Error('thrown by the callback') }
    return () => {
      // Calls from inside a callback must behave like any other call: an
      // Error or a result. Their own outcomes are checked too.
      const again = (f) => {
        try {
          const r = f()
          if (r && typeof r.then === 'function') pending.push(guard(r, `${kind} from a callback`))
        } catch (err) {
          checkError(err, `${kind} from a callback`)
        }
      }
      if (kind === 'abort') again(() => handles.shell.abort())
      else if (kind === 'jobs') again(() => [handles.shell.backgroundJobs(), handles.shell.jobs()])
      else if (kind === 'poll') again(() => handles.shell.poll(1, { waitMs: 5 }))
      else if (kind === 'run') again(() => handles.shell.run({ command: 'true' }))
      else if (kind === 'close-victim') again(() => victim().close())
      else if (kind === 'pure') again(() => conch.sanitizeText(conch.applyHeadTail('a\nb\n', 1)))
      else if (kind === 'pty') again(() => handles.pty.screenText())
      else if (kind === 'tool') again(() => handles.tool.execute({ command: 'true' }))
    }
  }
  const callback = mostly(callbackKind.map(makeCallback), 8)
  let victimShell
  function victim() {
    victimShell ??= new conch.Shell({ snapshot: 'none' })
    made.push(victimShell)
    return victimShell
  }
  const signal = mostly(fc.oneof(fc.constantFrom('fresh', 'aborted', 'abort-soon').map((k) => {
    const ac = new AbortController()
    if (k === 'aborted') ac.abort()
    if (k === 'abort-soon') setTimeout(() => ac.abort(), 1)
    return ac.signal
  }), fc.constant({ aborted: false }), fc.constant({ addEventListener: 5 })), 8)

  const shellOptions = mostly(fc.record({
    shell: arg('bash', '/bin/bash', '/nonexistent'), cwd: arg(dir, '/nonexistent', '.'), env,
    snapshot: arg('none', '/nonexistent'), prefix: arg('command', 'builtin'), nonInteractiveEnv: arg(true, false),
    maxBytes: smallCounts, artifactsDir: arg(dir), envPolicy,
  }, { requiredKeys: [] }).map((o) => ({ snapshot: 'none', ...o })))
  const runOptions = mostly(fc.record({
    command: commands, cwd: arg(dir, '.', '/nonexistent'), env, timeoutMs: arg(5000, 1), signal,
    head: smallCounts, tail: smallCounts,
  }, { requiredKeys: ['command'] }))
  const executeShellOptions = mostly(fc.record({
    command: commands, shell: arg('bash', 'sh', '/nonexistent'), cwd: arg(dir, '/nonexistent'), env,
    timeoutMs: arg(5000), signal, head: smallCounts, tail: smallCounts, nonInteractiveEnv: arg(true),
    maxBytes: smallCounts, artifactsDir: arg(dir), envPolicy,
  }, { requiredKeys: ['command'] }))
  const sessionKeys = arg(`misuse-a-${process.pid}`, `misuse-b-${process.pid}`)
  const executeBashOptions = mostly(fc.record({
    sessionKey: sessionKeys, shell: arg('bash'), prefix: arg('command'), snapshot: arg('none'),
    sessionEnv: env, cwd: arg(dir, '/nonexistent'), env, timeoutMs: arg(5000), signal, onChunk: callback,
    artifactsDir: arg(dir), head: smallCounts, tail: smallCounts,
  }, { requiredKeys: [] }).map((o) => ({ snapshot: 'none', sessionKey: `misuse-a-${process.pid}`, ...o })))
  const rule = mostly(fc.record({
    pattern: arg('^rm\\s', '(', '.*', '[z-a]'), flags: arg('i', 'q', 'imsx'), tool: arg('trash'), message: arg('no'),
  }, { requiredKeys: [] }))
  const rules = mostly(fc.array(rule, { maxLength: 3 }))
  const toolOptions = mostly(fc.record({
    cwd: arg(dir, '/nonexistent', 'relative'), artifactsDir: arg(dir), toolNames: arg(['read'], []),
    interceptor: arg(true, false), rules, virtualTerminal: arg(false), hasUI: arg(false),
    sessionKey: sessionKeys, shell: arg('bash'), prefix: arg('command'), snapshot: arg('none'),
    sessionEnv: env, updateIntervalMs: arg(0, 50),
  }, { requiredKeys: ['cwd'] }).map((o) => ({ snapshot: 'none', sessionKey: `misuse-a-${process.pid}`, ...o })))
  const toolArgs = mostly(fc.record({
    command: commands, cwd: arg('.', '/nonexistent'), timeout: arg(5, 1), head: smallCounts, tail: smallCounts,
  }, { requiredKeys: ['command'] }))
  const executeOptions = mostly(fc.record({ onUpdate: callback, signal }, { requiredKeys: [] }))
  const ptyOptions = mostly(fc.record({
    command: commands, cwd: arg(dir, '/nonexistent'), env, timeoutMs: arg(5000), signal,
    cols: arg(80, 20), rows: arg(24, 5), shell: arg('bash', '/nonexistent'), nonInteractiveEnv: arg(true),
    envPolicy, maxBytes: smallCounts,
  }, { requiredKeys: ['command'] }))
  const pollOptions = mostly(fc.record({
    waitMs: arg(0, 20), until: arg('late', 'x', '(', '[z-a]'), maxBytes: smallCounts, cursor: arg(0, 3, 99), signal,
  }, { requiredKeys: [] }))
  const anyShell = fc.constantFrom('shell', 'closedShell')
  const anyTool = fc.constantFrom('tool', 'closedTool')
  const ptyData = arg('q', '\r', Buffer.from('x'))

  // [name, arbitrary of the call's arguments, the call]
  const entries = [
    ['new Shell', fc.tuple(shellOptions), (o) => keep(new conch.Shell(o))],
    ['Shell()', fc.tuple(weird), (o) => conch.Shell(o)],
    ['Shell.run', fc.tuple(anyShell, runOptions, callback), (h, o, f) => handles[h].run(o, f)],
    ['Shell.abort', fc.tuple(anyShell, weird), (h, x) => handles[h].abort(x)],
    ['Shell.backgroundJobs', fc.tuple(anyShell), (h) => handles[h].backgroundJobs()],
    ['Shell.jobs', fc.tuple(anyShell, weird), (h, x) => handles[h].jobs(x)],
    ['Shell.poll', fc.tuple(anyShell, arg(1, 2, 99), pollOptions), (h, j, o) => handles[h].poll(j, o)],
    ['Shell.poll of a victim', fc.tuple(arg(1), pollOptions), (j, o) => victim().poll(j, o)],
    ['Shell.close', fc.tuple(weird), (x) => victim().close(x)],
    ['Shell.run on a foreign this', fc.tuple(weird, runOptions), (t, o) => conch.Shell.prototype.run.call(t, o)],
    ['Shell.poll on a foreign this', fc.tuple(weird, arg(1), pollOptions),
      (t, j, o) => conch.Shell.prototype.poll.call(t, j, o)],
    ['executeShell', fc.tuple(executeShellOptions, callback), (o, f) => conch.executeShell(o, f)],
    ['executeBash', fc.tuple(commands, executeBashOptions), (c, o) => conch.executeBash(c, o)],
    ['closeBashSession', fc.tuple(arg(`misuse-b-${process.pid}`)), (k) => conch.closeBashSession(k)],
    ['normalizeBashCommand', fc.tuple(arg('ls | head -n 3', 'a | tail -n 1')), (c) => conch.normalizeBashCommand(c)],
    ['applyHeadTail', fc.tuple(arg('a\nb\nc\n'), smallCounts, smallCounts), (t, h, l) => conch.applyHeadTail(t, h, l)],
    ['checkBashInterception', fc.tuple(arg('cat x', 'rm -rf x'), arg(['read'], ['trash']), rules),
      (c, n, r) => conch.checkBashInterception(c, n, r)],
    ['defaultInterceptorRules', fc.tuple(weird), (x) => conch.defaultInterceptorRules(x)],
    ['sanitizeText', fc.tuple(arg('a\x1b[31mb\r\n')), (t) => conch.sanitizeText(t)],
    ['new ArtifactStore', fc.tuple(arg(dir, '/nonexistent')), (d) => new conch.ArtifactStore(d).dir],
    ['ArtifactStore()', fc.tuple(weird), (d) => conch.ArtifactStore(d)],
    ['ArtifactStore.allocate', fc.tuple(arg('bash', 'x/y')), (k) => handles.store.allocate(k)],
    ['ArtifactStore.resolve', fc.tuple(arg('artifact://0', 'artifact://999', '0')), (u) => handles.store.resolve(u)],
    ['ArtifactStore.read', fc.tuple(arg('0', 'artifact://0', '999'), smallCounts, smallCounts),
      (i, o, l) => handles.store.read(i, o, l)],
    ['new BashTool', fc.tuple(toolOptions), (o) => keep(new conch.BashTool(o))],
    ['BashTool()', fc.tuple(weird), (o) => conch.BashTool(o)],
    ['BashTool.execute', fc.tuple(anyTool, toolArgs, executeOptions), (h, a, o) => handles[h].execute(a, o)],
    ['BashTool.close', fc.tuple(anyTool, weird), (h, x) => handles[h].close(x)],
    ['new PtySession', fc.tuple(weird), (x) => new conch.PtySession(x).screenText()],
    ['PtySession()', fc.tuple(weird), (x) => conch.PtySession(x)],
    ['PtySession.start', fc.tuple(ptyOptions, callback), (o, f) => handles.pty.start(o, f)],
    ['PtySession.write', fc.tuple(ptyData), (d) => handles.pty.write(d)],
    ['PtySession.writeKey', fc.tuple(arg('enter', 'ctrl+c', 'nokey')), (k) => handles.pty.writeKey(k)],
    ['PtySession.resize', fc.tuple(smallCounts, smallCounts), (c, r) => handles.pty.resize(c, r)],
    ['PtySession.kill', fc.tuple(weird), (x) => handles.pty.kill(x)],
    ['PtySession.screenText', fc.tuple(weird), (x) => handles.pty.screenText(x)],
    ['PtySession.cursorPosition', fc.tuple(weird), () => handles.pty.cursorPosition()],
  ]

  function keep(handle) {
    made.push(handle)
    return handle
  }

  function describe(value) {
    try {
      return fc.stringify(value).slice(0, 300)
    } catch {
      return String(typeof value)
    }
  }

  class Misbehaved extends Error {}

  function checkError(err, what) {
    if (!(err instanceof Error)) throw new Misbehaved(`${what}: threw a non-Error: ${describe(err)}`)
    if (typeof err.message !== 'string' || err.message.trim() === '') {
      throw new Misbehaved(`${what}: threw an Error with an empty message (code ${describe(err.code)})`)
    }
  }

  function guard(promise, what) {
    let timer
    const hang = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Misbehaved(`${what}: still pending after ${CALL_GUARD_MS} ms`)),
        CALL_GUARD_MS)
    })
    return Promise.race([
      promise.then(() => {}, (err) => checkError(err, `${what} rejected`)),
      hang,
    ]).finally(() => clearTimeout(timer))
  }

  let calls = 0
  const stats = {}
  const property = fc.asyncProperty(
    fc.constantFrom(...entries.keys()).chain((i) => entries[i][1].map((args) => [i, args])),
    async ([i, args]) => {
      const [name, , call] = entries[i]
      calls++
      const tally = (stats[name] ??= { returned: 0, threw: 0, settled: 0 })
      let result
      if (process.env.CONCH_MISUSE_TRACE) process.stderr.write(`${calls} ${name} ${describe(args).slice(0, 200)}\n`)
      try {
        result = call(...args)
      } catch (err) {
        checkError(err, `${name} threw`)
        tally.threw++
        if (process.env.CONCH_MISUSE_STATS) (tally.seen ??= new Set()).add(err.message.slice(0, 100))
        return
      }
      if (result && typeof result.then === 'function') {
        await guard(result, name)
        tally.settled++
      } else {
        tally.returned++
      }
      while (pending.length) await pending.shift()
    },
  )
  const report = await fc.check(property, { seed: SEED, numRuns: RUNS, endOnFailure: true })
  for (const h of made) {
    try {
      h.close?.()
    } catch {}
  }
  handles.shell.close()
  handles.tool.close()
  conch.closeAllBashSessions()
  if (report.failed) {
    console.log(`misuse: FAILED with seed ${SEED} (rerun: CONCH_MISUSE_SEED=${SEED} CONCH_MISUSE_RUNS=${RUNS})`)
    console.log(fc.defaultReportMessage(report))
    process.exit(1)
  }
  console.log(`misuse: ${calls} calls checked, seed ${SEED}`)
  if (process.env.CONCH_MISUSE_STATS) console.log(stats)
  process.exit(0)
}

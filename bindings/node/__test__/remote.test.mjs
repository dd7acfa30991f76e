// `connect`: a real `conch serve` (the release binary), over stdio (a
// subprocess of the client) and over a WebSocket on 127.0.0.1, through the
// calls, results and error codes of a local Shell and PtySession. The sink,
// keys and artifact vectors replay through remote objects and agree with
// the local ones.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { rmdirSync } from 'node:fs'
import { once } from 'node:events'
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { RemoteArtifactStore, RemoteFiles, RemotePty, connect } from 'conch'
import { CONCH, STDIO_SERVER as STDIO, expectGone, expectProcesses, settlesInTime, tempDir, uniqueWord, waitFor } from './helpers.mjs'
import { artifactVectorsThrough, keyVectorsThrough, sinkVectorsThrough } from './replay.mjs'

const TLS = fileURLToPath(new URL('../../../tests/tls/', import.meta.url))

/** `conch serve --listen 127.0.0.1:0 ...args` with CONCH_TOKEN `token`; its URL. */
async function listening(token, args = []) {
  const child = spawn(CONCH, ['serve', '--listen', '127.0.0.1:0', ...args], {
    env: { ...process.env, CONCH_TOKEN: token },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const [line] = await once(createInterface({ input: child.stderr }), 'line')
  const prefix = 'conch serve: listening on '
  assert.ok(line.startsWith(prefix), line)
  return { child, url: `ws://${line.slice(prefix.length)}` }
}

test('a remote session runs as a local one', async () => {
  const remote = await connect(STDIO)
  try {
    const dir = tempDir()
    const shell = await remote.shell({ cwd: dir, snapshot: 'none' })
    let streamed = ''
    const r = await shell.run({ command: 'echo one; echo two >&2; (exit 3)' }, (c) => {
      streamed += c
    })
    assert.equal(r.output, 'one\ntwo\n')
    assert.equal(streamed, 'one\ntwo\n')
    assert.equal(r.exitCode, 3)
    await shell.run({ command: 'export KEPT=1; cd /' })
    const again = await shell.run({ command: 'echo $KEPT; pwd', timeoutMs: 5000 })
    assert.equal(again.output, '1\n/\n')
    assert.equal(again.workingDir, '/')
    assert.equal(shell.sandboxApplied, null)
    await shell.run({ command: '/bin/sleep 3076.5 & echo started' })
    assert.equal((await shell.backgroundJobs()).length, 1)
    await expectProcesses('3076.5', 1)
    await shell.reset() // on the server: a fresh bash in the start directory
    await expectGone('3076.5')
    const fresh = await shell.run({ command: 'echo ${KEPT:-unset}; pwd' })
    assert.equal(fresh.output, `unset\n${dir}\n`)
    assert.equal(fresh.sessionReset, false)
    await shell.run({ command: '/bin/sleep 3076.5 & echo started' })
    await expectProcesses('3076.5', 1)
    await shell.close()
    await expectGone('3076.5')
    await shell.close() // idempotent
    await assert.rejects(shell.run({ command: 'true' }), { code: 'Closed' })
  } finally {
    remote.close()
  }
})

test('errors are the local ones', async () => {
  const remote = await connect(STDIO)
  try {
    await assert.rejects(remote.shell({ maxBytes: 0 }), { code: 'InvalidArgument', message: /^maxBytes must be/ })
    await assert.rejects(remote.shell({ maxBytes: 'many' }), { name: 'TypeError' })
    const shell = await remote.shell({ snapshot: 'none' })
    await assert.rejects(shell.run({ command: 'true', cwd: '/no/such/dir' }), { code: 'InvalidArgument', message: /no\/such\/dir/ })
    assert.throws(() => shell.run({ command: 'true', timeoutMs: -1 }), { code: 'InvalidArgument' })
    assert.throws(() => shell.run('true'), { name: 'TypeError' })
    await shell.close()
  } finally {
    remote.close()
  }
  await assert.rejects(connect('ws://127.0.0.1:9'), { code: 'ConnectionLost', message: /cannot connect/ })
  await assert.rejects(connect(['/no/such/conch']), { code: 'ConnectionLost', message: /cannot start/ })
  assert.throws(() => connect(7), { name: 'TypeError' })
})

test('a signal aborts the remote command', async () => {
  const remote = await connect(STDIO)
  try {
    const shell = await remote.shell({ snapshot: 'none' })
    const word = uniqueWord('7')
    const controller = new AbortController()
    const run = shell.run({ command: `/bin/sleep 100.${word}`, signal: controller.signal })
    await expectProcesses(word)
    controller.abort()
    const r = await settlesInTime(run, 'the aborted run')
    assert.equal(r.cancelled, true)
    assert.match(r.output, /^\[Command cancelled\]/)
    await expectGone(word)
    const run2 = shell.run({ command: `/bin/sleep 100.${word}` })
    await expectProcesses(word)
    shell.abort()
    assert.equal((await settlesInTime(run2, 'the run abort() stopped')).cancelled, true)
    await shell.close()
  } finally {
    remote.close()
  }
})

test('a WebSocket server asks for its token', async () => {
  const { child, url } = await listening('s3cret')
  try {
    await assert.rejects(connect(url), { code: 'Auth' })
    await assert.rejects(connect(url, { token: 'wrong' }), { code: 'Auth' })
    const remote = await connect(url, { token: 's3cret' })
    const shell = await remote.shell({ snapshot: 'none' })
    assert.equal((await shell.run({ command: 'echo over ws' })).output, 'over ws\n')
    await shell.close()
    remote.close()
  } finally {
    child.kill('SIGTERM')
    const [code] = await once(child, 'exit')
    assert.equal(code, 0)
  }
})

test('a TLS server is reached with its CA', async () => {
  const { child, url } = await listening('t1s', ['--tls-cert', `${TLS}server.pem`, '--tls-key', `${TLS}server.key`])
  try {
    const wss = url.replace('ws://', 'wss://')
    const remote = await connect(wss, { token: 't1s', ca: `${TLS}ca.pem` })
    const shell = await remote.shell({ snapshot: 'none' })
    assert.equal((await shell.run({ command: 'echo private' })).output, 'private\n')
    await shell.close()
    remote.close()
    await assert.rejects(connect(wss, { token: 't1s', ca: `${TLS}server.pem` }), { code: 'ConnectionLost', message: /certificate/ })
  } finally {
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
})

test('jobs of a remote session are the local calls', async () => {
  const remote = await connect(STDIO)
  try {
    const ended = []
    const shell = await remote.shell({ snapshot: 'none', onJobExit: (info) => ended.push(info) })
    const job = await shell.start({ command: 'for i in 1 2 3; do echo $i; done' })
    assert.equal(await shell.waitAny([job], 10_000), job)
    const poll = await shell.poll(job)
    assert.deepEqual([poll.output, poll.status, poll.exitCode], ['1\n2\n3\n', 'exited', 0])
    const [info] = await shell.jobs()
    assert.equal(info.job, job)
    assert.ok(await waitFor(() => ended.length === 1), 'onJobExit heard the end')
    assert.deepEqual([ended[0].job, ended[0].status, ended[0].exitCode], [job, 'exited', 0])
    assert.throws(() => remote.shell({ onJobExit: 7 }), { name: 'TypeError' })
    const reader = await shell.start({ command: 'read line; echo "got $line"', stdin: true })
    await shell.write(reader, 'hi\n')
    assert.equal((await shell.poll(reader, { waitMs: 10_000, until: 'got' })).output, 'got hi\n')
    const word = uniqueWord('6')
    const sleeper = await shell.start({ command: `/bin/sleep 100.${word}` })
    await expectProcesses(word)
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    const waited = await settlesInTime(shell.poll(sleeper, { waitMs: 60_000, signal: controller.signal }), 'the aborted poll')
    assert.equal(waited.status, 'running')
    assert.equal((await shell.kill(sleeper)).status, 'killed')
    await expectGone(word)
    await assert.rejects(shell.poll(99), { code: 'NotFound', message: 'no job 99 in this session' })
    assert.throws(() => shell.signal(job, 'NOPE'), { code: 'InvalidArgument' })
    await shell.close()
    assert.deepEqual(await shell.jobs(), [])
  } finally {
    remote.close()
  }
})

test('sink vectors, through a remote session', async (t) => {
  const remote = await connect(STDIO)
  try {
    await sinkVectorsThrough(t, (options) => remote.shell(options))
  } finally {
    remote.close()
  }
})

test('remote files: a round trip by range, stat, list, remove', async () => {
  const remote = await connect(STDIO)
  try {
    const dir = tempDir()
    const files = remote.files
    assert.ok(files instanceof RemoteFiles)
    await files.write(`${dir}/a/b.txt`, 'hello, remote', { mode: 0o600 })
    assert.equal(readFileSync(`${dir}/a/b.txt`, 'utf8'), 'hello, remote')
    assert.equal(statSync(`${dir}/a/b.txt`).mode & 0o7777, 0o600)
    const whole = await files.read(`${dir}/a/b.txt`)
    assert.ok(Buffer.isBuffer(whole))
    assert.equal(whole.toString(), 'hello, remote')
    assert.equal((await files.read(`${dir}/a/b.txt`, { offset: 7, limit: 3 })).toString(), 'rem')
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
    await files.write(`${dir}/a/b.txt`, bytes)
    assert.deepEqual(await files.read(`${dir}/a/b.txt`), bytes)
    const stat = await files.stat(`${dir}/a/b.txt`)
    assert.deepEqual([stat.name, stat.type, stat.size, stat.mode], ['b.txt', 'file', 256, 0o600])
    symlinkSync(`${dir}/a/b.txt`, `${dir}/a/link`)
    const entries = await files.list(`${dir}/a`)
    assert.deepEqual(entries.map((e) => [e.name, e.type]), [['b.txt', 'file'], ['link', 'symlink']])
    assert.equal(entries[1].target, `${dir}/a/b.txt`)
    await assert.rejects(files.remove(`${dir}/a`), { code: 'Io' })
    await files.remove(`${dir}/a`, { recursive: true })
    assert.ok(!existsSync(`${dir}/a`))
  } finally {
    remote.close()
  }
})

/**
 * Starts `options` on `pty`; once its output holds `word`, resolves with
 * `{ run }`, the promise of its result.
 */
async function startedUntil(pty, options, word) {
  let seen = ''
  let wake = () => {}
  const run = pty.start(options, (c) => {
    seen += c
    wake()
  })
  while (!seen.includes(word)) {
    await settlesInTime(Promise.race([new Promise((resolve) => (wake = resolve)), run]), `${word} in ${seen}`)
  }
  return { run }
}

test('a remote pty has the calls of a local one', async () => {
  const remote = await connect(STDIO)
  try {
    const pty = await remote.pty()
    assert.ok(pty instanceof RemotePty)
    let run = (await startedUntil(pty, { command: 'printf "name? "; read -r line; echo "got [$line]"', cols: 40 }, 'name? ')).run
    assert.equal(await pty.isRunning(), true)
    assert.deepEqual(await pty.cursorPosition(), { row: 0, col: 6 })
    await pty.write(Buffer.from('héllo\r'))
    let r = await settlesInTime(run, 'the prompt')
    assert.deepEqual([r.exitCode, r.cancelled], [0, false])
    assert.match(r.output, /got \[héllo\]/)
    assert.match(await pty.screenText(), /got \[héllo\]/)

    const word = uniqueWord('7')
    run = (await startedUntil(pty, { command: `echo go; /bin/sleep 100.${word}` }, 'go')).run
    await expectProcesses(word)
    await pty.writeKey('ctrl+c')
    r = await settlesInTime(run, 'the interrupted command')
    assert.deepEqual([r.exitCode, r.cancelled], [130, false])
    await expectGone(word)

    run = (await startedUntil(pty, { command: 'echo go; read -r x; stty size' }, 'go')).run
    await pty.resize(100, 30)
    await pty.write('\r')
    assert.match((await settlesInTime(run, 'stty size')).output, /30 100/)
    assert.equal(await pty.isRunning(), false)

    run = (await startedUntil(pty, { command: `echo go; /bin/sleep 100.${word}` }, 'go')).run
    await expectProcesses(word)
    await pty.kill()
    r = await settlesInTime(run, 'the killed command')
    assert.deepEqual([r.exitCode, r.cancelled], [undefined, true])
    await expectGone(word)

    const controller = new AbortController()
    run = (await startedUntil(pty, { command: `echo go; /bin/sleep 100.${word}`, signal: controller.signal }, 'go')).run
    await expectProcesses(word)
    controller.abort()
    r = await settlesInTime(run, 'the aborted command')
    assert.ok(r.cancelled && r.output.startsWith('[Command cancelled]'), r.output)
    await expectGone(word)

    await assert.rejects(pty.write(Buffer.from([0xff])), { code: 'InvalidArgument', message: /must be UTF-8 text/ })
    await assert.rejects(pty.writeKey('enter'), { code: 'InvalidArgument', message: 'PTY session is not running' })
    await assert.rejects(pty.start({ command: 'true', timeoutMs: 'x' }), { name: 'TypeError' })
    await assert.rejects(pty.start({ command: 'true', cols: -1 }), { code: 'InvalidArgument', message: /^cols must be/ })
    assert.throws(() => pty.start('true'), { name: 'TypeError' })

    run = pty.start({ command: `/bin/sleep 100.${word}` })
    await expectProcesses(word)
    await pty.close()
    await expectGone(word)
    await run.then((ended) => assert.ok(ended.cancelled), (err) => assert.equal(err.code, 'SessionLost'))
    await pty.close() // idempotent
    await assert.rejects(pty.screenText(), { code: 'Closed' })
  } finally {
    remote.close()
  }
})

test('remote files: errors are the local codes', async () => {
  const remote = await connect(STDIO)
  try {
    const dir = tempDir()
    const files = remote.files
    await assert.rejects(files.read(`${dir}/missing`), { code: 'NotFound', message: /no such file/ })
    await assert.rejects(files.stat(`${dir}/missing`), { code: 'NotFound' })
    await assert.rejects(files.read(dir), { code: 'Io' })
    await assert.rejects(files.read(`${dir}/x`, { limit: 2 ** 30 }), {
      code: 'InvalidArgument', message: /^limit must be at most/,
    })
    assert.throws(() => files.read(`${dir}/x`, { offset: -1 }), { code: 'InvalidArgument', message: /^offset must be/ })
    assert.throws(() => files.read(`${dir}/x`, 7), TypeError)
  } finally {
    remote.close()
  }
})

test('keys vectors, through a remote pty', async (t) => {
  const remote = await connect(STDIO)
  try {
    await keyVectorsThrough(t, await remote.pty())
  } finally {
    remote.close()
  }
})

test('remote files of a session are confined by its sandbox', async () => {
  const remote = await connect(STDIO)
  try {
    const dir = tempDir()
    mkdirSync(`${dir}/inside`)
    mkdirSync(`${dir}/outside`)
    const shell = await remote.shell({ cwd: `${dir}/inside`, snapshot: 'none', sandbox: { writable: [] } })
    await shell.files.write('mine.txt', 'in')
    assert.equal(readFileSync(`${dir}/inside/mine.txt`, 'utf8'), 'in')
    assert.equal((await shell.run({ command: 'cat mine.txt' })).output, 'in')
    await assert.rejects(shell.files.write(`${dir}/outside/x`, 'x'), { code: 'Io' })
    assert.ok(!existsSync(`${dir}/outside/x`))
    await shell.close()
    assert.throws(() => shell.files, { code: 'Closed' })
  } finally {
    remote.close()
  }
})

test('a spilled output is read by range on the server', async () => {
  const remote = await connect(STDIO)
  try {
    const dir = tempDir()
    const shell = await remote.shell({ cwd: dir, snapshot: 'none', maxBytes: 100, artifactsDir: `${dir}/a` })
    const r = await shell.run({ command: 'seq 1 5000' })
    const store = shell.artifacts
    assert.ok(store instanceof RemoteArtifactStore)
    assert.equal(await store.read(r.artifactId, 10, 3), '11\n12\n13\n')
    assert.equal(await store.read(`artifact://${r.artifactId}`, 4998), '4999\n5000\n')
    const whole = Array.from({ length: 5000 }, (_, i) => `${i + 1}\n`).join('')
    assert.equal(await store.resolve(`artifact://${r.artifactId}`), whole)
    await assert.rejects(store.read('999'), { code: 'NotFound', message: /^Artifact 999 not found/ })
    assert.throws(() => store.read(r.artifactId, -1), { code: 'InvalidArgument', message: /^offset must be/ })
    await shell.close()
    await assert.rejects(store.read(r.artifactId), { code: 'SessionLost' })
    assert.throws(() => shell.artifacts, { code: 'Closed' })
  } finally {
    remote.close()
  }
})

test('artifact vectors, through a remote session', async (t) => {
  const remote = await connect(STDIO)
  try {
    await artifactVectorsThrough(
      t,
      async (dir, c) => {
        const shell = await remote.shell({ snapshot: 'none', artifactsDir: dir })
        // The session made its directory; a case without one has it removed.
        if (c.files === null) rmdirSync(dir)
        return { store: shell.artifacts, close: () => shell.close() }
      },
      // No remote allocate: a remote store only reads what its session spilled.
      (c) => c.op !== 'allocate',
    )
  } finally {
    remote.close()
  }
})

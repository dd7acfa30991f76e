// PtySession: a command on a terminal, input, screen, stop.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { PtySession } from 'conch'
import { HANG_GUARD_MS, expectGone, expectProcesses, settlesInTime, uniqueWord } from './helpers.mjs'

describe('PtySession', () => {
  test('runs a command on a terminal and keeps the screen', async () => {
    const pty = new PtySession()
    const chunks = []
    const r = await pty.start({ command: 'printf "\\033[31mred\\033[0m\\n"; tty >/dev/null && echo on-a-tty' }, (c) => chunks.push(c))
    assert.equal(r.exitCode, 0)
    assert.equal(r.cancelled, false)
    assert.equal(r.timedOut, false)
    assert.equal(r.output, 'red\non-a-tty\n')
    assert.ok(chunks.join('').includes('\x1b[31mred'), 'raw terminal text keeps its escapes')
    assert.match(pty.screenText(), /^red\non-a-tty/)
    assert.equal(pty.isRunning(), false)
  })

  test('input reaches the program; the size is the one asked for', async () => {
    const pty = new PtySession()
    let typed = false
    // The deadline is a hang guard: the command waits for the input.
    const run = pty.start({ command: 'stty size; read -r line; echo "got $line"', cols: 90, rows: 30, timeoutMs: HANG_GUARD_MS }, () => {
      if (!typed && pty.isRunning()) {
        typed = true
        pty.write('hello\r')
      }
    })
    const r = await run
    assert.equal(r.exitCode, 0)
    assert.match(r.output, /^30 90\n/)
    assert.match(r.output, /got hello\n$/)
  })

  test('writeKey sends named keys; write takes a Buffer', async () => {
    const pty = new PtySession()
    let sent = false
    const r = await pty.start({ command: 'echo ready; read -r a; read -r b; echo "[$a][$b]"', timeoutMs: HANG_GUARD_MS }, () => {
      if (!sent && pty.isRunning()) {
        sent = true
        pty.write(Buffer.from('one'))
        pty.writeKey('enter')
        pty.write('two\r')
      }
    })
    assert.equal(r.timedOut, false)
    assert.match(r.output, /\[one\]\[two\]\n$/)
  })

  test('kill() stops the command and its processes', async () => {
    const word = uniqueWord('6')
    const pty = new PtySession()
    const run = pty.start({ command: `/bin/sleep 100.${word}` })
    await expectProcesses(word)
    pty.kill()
    const r = await settlesInTime(run, 'the killed PTY run')
    assert.equal(r.cancelled, true)
    assert.equal(r.timedOut, false)
    await expectGone(word)
    assert.throws(() => pty.kill(), { code: 'InvalidArgument' })
    assert.throws(() => pty.write('x'), { code: 'InvalidArgument' })
  })

  test('timeout and abort signal', async () => {
    // The sleeps outlast the deadline and the abort by far; an abort that
    // fires before the command starts cancels it just the same.
    const pty = new PtySession()
    const timed = await pty.start({ command: '/bin/sleep 10', timeoutMs: 200 })
    assert.equal(timed.timedOut, true)
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 100)
    const aborted = await pty.start({ command: '/bin/sleep 10', signal: ac.signal })
    assert.equal(aborted.cancelled, true)
    const pre = await pty.start({ command: 'echo never', signal: AbortSignal.abort() })
    assert.equal(pre.cancelled, true)
    assert.equal(pre.output, '[Command cancelled]\n')
  })

  test('a second start while one runs is refused', async () => {
    // The first command waits for a line only the test sends, after the
    // refused start: it is running all along.
    const pty = new PtySession()
    let text = ''
    let waiting
    const ready = new Promise((resolve) => {
      waiting = resolve
    })
    const first = pty.start({ command: 'echo waiting; read -r line; echo "done $line"' }, (c) => {
      text += c
      if (text.includes('waiting')) waiting()
    })
    await settlesInTime(ready, 'the first command printing waiting')
    await assert.rejects(pty.start({ command: 'true' }), { code: 'InvalidArgument', message: 'PTY session already running' })
    pty.write('go\r')
    const r = await settlesInTime(first, 'the first command')
    assert.equal(r.exitCode, 0)
    assert.match(r.output, /done go\n$/)
  })

  test('a bad cwd is refused as in Shell', async () => {
    const pty = new PtySession()
    await assert.rejects(async () => pty.start({ command: 'true', cwd: '/no/such/dir/for/conch' }), {
      code: 'InvalidArgument',
      message: 'Working directory does not exist: /no/such/dir/for/conch',
    })
  })
})

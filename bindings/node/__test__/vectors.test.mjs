// Replays the shared vectors (tests/vectors/*.json) that concern what the
// Node face exposes; the same files are replayed by the Rust, C and Python
// suites. Every file in the directory is either replayed here or listed in
// NOT_EXPOSED with the reason, and a replayed file that is missing fails.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  ArtifactStore,
  BashTool,
  PtySession,
  Shell,
  applyHeadTail,
  checkBashInterception,
  normalizeBashCommand,
  sanitizeText,
} from 'conch'
import {
  HANG_GUARD_MS,
  VECTORS_DIR,
  expectGone,
  expectProcesses,
  settlesInTime,
  tempDir,
  uniqueWord,
  vectorsPath,
  waitFor,
} from './helpers.mjs'
import { printPieces, replay, sinkVectorsThrough, toolVectorsThrough, vectorCases } from './replay.mjs'

/** The vector files the Node suite replays: here, or (job_steps, job_tool) in a file of their own. */
const REPLAYED = [
  'artifact', 'intercept', 'job_steps', 'job_tool', 'jobs', 'keys', 'normalize', 'sandbox_options', 'sanitize',
  'sink', 'tool', 'tool_definition',
]

/** The vector files whose functions the Node face does not expose, and why. */
const NOT_EXPOSED = {
  notice:
    'format_size, Truncation::from_counts and format_output_notice have no Node API of their own; ' +
    'their text shows in BashTool results, which tool.json replays',
  render:
    'tool_preview, bang_preview, clamp_line and truncation_warning render output for a terminal UI ' +
    'and have no Node API',
}

test('every vector file is replayed or has a stated reason not to be', () => {
  const files = readdirSync(VECTORS_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort()
  assert.deepEqual(files, [...REPLAYED, ...Object.keys(NOT_EXPOSED)].sort())
})



/** JSON null → undefined, as the Node API takes optional arguments. */
const opt = (v) => (v === null ? undefined : v)

test('normalize vectors', async (t) => {
  await replay(t, 'normalize', (c) => {
    switch (c.fn) {
      case 'normalize': {
        const n = normalizeBashCommand(c.command)
        assert.deepEqual(
          { command: n.command, head_lines: n.headLines ?? null, tail_lines: n.tailLines ?? null },
          c.expect,
        )
        break
      }
      case 'apply_head_tail':
        assert.equal(applyHeadTail(c.text, opt(c.head), opt(c.tail)), c.expect)
        break
      default:
        throw new Error(`unknown fn ${c.fn}`)
    }
  })
})

test('intercept vectors', async (t) => {
  await replay(t, 'intercept', (c) => {
    let rules = opt(c.rules)?.map((r) => ({ ...r, flags: opt(r.flags) }))
    const badRules = c.rule_errors ?? []
    if (badRules.length > 0) {
      // The function refuses a rule set with an invalid rule, naming each;
      // the case's verdict is then what the valid rules alone decide.
      assert.throws(() => checkBashInterception(c.command, c.tool_names, rules), (err) => {
        assert.equal(err.code, 'InvalidArgument')
        for (const index of badRules) assert.ok(err.message.includes(`interceptor rule ${index} `), err.message)
        return true
      })
      rules = rules.filter((_, i) => !badRules.includes(i))
    }
    const hit = checkBashInterception(c.command, c.tool_names, rules)
    if (c.expect === null) {
      assert.equal(hit, null)
    } else {
      assert.equal(hit.block, true)
      assert.deepEqual({ message: hit.message, suggested_tool: hit.suggestedTool }, c.expect)
    }
  })
})

/** A sanitize vector's input bytes. */
function inputBytes(c) {
  return c.input !== undefined ? Buffer.from(c.input, 'utf8') : Buffer.from(c.input_bytes)
}

test('sanitize vectors: sanitizeText', async (t) => {
  await replay(t, 'sanitize', (c) => {
    // Text cases only: a JS string cannot hold the invalid UTF-8 of the
    // byte cases, which the next test sends through a command.
    if (c.input !== undefined) assert.equal(sanitizeText(c.input), c.expect)
  })
})


test('sanitize vectors: command output, split where the case says', async (t) => {
  // The bytes go through a real command, so invalid UTF-8 and sequences
  // split across reads reach the streaming sanitizer as they would live.
  const shell = new Shell({ snapshot: 'none' })
  try {
    await replay(t, 'sanitize', async (c) => {
      const bytes = inputBytes(c)
      const cuts = [0, ...(c.chunks ?? []), bytes.length]
      const pieces = cuts.slice(1).map((end, p) => bytes.subarray(cuts[p], end))
      const streamed = []
      const r = await shell.run({ command: printPieces(tempDir(), pieces) }, (chunk) => streamed.push(chunk))
      assert.equal(r.output, c.expect)
      assert.equal(streamed.join(''), c.expect)
    })
  } finally {
    shell.close()
  }
})

test('sink vectors, through Shell.run', (t) => sinkVectorsThrough(t, (options) => new Shell(options)))

/**
 * A program for the PTY that reports the bytes it receives. In raw mode (no
 * echo, no line editing, no signal keys), with application cursor keys
 * (DECCKM) switched on when its argument is `app`, it prints READY, then
 * for each KEY_END it reads a line `=<hex of the bytes before it>=`; it
 * exits on KEY_QUIT.
 */
const KEY_END = '<<conch-key-end>>'
const KEY_QUIT = '<<conch-key-quit>>'
const KEY_READER = `
process.stdin.setRawMode(true)
const END = Buffer.from(${JSON.stringify(KEY_END)})
const QUIT = Buffer.from(${JSON.stringify(KEY_QUIT)})
let got = Buffer.alloc(0)
process.stdout.write((process.argv[2] === 'app' ? '\\x1b[?1h' : '') + 'READY\\n')
process.stdin.on('data', (data) => {
  got = Buffer.concat([got, data])
  if (got.includes(QUIT)) process.exit(0)
  let at
  while ((at = got.indexOf(END)) >= 0) {
    process.stdout.write('=' + got.subarray(0, at).toString('hex') + '=\\n')
    got = got.subarray(at + END.length)
  }
})
`

test('keys vectors, through a real PTY', async (t) => {
  // Each case's input (PtySession.write) or key name (writeKey) is sent to
  // KEY_READER on the terminal, in the cursor-key mode the case names;
  // the bytes the program read are compared with the case's.
  const script = join(tempDir(), 'key-reader.cjs')
  writeFileSync(script, KEY_READER)
  // Every case names its mode, so the two passes below replay them all.
  const modeless = vectorCases('keys').filter((c) => typeof c.app_cursor !== 'boolean')
  assert.deepEqual(modeless, [])
  for (const appCursor of [false, true]) {
    const pty = new PtySession()
    let text = ''
    const replies = []
    let wake = () => {}
    /** The next line the reader prints (asked for before what prompts it is sent). */
    const nextReply = async (what) => {
      const index = replies.length
      while (replies.length <= index) {
        await settlesInTime(new Promise((resolve) => (wake = resolve)), what)
      }
      return replies[index]
    }
    const run = pty.start(
      {
        command: `exec '${process.execPath}' '${script}' ${appCursor ? 'app' : 'normal'}`,
        timeoutMs: 6 * HANG_GUARD_MS,
      },
      (chunk) => {
        text += chunk
        if (replies.length === 0 && text.includes('READY')) replies.push('ready')
        for (const m of text.matchAll(/=([0-9a-f]*)=\r?\n/g)) replies.push(m[1])
        text = text.replace(/^[^]*=([0-9a-f]*)=\r?\n/, '')
        wake()
      },
    )
    // Asked for before the reader can print: chunks reach this thread only
    // once this synchronous code has run.
    const ready = nextReply('the key reader starting')
    try {
      assert.equal(await ready, 'ready')
      await replay(
        t,
        'keys',
        async (c) => {
          const reply = nextReply(`the bytes of ${c.name}`)
          // Awaited below unless a write throws first; never left unhandled.
          reply.catch(() => {})
          let refused
          try {
            if (c.key !== undefined) pty.writeKey(c.key)
            else pty.write(c.input)
          } catch (err) {
            refused = err
          }
          pty.write(KEY_END)
          const bytes = await reply
          if (c.error_starts_with !== undefined) {
            assert.ok(refused, 'the key was not refused')
            assert.equal(refused.code, 'InvalidArgument')
            assert.ok(refused.message.startsWith(c.error_starts_with), refused.message)
            assert.equal(bytes, '', 'a refused key sends nothing')
          } else {
            if (refused) throw refused
            assert.equal(bytes, Buffer.from(c.expect, 'utf8').toString('hex'))
          }
        },
        (c) => c.app_cursor === appCursor,
      )
      pty.write(KEY_QUIT)
      const r = await settlesInTime(run, 'the key reader')
      assert.equal(r.exitCode, 0, r.output)
    } finally {
      if (pty.isRunning()) pty.kill()
    }
  }
})

const ERROR_CODES = { invalid_argument: 'InvalidArgument', not_found: 'NotFound', io: 'Io' }

/** `next_cursor` → `nextCursor`: a vector's snake_case field as Node spells it. */
const camel = (key) => key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

/**
 * The given fields of `got` against a vector's `want` (snake_case keys); a
 * JSON null stands for a field Node leaves out (`exitCode`, `artifactId`).
 */
function expectFields(got, want, what) {
  for (const [key, value] of Object.entries(want)) {
    assert.deepEqual(got[camel(key)] ?? null, value, `${what}: ${key} of ${JSON.stringify(got)}`)
  }
}

test('jobs vectors, through Shell.jobs and Shell.poll', async (t) => {
  await replay(t, 'jobs', async (c) => {
    const shell = new Shell({ snapshot: 'none' })
    try {
      for (const r of c.runs) {
        assert.equal((await shell.run({ command: r.command })).output, r.output, r.command)
      }
      const own = shell.jobs().at(-1)?.job ?? 0
      for (const [i, p] of c.polls.entries()) {
        const o = p.options
        const options = { waitMs: o.wait_ms, until: o.until, maxBytes: o.max_bytes, cursor: o.cursor }
        const poll = () => shell.poll(p.job ?? own, options)
        if (p.error !== undefined) {
          // Refused whichever way: a bad option throws, an unknown job rejects.
          let err
          try {
            await poll()
          } catch (e) {
            err = e
          }
          assert.ok(err instanceof Error, `poll ${i}: no error`)
          // An unknown job is a failed lookup; a bad option a bad argument.
          const code = err.message.startsWith('no job') ? 'NotFound' : 'InvalidArgument'
          assert.equal(err.code, code, `poll ${i}: ${err.message}`)
          assert.ok(err.message.includes(p.error), `poll ${i}: ${err.message}`)
          continue
        }
        expectFields(await settlesInTime(poll(), `poll ${i}`), p.expect, `poll ${i}`)
      }
      if (c.jobs !== undefined) {
        const listed = shell.jobs()
        assert.equal(listed.length, c.jobs.length, JSON.stringify(listed))
        c.jobs.forEach((want, i) => expectFields(listed[i], want, `job ${i}`))
      }
    } finally {
      shell.close()
    }
  })
})

test('artifact vectors', async (t) => {
  await replay(t, 'artifact', (c) => {
    const dir = join(tempDir(), 'artifacts')
    if (c.files !== null) {
      mkdirSync(dir)
      for (const [name, body] of Object.entries(c.files)) writeFileSync(join(dir, name), body)
    }
    const store = new ArtifactStore(dir)
    const run = () => {
      switch (c.op) {
        case 'allocate':
          return c.kinds.map((kind) => {
            const a = store.allocate(kind)
            assert.equal(a.path, join(dir, `${a.id}.${kind}.log`))
            return `${a.id}.${kind}.log`
          })
        case 'resolve':
          return store.resolve(c.url)
        case 'read':
          return store.read(c.id, c.offset, opt(c.limit))
        default:
          throw new Error(`unknown op ${c.op}`)
      }
    }
    if (c.expect_error) {
      assert.throws(run, {
        code: ERROR_CODES[c.expect_error.kind],
        message: c.expect_error.message,
      })
    } else {
      assert.deepEqual(run(), c.expect)
    }
  })
})

test('tool vectors', (t) => toolVectorsThrough(t, (options) => new BashTool(options)))

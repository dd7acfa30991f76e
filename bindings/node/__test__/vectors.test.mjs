// Replays the shared vectors (tests/vectors/*.json) that concern what the
// Node face exposes; the same files are replayed by the Rust, C and Python
// suites. Every file in the directory is either replayed here or listed in
// NOT_EXPOSED with the reason, and a replayed file that is missing fails.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import {
  ArtifactStore,
  BashTool,
  PtySession,
  Shell,
  applyHeadTail,
  checkBashInterception,
  connect,
  executeShell,
  normalizeBashCommand,
  sanitizeText,
} from 'conch'
import { STDIO_SERVER, VECTORS_DIR, settlesInTime, tempDir } from './helpers.mjs'
import {
  artifactVectorsThrough,
  keyVectorsThrough,
  printPieces,
  replay,
  sinkVectorsThrough,
  toolVectorsThrough,
} from './replay.mjs'

/** The vector files the Node suite replays: here, or (job_steps, job_tool) in a file of their own. */
const REPLAYED = [
  'artifact', 'carriage_return', 'intercept', 'job_steps', 'job_tool', 'jobs', 'keys', 'mask', 'normalize', 'sandbox_options',
  'sanitize', 'sink', 'tool', 'tool_definition',
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
  // The sanitizer's own rule reads `\r` as a line break: `newline`.
  const shell = new Shell({ snapshot: 'none', carriageReturn: 'newline' })
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

/** A mask case's command, then the same output written cut at each byte of a value. */
function maskCommands(c) {
  const commands = [c.command]
  for (let k = c.cut?.from ?? 0; k < (c.cut?.to ?? 0); k++) commands.push(c.cut.command.replaceAll('{k}', String(k)))
  return commands
}

test('mask vectors: executeShell with the env, masked as the case says', async (t) => {
  // No Node call takes pushes: the pieces are written by the command, a
  // value cut at each of its bytes by the case's `cut` commands.
  await replay(t, 'mask', async (c) => {
    for (const command of maskCommands(c)) {
      const streamed = []
      const options = { command, env: c.env }
      if (c.mask !== undefined) options.mask = c.mask
      const r = await executeShell(options, (chunk) => streamed.push(chunk))
      assert.equal(r.output, c.expect, command)
      assert.equal(streamed.join(''), c.expect, command)
      assert.equal(r.totalBytes, Buffer.byteLength(c.expect), command)
    }
  })
})

test('mask: a session masks its env, a run\'s and a job\'s; mask false shows them', async () => {
  const token = 'tok_9f8e7d6c5b4a3210'
  const shell = new Shell({ snapshot: 'none', env: { API_TOKEN: token }, mask: ['DB_URL'] })
  try {
    const r = await shell.run({ command: 'echo "$API_TOKEN" "$DB_URL"', env: { DB_URL: 'postgres://app:pw@db/app' } })
    assert.equal(r.output, '[masked: API_TOKEN] [masked: DB_URL]\n')
    const job = await shell.start({ command: 'printf "%s %s\\n" "$API_TOKEN" "$JOB_SECRET"', env: { JOB_SECRET: 'job-secret-1' } })
    const p = await shell.poll(job, { waitMs: 10000 })
    assert.equal(p.output, '[masked: API_TOKEN] [masked: JOB_SECRET]\n')
  } finally {
    shell.close()
  }
  const open = new Shell({ snapshot: 'none', env: { API_TOKEN: token }, mask: false })
  try {
    assert.equal((await open.run({ command: 'echo "$API_TOKEN"' })).output, `${token}\n`)
  } finally {
    open.close()
  }
  assert.throws(() => new Shell({ mask: 'yes' }), /mask/)
})

test('sink vectors, through Shell.run', (t) => sinkVectorsThrough(t, (options) => new Shell(options)))

test('keys vectors, through a real PTY', (t) => keyVectorsThrough(t, new PtySession()))

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

/** Replays the jobs vectors on the sessions `open(options)` makes. */
async function jobsVectors(t, open) {
  await replay(t, 'jobs', async (c) => {
    const shell = await open({ snapshot: 'none' })
    try {
      for (const r of c.runs) {
        assert.equal((await shell.run({ command: r.command })).output, r.output, r.command)
      }
      const own = (await shell.jobs()).at(-1)?.job ?? 0
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
        const listed = await shell.jobs()
        assert.equal(listed.length, c.jobs.length, JSON.stringify(listed))
        c.jobs.forEach((want, i) => expectFields(listed[i], want, `job ${i}`))
      }
    } finally {
      await shell.close()
    }
  })
}

test('jobs vectors, through Shell.jobs and Shell.poll', (t) => jobsVectors(t, (o) => new Shell(o)))

test('jobs vectors, through a remote session', async (t) => {
  const remote = await connect(STDIO_SERVER)
  try {
    await jobsVectors(t, (o) => remote.shell(o))
  } finally {
    remote.close()
  }
})

test('artifact vectors', (t) =>
  artifactVectorsThrough(t, (dir) => ({ store: new ArtifactStore(dir), close: () => {} })),
)

test('tool vectors', (t) => toolVectorsThrough(t, (options) => new BashTool(options)))

/** `data` as one bash word, every byte escaped. */
const shellBytes = (data) => `$'${[...data].map((b) => '\\x' + b.toString(16).padStart(2, '0')).join('')}'`

/** Commands that write `text`: whole, then in two writes cut at each byte. */
function carriageCommands(text) {
  const data = Buffer.from(text)
  const commands = [`printf %s ${shellBytes(data)}`]
  for (let cut = 1; cut < data.length; cut++) {
    commands.push(`printf %s ${shellBytes(data.subarray(0, cut))}; printf %s ${shellBytes(data.subarray(cut))}`)
  }
  return commands
}

test('carriage_return vectors: executeShell in each mode, the text cut at each byte', async (t) => {
  // No Node call takes pushes: the command writes the text.
  await replay(t, 'carriage_return', async (c) => {
    for (const mode of ['terminal', 'newline']) {
      for (const command of carriageCommands(c.input)) {
        const streamed = []
        const r = await executeShell({ command, carriageReturn: mode }, (chunk) => streamed.push(chunk))
        assert.equal(r.output, c.expect[mode], command)
        assert.equal(streamed.join(''), c.expect[mode], command)
      }
    }
  })
})

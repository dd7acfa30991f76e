// Replays the shared vectors (tests/vectors/*.json) that concern what the
// Node face exposes: normalize, intercept, sanitize, artifact, tool. The
// same files are replayed by the Rust, C and Python suites.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  ArtifactStore,
  BashTool,
  BlockedError,
  Shell,
  ToolAbortError,
  ToolError,
  applyHeadTail,
  checkBashInterception,
  normalizeBashCommand,
  sanitizeText,
} from 'conch'
import { tempDir, vectorsPath } from './helpers.mjs'

/**
 * Runs `check` on every case of `tests/vectors/<name>.json` and fails
 * listing each case whose actual value differs from its `expect`.
 */
function replay(t, name, check) {
  const path = vectorsPath(name)
  if (!existsSync(path)) {
    t.skip(`tests/vectors/${name}.json is not in this checkout`)
    return
  }
  const cases = JSON.parse(readFileSync(path, 'utf8'))
  assert.ok(cases.length > 0, `${name}.json has no cases`)
  const failures = []
  for (const c of cases) {
    try {
      check(c)
    } catch (err) {
      failures.push(`${c.name}: ${err.message}`)
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${cases.length} cases failed`)
  t.diagnostic(`${cases.length} cases`)
}

/** JSON null → undefined, as the Node API takes optional arguments. */
const opt = (v) => (v === null ? undefined : v)

test('normalize vectors', (t) => {
  replay(t, 'normalize', (c) => {
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

test('intercept vectors', (t) => {
  replay(t, 'intercept', (c) => {
    const rules = opt(c.rules)?.map((r) => ({ ...r, flags: opt(r.flags) }))
    const badRules = c.rule_errors ?? []
    if (badRules.length > 0) {
      // The function refuses a rule set with an invalid rule, naming each.
      assert.throws(() => checkBashInterception(c.command, c.tool_names, rules), (err) => {
        assert.equal(err.code, 'InvalidArgument')
        for (const index of badRules) assert.match(err.message, new RegExp(`rule ${index}\\b`))
        return true
      })
      return
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

test('sanitize vectors: sanitizeText', (t) => {
  replay(t, 'sanitize', (c) => {
    if (c.input !== undefined) assert.equal(sanitizeText(c.input), c.expect)
  })
})

test('sanitize vectors: command output, split where the case says', async (t) => {
  // The bytes go through a real command, so invalid UTF-8 and sequences
  // split across reads reach the streaming sanitizer as they would live.
  // Pauses between the pieces make the engine read them separately.
  const dir = tempDir()
  const shell = new Shell({ snapshot: 'none' })
  const cases = []
  replay(t, 'sanitize', (c) => cases.push(c))
  try {
    const failures = []
    for (const [i, c] of cases.entries()) {
      const bytes = inputBytes(c)
      const cuts = [0, ...(c.chunks ?? []), bytes.length]
      const parts = []
      for (let p = 0; p + 1 < cuts.length; p++) {
        const file = join(dir, `${i}.${p}`)
        writeFileSync(file, bytes.subarray(cuts[p], cuts[p + 1]))
        parts.push(`cat ${file}`)
      }
      const streamed = []
      const r = await shell.run({ command: parts.join('; sleep 0.02; ') }, (chunk) => streamed.push(chunk))
      if (r.output !== c.expect || streamed.join('') !== c.expect) {
        failures.push(`${c.name}: ${JSON.stringify(r.output)} (streamed ${JSON.stringify(streamed.join(''))})`)
      }
    }
    assert.deepEqual(failures, [])
  } finally {
    shell.close()
  }
})

const ERROR_CODES = { invalid_argument: 'InvalidArgument', not_found: 'NotFound', io: 'Io' }

test('artifact vectors', (t) => {
  replay(t, 'artifact', (c) => {
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

/**
 * The vector's terms for what a BashTool call produced: kind, text, whether
 * truncation metadata came with it, and the suggested tool of a block.
 */
async function toolOutcome(tool, args) {
  try {
    const r = await tool.execute(args)
    return { kind: 'ok', text: r.content[0].text, truncated: r.details !== undefined }
  } catch (err) {
    if (err instanceof BlockedError) return { kind: 'blocked', text: err.message, suggested_tool: err.suggestedTool }
    if (err instanceof ToolAbortError) return { kind: 'aborted', text: err.message, truncated: err.details !== undefined }
    if (err instanceof ToolError) return { kind: 'failed', text: err.message, truncated: err.details !== undefined }
    throw err
  }
}

test('tool vectors', async (t) => {
  const cases = []
  replay(t, 'tool', (c) => cases.push(c))
  const failures = []
  for (const [n, c] of cases.entries()) {
    const cwd = realpathSync(tempDir())
    const config = c.config ?? {}
    const tool = new BashTool({
      cwd,
      snapshot: 'none',
      sessionKey: `node-tool-vectors-${process.pid}-${n}`,
      interceptor: config.interceptor ?? false,
      toolNames: config.tool_names ?? [],
      rules: opt(config.rules)?.map((r) => ({ ...r, flags: opt(r.flags) })),
      artifactsDir: config.artifacts ? join(cwd, 'artifacts') : undefined,
    })
    let got
    try {
      got = await toolOutcome(tool, Object.fromEntries(Object.entries(c.args).filter(([, v]) => v !== null)))
    } finally {
      tool.close()
    }
    const want = (key) => c.expect[key]?.replaceAll('{cwd}', cwd)
    const wrong = []
    for (const key of ['kind', 'truncated', 'suggested_tool']) {
      if (c.expect[key] !== undefined && c.expect[key] !== got[key]) wrong.push(`${key}: ${got[key]}`)
    }
    if (want('text') !== undefined && got.text !== want('text')) wrong.push(`text: ${JSON.stringify(got.text.slice(0, 200))}`)
    if (want('text_starts_with') !== undefined && !got.text.startsWith(want('text_starts_with'))) {
      wrong.push(`text starts: ${JSON.stringify(got.text.slice(0, 200))}`)
    }
    if (want('text_ends_with') !== undefined && !got.text.endsWith(want('text_ends_with'))) {
      wrong.push(`text ends: ${JSON.stringify(got.text.slice(-200))}`)
    }
    if (wrong.length) failures.push(`${c.name}: ${wrong.join('; ')}`)
  }
  assert.deepEqual(failures, [])
})

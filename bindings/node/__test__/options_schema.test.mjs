// Every option of the core's option types (docs/api/schema.json:
// ShellOptions, RunOptions, ExecuteOptions, JobOptions, PollOptions,
// PtyOptions) is an
// option of the Node face, in camelCase (a duration as `<name>Ms`): a
// valid value is taken, a value of a wrong JSON type is a TypeError with
// `code: 'InvalidArg'` naming the option. The samples are made from the
// schema's types, so an option added to the core type is walked here with
// no change of the binding or of this test (unless its value needs a sample
// the types cannot give).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, describe, test } from 'node:test'

import { PtySession, Shell, executeShell } from '../conch.js'
import { tempDir } from './helpers.mjs'

const SCHEMA = JSON.parse(readFileSync(new URL('../../../docs/api/schema.json', import.meta.url)))
const DEFS = SCHEMA.$defs

// Values the types alone cannot give: a bash to run, a snapshot choice, a
// prefix that runs the command, a sandbox that starts where the kernel
// lacks Landlock, a word of an enum.
const SAMPLES = {
  shell: 'bash',
  snapshot: 'none',
  prefix: 'env',
  sandbox: { bestEffort: true },
  carriage_return: 'newline',
  engine: 'auto',
}

function kinds(prop) {
  if (prop.$ref) return kinds(DEFS[prop.$ref.split('/').pop()])
  const members = prop.anyOf ?? prop.oneOf
  if (members) return new Set(members.flatMap((p) => [...kinds(p)]))
  const kind = prop.type ?? 'object'
  return new Set(Array.isArray(kind) ? kind : [kind])
}

/** The option's name in Node. */
function nodeName(key, prop) {
  const camel = key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
  return prop['x-unit'] === 'seconds' ? `${camel}Ms` : camel
}

function valid(key, prop, dir) {
  if (key in SAMPLES) return SAMPLES[key]
  const found = kinds(prop)
  found.delete('null')
  if (found.has('boolean')) return true
  if (prop['x-unit'] === 'seconds') return 5000
  if (found.has('integer')) return Math.max(1, prop.minimum ?? 1)
  if (found.has('number')) return 5
  if (found.has('string')) return dir
  if (found.has('object')) {
    if (prop.properties) {
      return Object.fromEntries(Object.entries(prop.properties).map(([k, p]) => [nodeName(k, p), valid(k, p, dir)]))
    }
    return typeof prop.additionalProperties === 'object' ? { CONCH_SAMPLE: '1' } : {}
  }
  if (found.has('array')) return []
  throw new Error(`no sample for ${key}: ${JSON.stringify(prop)}`)
}

function wrong(prop) {
  const found = kinds(prop)
  for (const [kind, value] of [['string', 'x'], ['integer', 7], ['array', ['x']]]) {
    if (!found.has(kind) && !(kind === 'integer' && found.has('number'))) return value
  }
  throw new Error(`no wrong type for ${JSON.stringify(prop)}`)
}

const options = (def) => Object.entries(DEFS[def].properties).filter(([key]) => key !== 'command')

describe('every option of the schema is a Node option', () => {
  const session = new Shell({ snapshot: 'none' })
  after(() => session.close())
  const calls = {
    ShellOptions: async (o) => {
      const sh = new Shell({ snapshot: 'none', ...o })
      try {
        return await sh.run({ command: 'true' })
      } finally {
        sh.close()
      }
    },
    RunOptions: (o) => session.run({ command: 'true', ...o }),
    ExecuteOptions: (o) => executeShell({ command: 'true', ...o }),
    JobOptions: async (o) => session.kill(await session.start({ command: 'true', ...o })),
    PtyOptions: (o) => new PtySession().start({ command: 'true', ...o }),
    PollOptions: async (o) => {
      const job = await session.start({ command: 'echo polled' })
      try {
        return await session.poll(job, o)
      } finally {
        await session.kill(job)
      }
    },
  }
  for (const [def, call] of Object.entries(calls)) {
    for (const [key, prop] of options(def)) {
      const name = nodeName(key, prop)
      test(`${def}.${name}`, async () => {
        await call({ [name]: valid(key, prop, tempDir()) })
        let thrown
        try {
          await call({ [name]: wrong(prop) })
        } catch (err) {
          thrown = err
        }
        assert.ok(thrown instanceof TypeError, `${name}: ${thrown}`)
        assert.equal(thrown.code, 'InvalidArg')
        assert.ok(thrown.message.startsWith(`${name}`), thrown.message)
      })
    }
  }
})

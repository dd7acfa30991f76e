// Network by name on a local Shell (the scenario: domains.mjs), and
// setNetwork on a session that has no domain policy.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Shell } from 'conch'
import { domainsThrough } from './domains.mjs'
import { tempDir } from './helpers.mjs'

test('a domain policy: curl and fetch reach the allowed names only, setNetwork changes them', async (t) => {
  await domainsThrough(t, (options) => new Shell(options))
})

test('setNetwork needs a session started with a domain policy', async () => {
  const cwd = tempDir()
  for (const sandbox of [undefined, {}]) {
    let shell
    try {
      shell = new Shell({ cwd, snapshot: 'none', sandbox })
    } catch (err) {
      assert.equal(err.code, 'SandboxUnavailable', err.message)
      continue
    }
    try {
      await assert.rejects(shell.setNetwork({ allow: ['registry.test'] }), {
        code: 'InvalidArgument',
        message: /^set_network needs a session started with a domain policy/,
      })
    } finally {
      shell.close()
    }
  }
})

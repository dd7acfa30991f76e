// Network by name on a remote session (a `conch serve --stdio`): the
// scenario of domains.mjs, which a local Shell passes, through a
// RemoteShell; its setNetwork is read on the client and applied on the
// server.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'conch'
import { domainsThrough } from './domains.mjs'
import { STDIO_SERVER, tempDir } from './helpers.mjs'

test('a domain policy on a remote session: curl and fetch reach the allowed names only, setNetwork changes them', async (t) => {
  const remote = await connect(STDIO_SERVER)
  try {
    await domainsThrough(t, (options) => remote.shell(options))
  } finally {
    remote.close()
  }
})

test('a remote setNetwork needs a session started with a domain policy', async () => {
  const remote = await connect(STDIO_SERVER)
  try {
    const shell = await remote.shell({ cwd: tempDir(), snapshot: 'none' })
    await assert.rejects(shell.setNetwork({ allow: ['registry.test'] }), {
      code: 'InvalidArgument',
      message: /^set_network needs a session started with a domain policy/,
    })
    assert.throws(() => shell.setNetwork({ allow: ['a b.test'] }), {
      code: 'InvalidArgument',
      message: /^network\.allow\[0\] must be a domain pattern/,
    })
    await shell.close()
    await assert.rejects(shell.setNetwork('deny'), { code: 'Closed' })
  } finally {
    remote.close()
  }
})

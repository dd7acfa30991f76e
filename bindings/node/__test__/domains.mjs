// The domain policy's scenario, shared by the local (domains.test.mjs) and
// remote (remote_domains.test.mjs) suites. Network by name: a sandboxed
// session whose `network` is a domain policy reaches the allowed names
// through its proxy (curl, and Node's own fetch routed through it with
// undici's EnvHttpProxyAgent, as a Node 20 user does: its built-in fetch
// ignores the proxy variables), and nothing else: an unlisted name is
// refused and reported in `sandboxViolations` and a `[sandbox] blocked`
// line, a fetch that skips the proxy finds no DNS and no route.
// `setNetwork` changes the lists between commands. Every server is on
// loopback (tests/net/server.py on 127.0.0.2), named through the policy's
// `resolve`.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { tempDir } from './helpers.mjs'

const SERVER = fileURLToPath(new URL('../../../tests/net/server.py', import.meta.url))
const NAMES = ['registry.test', 'unlisted.test', 'denied.test', 'a.pkg.test']
const RESOLVE = Object.fromEntries(NAMES.map((name) => [name, '127.0.0.2']))

/** tests/net/server.py serving `dir` on 127.0.0.2: its ports, its CA file, `stop()`. */
async function servers(dir) {
  const child = spawn('python3', [SERVER, dir], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const port = async (kind) => {
    const { value } = await lines.next()
    const [k, p] = (value ?? '').split(' ')
    assert.equal(k, kind, `tests/net/server.py printed ${JSON.stringify(value)}`)
    return Number(p)
  }
  const https = await port('https')
  const http = await port('http')
  const stop = async () => {
    child.kill()
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
  }
  return { https, http, ca: join(dir, 'cert.pem'), stop }
}

/**
 * A script for `node` inside the session: fetches argv[2] with the global
 * fetch, through the proxy when argv[3] is `proxy` (undici's
 * EnvHttpProxyAgent as the global dispatcher); prints the status and
 * body, or `failed: <code>` and exits 1.
 */
function fetchScript(dir) {
  const undici = pathToFileURL(createRequire(import.meta.url).resolve('undici')).href
  const script = join(dir, 'fetch.mjs')
  writeFileSync(
    script,
    `const [url, how] = process.argv.slice(2)
if (how === 'proxy') {
  const { EnvHttpProxyAgent, setGlobalDispatcher } = await import(${JSON.stringify(undici)})
  setGlobalDispatcher(new EnvHttpProxyAgent())
}
try {
  const r = await fetch(url, { signal: AbortSignal.timeout(10000) })
  console.log(r.status, (await r.text()).trim())
} catch (err) {
  console.log('failed:', err.cause?.code ?? err.cause?.message ?? err.message)
  process.exit(1)
}
`,
  )
  return script
}

/** A session of `open` (a local or remote shell's maker) with `network`; null where Landlock cannot filter ports. */
async function session(open, cwd, network) {
  try {
    return await open({ cwd, snapshot: 'none', sandbox: { network } })
  } catch (err) {
    // Landlock ABI < 4: no TCP port rules, so no domain policy.
    if (err.code === 'SandboxUnavailable') return null
    throw err
  }
}

const blocked = (target) => `[sandbox] blocked: ${target} is not in the allowed domains\n`

function assertOk(r, what) {
  assert.equal(r.exitCode, 0, `${what}: ${r.output}`)
  assert.deepEqual(r.sandboxViolations, [], `${what}: ${r.output}`)
}

function assertBlocked(r, target) {
  assert.notEqual(r.exitCode, 0, r.output)
  assert.deepEqual(r.sandboxViolations, [target], r.output)
  assert.ok(r.output.endsWith(blocked(target)), r.output)
}

/** The scenario every shell (local, remote) passes: `open(options)` makes one. */
export async function domainsThrough(t, open) {
  const dir = tempDir()
  const net = await servers(join(dir, 'net'))
  // Counts the connections that reach it: a fetch that skips the proxy must not.
  let reached = 0
  const direct = createServer((socket) => {
    reached += 1
    socket.destroy()
  })
  await new Promise((resolve) => direct.listen(0, '127.0.0.2', resolve))
  const shell = await session(open, dir, { allow: ['registry.test', '*.pkg.test'], deny: ['denied.test'], resolve: RESOLVE })
  if (!shell) {
    t.skip('this kernel cannot filter TCP ports (Landlock ABI < 4): no domain policy')
    direct.close()
    await net.stop()
    return
  }
  const script = fetchScript(dir)
  const env = { NODE_EXTRA_CA_CERTS: net.ca }
  const run = (command) => shell.run({ command, env, timeoutMs: 30000 })
  const curl = (url) => run(`curl -sS --max-time 10 --cacert ${net.ca} ${url}`)
  const fetch = (url, how = 'proxy') => run(`node --disable-warning=UNDICI-EHPA ${script} ${url} ${how}`)
  const { https, http } = net
  try {
    // curl: the proxy variables the session sets.
    let r = await curl(`https://registry.test:${https}/`)
    assertOk(r, 'curl over https')
    assert.equal(r.output, 'hello from registry.test\n')
    assertOk(await curl(`http://registry.test:${http}/`), 'curl over plain http')
    assertOk(await curl(`https://a.pkg.test:${https}/`), 'a wildcard')
    assertBlocked(await curl(`https://unlisted.test:${https}/`), `unlisted.test:${https}`)
    assertBlocked(await curl(`https://denied.test:${https}/`), `denied.test:${https}`)

    // Node's fetch through the proxy (undici's EnvHttpProxyAgent).
    r = await fetch(`https://registry.test:${https}/`)
    assertOk(r, 'fetch through the proxy')
    assert.equal(r.output, '200 hello from registry.test\n')
    r = await fetch(`http://a.pkg.test:${http}/`)
    assertOk(r, 'fetch over plain http')
    assert.equal(r.output, '200 hello from a.pkg.test\n')
    r = await fetch(`https://unlisted.test:${https}/`)
    assertBlocked(r, `unlisted.test:${https}`)
    assert.match(r.output, /^failed: /)

    // A fetch that ignores the proxy (Node 20's fetch with no dispatcher):
    // no DNS for a name, no route to an address; the proxy never sees it.
    r = await fetch(`https://registry.test:${https}/`, 'direct')
    assert.notEqual(r.exitCode, 0, r.output)
    assert.match(r.output, /^failed: (ENOTFOUND|EAI_AGAIN)/)
    assert.deepEqual(r.sandboxViolations, [])
    r = await fetch(`http://127.0.0.2:${direct.address().port}/`, 'direct')
    assert.notEqual(r.exitCode, 0, r.output)
    assert.match(r.output, /^failed: (EACCES|EPERM)/)
    assert.deepEqual(r.sandboxViolations, [])
    assert.equal(reached, 0, 'a fetch around the proxy got out')

    // The host approves a name: the next command reaches it.
    await shell.setNetwork({ allow: ['registry.test', 'unlisted.test'], resolve: RESOLVE })
    r = await fetch(`https://unlisted.test:${https}/`)
    assertOk(r, 'fetch after setNetwork')
    assert.equal(r.output, '200 hello from unlisted.test\n')
    assertOk(await curl(`https://unlisted.test:${https}/`), 'curl after setNetwork')
    // ... and takes them all back.
    await shell.setNetwork('deny')
    assertBlocked(await curl(`https://registry.test:${https}/`), `registry.test:${https}`)

    // Bad values name their place; the whole network cannot be opened.
    await assert.rejects(async () => shell.setNetwork({ allow: ['ok.test', 'bad pattern'] }), {
      code: 'InvalidArgument',
      message: /^network\.allow\[1\] must be a domain pattern .*, got "bad pattern"$/,
    })
    await assert.rejects(async () => shell.setNetwork({ allow: [], deny: ['a b.test'] }), {
      code: 'InvalidArgument',
      message: /^network\.deny\[0\] must be a domain pattern/,
    })
    await assert.rejects(async () => shell.setNetwork('anything'), {
      code: 'InvalidArgument',
      message: 'network must be "allow" or "deny", got "anything"',
    })
    await assert.rejects(async () => shell.setNetwork('allow'), {
      code: 'InvalidArgument',
      message: /^set_network cannot open the whole network to a sandboxed session/,
    })
  } finally {
    await shell.close()
    direct.close()
    await net.stop()
  }
  await assert.rejects(async () => shell.setNetwork('deny'), { code: 'Closed' })
}


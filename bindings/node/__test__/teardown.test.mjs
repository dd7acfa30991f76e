// A terminated worker_threads Worker takes down what it started: its
// shells, terminals and tools, and the calls still running on them.
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { expectGone, expectProcesses, uniqueWord } from './helpers.mjs'

const CONCH = fileURLToPath(new URL('../conch.js', import.meta.url))

test('a terminated worker leaves none of its processes running', async () => {
  // Digits only: the word is the sleep's own argument (`5431.<word>`).
  const words = ['1', '2', '3', '4'].map((tag) => uniqueWord(tag))
  const [shell, pty, tool, oneshot] = words.map((word) => JSON.stringify(`/bin/sleep 5431.${word}`))
  const worker = new Worker(
    `const { Shell, PtySession, BashTool, executeShell } = require(${JSON.stringify(CONCH)})
     new Shell({ snapshot: 'none' }).run({ command: ${shell} })
     new PtySession().start({ command: ${pty} })
     new BashTool({ cwd: '/tmp' }).execute({ command: ${tool} }).catch(() => {})
     executeShell({ command: ${oneshot} }).catch(() => {})
     require('node:worker_threads').parentPort.postMessage('started')`,
    { eval: true },
  )
  await new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  for (const word of words) await expectProcesses(word)
  await worker.terminate()
  // The hang guard bounds the wait; the processes end within milliseconds.
  for (const word of words) await expectGone(word)
})

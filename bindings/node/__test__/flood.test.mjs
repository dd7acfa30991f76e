// 1 GiB of output through onChunk: every byte delivered, memory bounded.
// Prints the throughput (a figure to watch, not a pass/fail criterion).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Shell } from 'conch'

const GiB = 1 << 30

test('1 GiB through onChunk keeps RSS growth under 128 MiB', async (t) => {
  const sh = new Shell({ snapshot: 'none' })
  try {
    global.gc?.()
    const before = process.memoryUsage.rss()
    let peak = before
    const sample = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss())
    }, 10)
    let bytes = 0
    let calls = 0
    let wrong = 0
    const started = process.hrtime.bigint()
    const r = await sh.run({ command: "head -c 1G /dev/zero | tr '\\0' x" }, (chunk) => {
      bytes += chunk.length
      calls++
      if (chunk[0] !== 'x' || chunk[chunk.length - 1] !== 'x') wrong++
      peak = Math.max(peak, process.memoryUsage.rss())
    })
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    clearInterval(sample)
    assert.equal(r.exitCode, 0)
    assert.equal(r.totalBytes, GiB)
    assert.equal(bytes, GiB)
    assert.equal(wrong, 0)
    assert.equal(r.truncated, true)
    assert.ok(r.outputBytes <= 51200)
    const growth = (peak - before) / (1 << 20)
    t.diagnostic(
      `1 GiB via onChunk: ${seconds.toFixed(2)} s, ${(GiB / (1 << 20) / seconds).toFixed(0)} MB/s, ` +
        `${calls} calls, RSS growth ${growth.toFixed(1)} MiB`,
    )
    assert.ok(growth < 128, `RSS grew by ${growth.toFixed(1)} MiB`)
  } finally {
    sh.close()
  }
})

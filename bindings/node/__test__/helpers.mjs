// Shared helpers of the node:test suite.
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A fresh private directory. */
export function tempDir(prefix = 'conch-node-') {
  return mkdtempSync(join(tmpdir(), prefix))
}

/**
 * Digits no other process on the machine has in its command line, to be
 * used as the fraction of a sleep time: `/bin/sleep 100.<word>`.
 */
export function uniqueWord(tag) {
  return `${tag}${process.pid}0${Date.now() % 1e7}0${Math.floor(Math.random() * 1e9)}`
}

/** Pids of live (non-zombie) processes with an argument ending in `word`. */
export function processesWith(word) {
  const pids = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1')
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
      const args = cmdline.split('\0')
      if (args.some((a) => a.endsWith(word) && !a.includes(' ')) && state !== 'Z') pids.push(Number(entry))
    } catch {
      // the process ended while we looked
    }
  }
  return pids
}

/** Waits until `check()` is truthy or `ms` pass; returns its last value. */
export async function waitFor(check, ms = 2000) {
  const end = Date.now() + ms
  let value = check()
  while (!value && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20))
    value = check()
  }
  return value
}

/** The repository's shared test vectors. */
export function vectorsPath(name) {
  return new URL(`../../../tests/vectors/${name}.json`, import.meta.url)
}

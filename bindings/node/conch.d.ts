// Types of the `conch` package: the addon's generated types (index.d.ts),
// plus the error classes and the `jobExit` event conch.js adds.
import type { JobInfo } from './index'
export * from './index'

/** A tool call failed; `message` is what the model should read. */
export declare class ToolError extends Error {
  constructor(message: string, details?: unknown)
  readonly name: 'ToolError' | 'BlockedError'
  readonly code: 'ToolError' | 'Blocked'
  /** Truncation metadata of the output, when there was output. */
  details?: unknown
}

/** The command was blocked by an interception rule. */
export declare class BlockedError extends ToolError {
  constructor(message: string, suggestedTool: string, details?: unknown)
  readonly name: 'BlockedError'
  readonly code: 'Blocked'
  /** The host tool the model should use instead. */
  suggestedTool: string
}

/** The caller aborted the tool call. */
export declare class ToolAbortError extends Error {
  constructor(message: string, details?: unknown)
  readonly name: 'ToolAbortError'
  readonly code: 'ToolAbortError'
  details?: unknown
}

// conch.js makes the classes JS classes (a call without `new` throws),
// adds Shell's `on` / `off` for the `jobExit` event (over the native
// `onJobExit` hook, which it sets itself) and the dispose symbols, for
// `using` / `await using` (TypeScript 5.2+).
declare module './index' {
  interface Remote {
    /** `close()`. */
    [Symbol.dispose](): void
  }
  interface RemoteShell {
    /** `close()`. */
    [Symbol.asyncDispose](): Promise<void>
  }
  interface RemotePty {
    /** `close()`: a running command is killed. */
    [Symbol.asyncDispose](): Promise<void>
  }
  interface RemoteTool {
    /** `close()`. */
    [Symbol.asyncDispose](): Promise<void>
  }
  interface Shell {
    /**
     * `'jobExit'`: `listener(info)` runs on the JS thread once per job end
     * (exited, killed, timed out), `info.exitCode` set for a job that
     * exited. Never keeps the process alive. Returns the shell.
     */
    on(event: 'jobExit', listener: (info: JobInfo) => void): this
    /** Removes a listener `on` added. Returns the shell. */
    off(event: 'jobExit', listener: (info: JobInfo) => void): this
    /** `close()`. */
    [Symbol.dispose](): void
    /** `close()`. */
    [Symbol.asyncDispose](): Promise<void>
  }
  interface BashTool {
    /** `close()`. */
    [Symbol.dispose](): void
    /** `close()`. */
    [Symbol.asyncDispose](): Promise<void>
  }
  interface PtySession {
    /** `kill()` when a command runs; nothing when idle. */
    [Symbol.dispose](): void
    /** `kill()` when a command runs; nothing when idle. */
    [Symbol.asyncDispose](): Promise<void>
  }
}

// The `conch` package (ESM entry): the same objects as the CommonJS entry.
import conch from './conch.js'

export const {
  ArtifactStore,
  BashTool,
  JobTool,
  PtySession,
  Shell,
  applyHeadTail,
  checkBashInterception,
  closeAllBashSessions,
  closeBashSession,
  connect,
  Remote,
  RemoteFiles,
  RemoteArtifactStore,
  RemotePty,
  RemoteShell,
  RemoteTool,
  RemoteJobTool,
  defaultInterceptorRules,
  executeBash,
  executeShell,
  normalizeBashCommand,
  sanitizeText,
  ToolError,
  BlockedError,
  ToolAbortError,
} = conch

export default conch

// Replays tests/vectors/tool_definition.json: `BashTool.definition()` and
// `JobTool.definition()` give, for the same configuration, the definitions
// every face gives (`inputSchema` here, `input_schema` in the vectors), the
// JSON Schema's own keys as the core wrote them.
import { test } from 'node:test'
import { BashTool, JobTool } from 'conch'
import { toolDefinitionVectorsThrough } from './replay.mjs'

test('tool_definition vectors', (t) =>
  toolDefinitionVectorsThrough(t, (options) => new BashTool(options), (bash) => new JobTool(bash)))

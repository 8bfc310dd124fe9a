/**
 * The OpenAI Agents SDK (`@openai/agents`, the devDependency): tests/agents/sdk/openai-agents.mjs
 * run through `toolproof launch openai-agents [--api chat] -- node openai-agents.mjs [--stream]
 * TASK`, on chat completions and on Responses, streamed and not; straight to the backend on chat
 * completions. The only agent loop in the suite that sends `stream: false`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe } from 'vitest';
import { agentCases, describeAgents } from './lib/suite.js';

const ROOT = join(import.meta.dirname, '..', '..');
const { version } = JSON.parse(
  readFileSync(join(ROOT, 'node_modules', '@openai', 'agents', 'package.json'), 'utf8'),
) as { version: string };

describeAgents(`OpenAI Agents SDK ${version}`, () => {
  for (const api of ['chat', 'responses'] as const) {
    for (const stream of [true, false]) {
      describe(`${api}, ${stream ? 'streamed' : 'not streamed'}`, () => {
        agentCases({
          agent: 'openai-agents',
          api,
          version,
          ...(stream ? {} : { variant: 'stream: false' }),
          direct: api === 'chat',
          extra: { target: { sdk: { api, stream } } },
          ...(stream ? {} : { noStream: true }),
        });
      });
    }
  }
});

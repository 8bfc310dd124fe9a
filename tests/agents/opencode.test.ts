/** opencode (chat completions through the AI SDK's openai-compatible provider). */
import { longCases } from './lib/long.js';
import { agentCases, describeAgents } from './lib/suite.js';

describeAgents('opencode 1.18.33', () => {
  agentCases({ agent: 'opencode', api: 'chat', direct: true });
  longCases({ agent: 'opencode', api: 'chat' });
});

/** Qwen Code (chat completions). */
import { longCases } from './lib/long.js';
import { agentCases, describeAgents } from './lib/suite.js';

describeAgents('Qwen Code 0.24.4', () => {
  agentCases({ agent: 'qwen', api: 'chat', direct: true });
  longCases({ agent: 'qwen', api: 'chat' });
});

/** Grok CLI (chat completions; headless it does not stream), the core task, through `toolproof launch` and straight to the backend. */
import { longCases } from './lib/long.js';
import { agentCases, describeAgents } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

describeAgents('Grok CLI 0.0.34', () => {
  agentCases({ agent: 'grok', api: 'chat', direct: true, tasks: [CORE_TASK], noStream: true });
  longCases({ agent: 'grok', api: 'chat', noStream: true });
});

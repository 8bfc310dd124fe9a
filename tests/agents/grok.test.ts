/** Grok CLI (chat completions; headless it does not stream), the core task, through `toolproof launch` and straight to the backend. */
import { agentCases, describeAgents } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

describeAgents('Grok CLI 0.0.34', () => {
  agentCases({ agent: 'grok', api: 'chat', direct: true, tasks: [CORE_TASK], noStream: true });
});

/** Cline (chat completions), the core task, through `toolproof launch` and straight to the backend. */
import { longCases } from './lib/long.js';
import { agentCases, describeAgents } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

describeAgents('Cline 3.0.65', () => {
  agentCases({ agent: 'cline', api: 'chat', direct: true, tasks: [CORE_TASK] });
  longCases({ agent: 'cline', api: 'chat' });
});

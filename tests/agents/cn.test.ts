/** Continue CLI (chat completions), the core task, through `toolproof launch` and straight to the backend. */
import { longCases } from './lib/long.js';
import { agentCases, describeAgents } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

describeAgents('Continue CLI 1.5.47', () => {
  agentCases({ agent: 'cn', api: 'chat', direct: true, tasks: [CORE_TASK] });
  longCases({ agent: 'cn', api: 'chat' });
});

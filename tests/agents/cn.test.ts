/** Continue CLI (chat completions), the core task, through `toolproof launch` and straight to the backend. */
import { agentCases, describeAgents } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

describeAgents('Continue CLI 1.5.47', () => {
  agentCases({ agent: 'cn', api: 'chat', direct: true, tasks: [CORE_TASK] });
});

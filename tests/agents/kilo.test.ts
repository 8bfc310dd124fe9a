/** Kilo CLI (chat completions), the core task, through `toolproof launch` and straight to the backend. */
import { longCases } from './lib/long.js';
import { agentCases, describeAgents } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

describeAgents('Kilo CLI 7.7.7', () => {
  agentCases({ agent: 'kilo', api: 'chat', direct: true, tasks: [CORE_TASK] });
  longCases({ agent: 'kilo', api: 'chat' });
});

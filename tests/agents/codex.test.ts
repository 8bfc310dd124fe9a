/**
 * Codex (Responses only) in its default configuration (namespace tools, hosted web_search on), and
 * with its catalog's freeform apply_patch. Codex 0.171's catalog has no function form of
 * apply_patch (`function` is an unknown variant); without the freeform tool it runs apply_patch
 * through its shell tool (exec_command), which is the function-call path.
 */
import { CODEX_FREEFORM } from './lib/agents.js';
import { agentCases, describeAgents } from './lib/suite.js';
import { CORE_TASK, PATCH_TASK } from './lib/tasks.js';

describeAgents('Codex 0.171.0', () => {
  agentCases({
    agent: 'codex',
    api: 'responses',
    tasks: [CORE_TASK, { ...PATCH_TASK, id: 'patch-function' }],
  });
  agentCases({
    agent: 'codex',
    api: 'responses',
    tasks: [{ ...PATCH_TASK, id: 'patch-freeform' }],
    extra: { target: CODEX_FREEFORM },
  });
});

/** pi on each of its three APIs; straight to the backend on chat completions. */
import { describe } from 'vitest';
import { longCases } from './lib/long.js';
import { agentCases, describeAgents } from './lib/suite.js';

describeAgents('pi 0.73.1', () => {
  describe('openai-completions', () => {
    agentCases({ agent: 'pi', api: 'chat', piApi: 'openai-completions', direct: true });
    longCases({ agent: 'pi', api: 'chat', piApi: 'openai-completions' });
  });
  describe('openai-responses', () => {
    agentCases({ agent: 'pi', api: 'responses', piApi: 'openai-responses' });
    longCases({ agent: 'pi', api: 'responses', piApi: 'openai-responses' });
  });
  describe('anthropic-messages', () => {
    agentCases({ agent: 'pi', api: 'messages', piApi: 'anthropic-messages' });
    longCases({ agent: 'pi', api: 'messages', piApi: 'anthropic-messages' });
  });
});

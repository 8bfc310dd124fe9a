/** scripts/agents-table.mjs: the README's agents table from tests/agents/results.json. */
import { describe, expect, it } from 'vitest';
// @ts-expect-error a plain .mjs script without types
import { renderTable } from '../../scripts/agents-table.mjs';

const at = '2026-12-04T13:00:00.000Z';
const scripted = (mode: string, state = 'passed') => ({
  agent: 'pi',
  label: 'pi 0.73.1',
  api: 'chat',
  task: 'proof',
  mode,
  via: 'toolproof',
  state,
  ms: 1,
  at,
});

describe('agents table', () => {
  it('gives real-content cases their own column, out of the mode counts', () => {
    const table = renderTable({
      cases: [
        scripted('leak'),
        scripted('prose'),
        scripted('clean'),
        { ...scripted('clean'), task: 'image-true', content: 'image, vision' },
        { ...scripted('clean', 'failed'), task: 'image-false', content: 'image, text-only' },
        {
          ...scripted('clean'),
          agent: 'opencode',
          label: 'opencode 1.18.33',
          task: 'big-output',
          content: '2 MB output, 32k',
        },
      ],
    }) as string;
    const lines = table.split('\n');
    expect(lines[0]).toContain('| real content, through toolproof |');
    expect(lines).toContain('| opencode 1.18.33 (chat) | – | – / – / – | 2 MB output, 32k ✓ |');
    // The failed real-content case shows in its column, not in clean's ✓.
    expect(lines).toContain('| pi 0.73.1 (chat) | – | ✓ / ✓ / ✓ | image, text-only ✗; image, vision ✓ |');
  });
});

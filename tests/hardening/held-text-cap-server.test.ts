/**
 * Issue 8 (A2), through the server: held text is capped by the model's `maxHeldBytes`, so an
 * output that opens like a call streams out live past the cap instead of arriving in one piece
 * at the end (the engine's side: tests/parsers/held-text-cap.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { collectStream, startStack, type Stack } from '../server/stack.js';

const MB = 1024 * 1024;

describe('maxHeldBytes through the server', () => {
  let stack: Stack;
  const text = `{"draft": "${'word '.repeat(2400)}`;
  beforeAll(async () => {
    stack = await startStack({
      sim: { scenario: [{ raw: text }] },
      file: { defaults: { forceToolUse: false, maxRetries: 0, maxHeldBytes: 2048 } },
    });
  });
  afterAll(() => stack.close());

  it('content starting with { arrives live past the cap, byte for byte', async () => {
    const out = await collectStream(
      await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        stream: true,
      }),
    );
    expect(out.content).toBe(text);
    // held to the end, it came in one chunk; released at the cap, it streams
    expect(out.contentChunks).toBeGreaterThan(100);
  });

  it('the setting is validated', () => {
    expect(() => loadConfig({}, { defaults: { maxHeldBytes: 10 } })).toThrow(/maxHeldBytes/);
    expect(loadConfig({}, { defaults: { maxHeldBytes: 4096 } }).defaults.maxHeldBytes).toBe(4096);
    expect(loadConfig({}, {}).defaults.maxHeldBytes).toBe(MB);
  });
});

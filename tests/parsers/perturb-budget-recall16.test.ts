/**
 * Output x1 vs x4 costs at most about x4 for the wrappers recall16 added to the improvised
 * whole-output reader (`parsers/formats/improvised.ts` WRAPPERS): LM Studio's
 * `[TOOL_REQUEST] … [END_TOOL_REQUEST]` and the plural `<|tool_calls|>[…]<|/tool_calls|>`. The
 * output is held whole and unwrapped once; many markers, pairs that never close, nested pairs and
 * one long value must stay linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, READ_FILE, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);
const CALL = '{"name": "read_file", "arguments": {"path": "a"}}';

describe('recall16 wrappers: output length x1 vs x4', () => {
  it('[TOOL_REQUEST] and <|tool_calls|>: many, unclosed, nested, long', () => {
    budget(
      'recall16 wrappers',
      (size, rnd) => {
        const r = rnd();
        // one block per call, back to back (the pair is read only around the whole output)
        if (r < 0.15) return `[TOOL_REQUEST]\n${CALL}\n[END_TOOL_REQUEST]\n`.repeat(size / 70);
        // an opener, then markers that never close
        if (r < 0.3) return `[TOOL_REQUEST]\n${'[TOOL_REQUEST]{"name": "read_file", '.repeat(size / 36)}`;
        // the pair nested around the call many times
        if (r < 0.4) {
          const n = size / 34;
          return `${'[TOOL_REQUEST]'.repeat(n)}${CALL}${'[END_TOOL_REQUEST]'.repeat(n)}`;
        }
        if (r < 0.5) return `<|tool_calls|>[${`${CALL}, `.repeat(size / 52)}${CALL}]<|/tool_calls|>`;
        if (r < 0.6) return `<|tool_calls|>${'<|tool_calls|>['.repeat(size / 15)}`;
        // a lead-in sentence, then markers that never close
        if (r < 0.68)
          return `Let me check that.\n${'[TOOL_REQUEST]\n{"name": "read_file", '.repeat(size / 40)}`;
        // one block, one long value
        if (r < 0.75)
          return `[TOOL_REQUEST]\n{"name": "write_file", "arguments": {"path": "a", "content": "${'x]['.repeat(size / 3)}"}}\n[END_TOOL_REQUEST]`;
        return soup(
          rnd,
          size,
          [
            '[TOOL_REQUEST]',
            '[END_TOOL_REQUEST]',
            '<|tool_calls|>',
            '<|/tool_calls|>',
            CALL,
            '[',
            ']',
            ' ',
            '\n',
          ],
          0.3,
        );
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      16_001,
    );
  }, 120_000);
});

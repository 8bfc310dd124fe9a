/**
 * Output x1 vs x4 costs at most about x4 for the readings recall18 added: Doubao Seed's
 * attribute spelling in `<seed:tool_call>` (`parsers/formats/seed-oss.ts` readNamed: the block
 * read once by the XML call reader, then a schema check per call) and the fused-call-key rule
 * (`parsers/kit/schema-values.ts` fusedCallKey: each argument key looked at once, in
 * `parsers/engine/engine.ts` judgeEnvelope). Many parameters, long values, tags that never
 * close, many functions in one block, many keys with parentheses and long ones stay linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, READ_FILE, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);
const SEED = (body: string) => `<seed:tool_call>\n${body}</seed:tool_call>`;

describe('recall18 readings: output length x1 vs x4', () => {
  it('Seed <function name="…"> with string="true" parameters: many, long, unclosed', () => {
    budget(
      'recall18 seed named attributes',
      (size, rnd) => {
        const r = rnd();
        // one call, a long value
        if (r < 0.15)
          return SEED(
            `<function name="write_file">\n<parameter name="path" string="true">a</parameter>\n<parameter name="content" string="true">${'x<b>'.repeat(size / 4)}</parameter>\n</function>\n`,
          );
        // many functions in one block
        if (r < 0.3)
          return SEED(
            '<function name="read_file">\n<parameter name="path" string="true">a</parameter>\n</function>\n'.repeat(
              size / 86,
            ),
          );
        // many parameters in one function (duplicates: text)
        if (r < 0.45)
          return SEED(
            `<function name="read_file">\n${'<parameter name="path" string="true">a</parameter>\n'.repeat(size / 52)}</function>\n`,
          );
        // parameter tags that never close, then the end marker
        if (r < 0.55)
          return SEED(
            `<function name="read_file">\n${'<parameter name="path" string="true">'.repeat(size / 38)}`,
          );
        // a long attribute list
        if (r < 0.65)
          return SEED(
            `<function name="read_file">\n<parameter name="path"${' string="true"'.repeat(size / 14)}>a</parameter>\n</function>\n`,
          );
        // many blocks back to back, the schema failing in each
        if (r < 0.75)
          return SEED(
            '<function name="read_file">\n<parameter name="mode" string="true">a</parameter>\n</function>\n',
          ).repeat(size / 120);
        return soup(
          rnd,
          size,
          [
            '<seed:tool_call>',
            '<function name="read_file">',
            '<parameter name="path" string="true">',
            'a',
            '</parameter>',
            '</function>',
            '</seed:tool_call>',
            ' string="false"',
            '\n',
          ],
          0.3,
        );
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      18_001,
    );
  }, 120_000);

  it('argument keys that open another call: many, long', () => {
    budget(
      'recall18 fused call key',
      (size, rnd) => {
        const r = rnd();
        // many keys with a parenthesis, none a tool's name
        if (r < 0.25) {
          const keys = Array.from({ length: size / 16 }, (_, i) => `"k${i}(x": 1`).join(', ');
          return `{"name": "read_file", "arguments": {"path": "a", ${keys}}}`;
        }
        // one long key, a tool's name and a parenthesis far into it
        if (r < 0.45)
          return `{"name": "read_file", "arguments": {"path": "a", "${'w'.repeat(size)}read_file(": 1}}`;
        // many calls, each fused
        if (r < 0.65)
          return `[${Array.from({ length: size / 64 }, () => '{"name":"read_file","arguments":{"path":"a","write_file(path":"b"}}').join(',')}]`;
        // Hermes blocks, each fused
        if (r < 0.8)
          return '<tool_call>{"name":"write_file","arguments":{"path":"a","content":"b","read_file(p":1}}</tool_call>\n'.repeat(
            size / 95,
          );
        return soup(
          rnd,
          size,
          [
            '{"name": "read_file", "arguments": {',
            '"path": "a"',
            ', ',
            '"read_file(": ',
            '1',
            '}}',
            '(',
            ' ',
          ],
          0.3,
        );
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      18_002,
    );
  }, 120_000);
});

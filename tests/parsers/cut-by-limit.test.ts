/**
 * A call the token limit cut off is not a call (nothing invented): when the upstream's finish
 * reason is `length`, an envelope still open at the end of output stays content byte for byte,
 * with an 'unrecovered' leak record saying why. Without it, the lenient reading stands (a model
 * that stopped without its closer, as vLLM, SGLang and llama.cpp read it). Whole and streamed
 * (every split) agree.
 */
import { describe, expect, it } from 'vitest';
import { CUT_BY_LIMIT } from '../../parsers/engine/engine.js';
import {
  collectEvents,
  createRecoveryStream,
  type RecoveryOptions,
  recoverMessage,
} from '../../parsers/recover.js';
import { options, toolsOf } from './engine-helpers.js';

const tools = toolsOf(
  {
    name: 'write_file',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
  { name: 'list_files', parameters: { type: 'object', properties: {} } },
);

const QWEN_CLOSED =
  '<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n<parameter=content>\nabc\n</parameter>\n</function>\n</tool_call>';

/** Outputs whose last envelope the end of output left open, and what the lenient reading makes of them. */
const CUT: Array<[what: string, text: string, lenient: string[]]> = [
  [
    'Qwen3-Coder, a value cut mid-line',
    '<tool_call>\n<function=write_file>\n<parameter=path>\nnotes.txt\n</parameter>\n<parameter=content>\nfirst line\nsecond li',
    ['write_file {"path":"notes.txt","content":"first line\\nsecond li"}'],
  ],
  [
    'Qwen3-Coder, cut after the name',
    'I will list them.\n<tool_call>\n<function=list_files>',
    ['list_files {}'],
  ],
  [
    'Hermes, the JSON whole and its closer cut',
    '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"}}',
    ['write_file {"path":"a.txt","content":"hello"}'],
  ],
  // whole-output shapes closed by a repair at the end (tests/fixtures/parsers/near-miss-small.json)
  [
    'bare JSON, its last brace cut',
    '{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"}',
    ['write_file {"path":"a.txt","content":"hello"}'],
  ],
  [
    'bare JSON, cut after a complete argument (more may have followed)',
    '{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"',
    ['write_file {"path":"a.txt","content":"hello"}'],
  ],
  [
    'a call list, its closing bracket cut',
    '[{"name": "list_files", "arguments": {}}, {"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"}}',
    ['list_files {}', 'write_file {"path":"a.txt","content":"hello"}'],
  ],
  [
    'a ```json fence the limit left open',
    '```json\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"}}\n',
    ['write_file {"path":"a.txt","content":"hello"}'],
  ],
  [
    'a ```tool_call fence the limit left open',
    '```tool_call\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"}}',
    ['write_file {"path":"a.txt","content":"hello"}'],
  ],
  [
    'Llama 3.2 <|python_tag|>, its last brace cut',
    '<|python_tag|>{"name": "write_file", "parameters": {"path": "a.txt", "content": "hello"}',
    ['write_file {"path":"a.txt","content":"hello"}'],
  ],
  [
    'a lead-in, then bare JSON with its last brace cut',
    'I will write it.\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"}',
    ['write_file {"path":"a.txt","content":"hello"}'],
  ],
  [
    'Hermes, two call objects in a block the limit left open',
    '<tool_call>\n{"name": "list_files", "arguments": {}}\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"}}',
    ['list_files {}', 'write_file {"path":"a.txt","content":"hello"}'],
  ],
];

function run(text: string, cut: boolean, split?: number) {
  const opts: RecoveryOptions = options(tools);
  if (split === undefined) return recoverMessage({ content: text, reasoning: null, cut }, opts);
  const s = createRecoveryStream(opts);
  const events = [];
  for (let i = 0; i < text.length; i += split) events.push(...s.push({ content: text.slice(i, i + split) }));
  events.push(...s.finish({ cut }));
  return collectEvents(events, s);
}

const callsOf = (r: ReturnType<typeof run>) => r.calls.map((c) => `${c.name} ${c.arguments}`);

describe('an envelope the token limit cut off', () => {
  for (const [what, text, lenient] of CUT) {
    it(`${what}: read leniently when the model stopped, content byte for byte when the limit cut it`, () => {
      expect(callsOf(run(text, false))).toEqual(lenient);
      for (const split of [undefined, 1, 3, 17]) {
        const r = run(text, true, split);
        expect(r.calls).toEqual([]);
        expect(r.content).toBe(text);
        expect(r.leaks.map((l) => [l.outcome, l.reason])).toEqual([['unrecovered', CUT_BY_LIMIT]]);
      }
    });
  }

  it('a closed call before the cut one is still read; only the open one stays content', () => {
    const open = '\n<tool_call>\n<function=write_file>\n<parameter=path>\nb.txt';
    for (const split of [undefined, 1, 5]) {
      const r = run(QWEN_CLOSED + open, true, split);
      expect(callsOf(r)).toEqual(['write_file {"path":"a.txt","content":"abc"}']);
      expect(r.content).toBe(open.slice(1));
    }
    // the lenient reading invents the second call's arguments from what was cut
    expect(callsOf(run(QWEN_CLOSED + open, false))).toEqual([
      'write_file {"path":"a.txt","content":"abc"}',
      'write_file {"path":"b.txt"}',
    ]);
  });

  it('a call closed before the limit landed is read as usual', () => {
    for (const split of [undefined, 2]) expect(callsOf(run(QWEN_CLOSED, true, split))).toHaveLength(1);
  });
});

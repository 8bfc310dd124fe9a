/**
 * The prefix contract (issue 22, docs/prefix.md): for a conversation that grows by appending,
 * the tools toolproof sends upstream on turn N+1 are byte for byte the tools of turn N, and the
 * messages begin with exactly the messages it sent on turn N, in the serialized request. A
 * backend reuses its KV cache only for an unchanged prefix: one changed early byte and the
 * whole conversation is prefilled again, every turn.
 *
 * Property: random appending conversations on every front door (chat completions, Responses,
 * Messages), streamed and not, through the real server and the real SDKs, against the simulator
 * scripted per request: structured calls (arguments with integer-like keys), calls leaked as
 * text, prose turned into the forced final answer, reasoning, and invalid calls that make
 * toolproof retry. The client appends what it received and the tool results, as an agent does.
 * Compared: each turn's first upstream request (a corrective retry extends its own turn, not the
 * next one: docs/prefix.md) against the previous turn's, on the simulator's raw request bytes.
 */
import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnAction } from '../../simulator/index.js';
import { textPdf } from '../support/pdf.js';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak, rawElements } from './raw-json.js';

type Obj = Record<string, unknown>;

const TOOLS = [
  {
    name: 'read_file',
    description: 'Read a file.',
    schema: {
      type: 'object',
      properties: { path: { type: 'string' }, '10': { type: 'integer' } },
      required: ['path'],
    },
  },
  {
    name: 'run',
    description: 'Run a command.',
    schema: { type: 'object', properties: { cmd: { type: 'string' } } },
  },
];

type Step = 'call' | 'call-int-keys' | 'leak' | 'prose' | 'think-call' | 'invalid' | 'two-calls';

/** The simulator's answer to one upstream request (a retry takes the next one). */
function actionFor(step: Step, i: number): TurnAction {
  switch (step) {
    case 'call':
      return { call: [{ name: 'read_file', arguments: { path: `src/f${i}.ts` } }] };
    case 'call-int-keys':
      // Verbatim: the model's own key order, an integer-like key after a name.
      return { call: [{ name: 'read_file', arguments: `{"path":"src/g${i}.ts","10":${i}}` }] };
    case 'two-calls':
      return {
        call: [
          { name: 'read_file', arguments: { path: `a${i}` } },
          { name: 'run', arguments: { cmd: `ls ${i}` } },
        ],
      };
    case 'leak':
      return {
        leak: {
          format: 'hermes',
          calls: [{ name: 'run', arguments: { cmd: `make ${i}` } }],
          before: 'Running it.',
        },
      };
    case 'prose':
      return { say: `Step ${i} is done.` };
    case 'think-call':
      return { think: `I should read f${i}.`, call: [{ name: 'read_file', arguments: { path: `t${i}` } }] };
    case 'invalid':
      return { call: [{ name: 'not_declared', arguments: { x: i } }] };
  }
}

const stepArb = fc.constantFrom<Step>(
  'call',
  'call-int-keys',
  'leak',
  'prose',
  'think-call',
  'invalid',
  'two-calls',
);

/** Every upstream request's plan: an invalid step is followed by a valid call (the retry's answer). */
function planOf(steps: Step[]): TurnAction[] {
  const out: TurnAction[] = [];
  steps.forEach((s, i) => {
    out.push(actionFor(s, i));
    if (s === 'invalid') out.push(actionFor('call', i));
  });
  return out;
}

type Door = 'chat' | 'responses' | 'messages';

interface Client {
  /** Sends the conversation so far, appends the answer and the tool results. */
  turn(stream: boolean, i: number): Promise<void>;
}

/**
 * Real content (issue 26), when the setup asks for it: turn i's tool results carry, by i mod 4,
 * plain text, a PDF, an image (on a text-only model) or an oversized output (over
 * maxToolResultTokens). The Messages door puts the PDF and the image inside the tool_result, as
 * Claude Code's Read does; chat and Responses append them as a user message after the results.
 */
const PDF = textPdf(['The answer is 734921.', 'Second page.']).toString('base64');
const IMG = `data:image/png;base64,${Buffer.alloc(300).toString('base64')}`;
const BIG = Array.from({ length: 4000 }, (_, k) => `log line ${k} ${'y'.repeat(40)}`).join('\n');
type Extra = 'pdf' | 'image' | null;
const extraOf = (rich: boolean, i: number): Extra =>
  !rich ? null : i % 4 === 1 ? 'pdf' : i % 4 === 2 ? 'image' : null;
const resultText = (rich: boolean, i: number, id: string) =>
  rich && i % 4 === 3 ? `result of ${id}\n${BIG}` : `result of ${id}`;

const SYSTEM = `x-anthropic-billing-header: cc_version=2.1.37.abc; cc_entrypoint=cli; cch=NONCE;\n\nYou are an agent. ${'Work carefully. '.repeat(20)}`;
const nonce = (i: number) => (10000 + i * 7919).toString(16).slice(-5);

function chatClient(stack: Stack, rich: boolean): Client {
  const tools = TOOLS.map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.schema },
  }));
  const messages: Obj[] = [
    { role: 'system', content: SYSTEM.replace('NONCE', '00000') },
    { role: 'user', content: 'Fix the failing test.' },
  ];
  return {
    async turn(stream, i) {
      const params = { model: 'sim', messages: messages as never, tools };
      const completion = stream
        ? await stack.client.chat.completions.stream(params).finalChatCompletion()
        : await stack.client.chat.completions.create(params);
      const msg = completion.choices[0]!.message;
      const calls = msg.tool_calls ?? [];
      messages.push({
        role: 'assistant',
        content: msg.content,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      });
      for (const c of calls)
        messages.push({ role: 'tool', tool_call_id: c.id, content: resultText(rich, i, c.id) });
      const extra = extraOf(rich, i);
      if (extra === 'pdf')
        messages.push({
          role: 'user',
          content: [
            { type: 'file', file: { filename: 'r.pdf', file_data: `data:application/pdf;base64,${PDF}` } },
          ],
        });
      else if (extra === 'image')
        messages.push({ role: 'user', content: [{ type: 'image_url', image_url: { url: IMG } }] });
      else if (calls.length === 0) messages.push({ role: 'user', content: 'Go on.' });
    },
  };
}

function responsesClient(stack: Stack, rich: boolean): Client {
  const tools = TOOLS.map((t) => ({
    type: 'function' as const,
    name: t.name,
    description: t.description,
    parameters: t.schema,
    strict: false,
  }));
  const input: Obj[] = [{ role: 'user', content: 'Fix the failing test.' }];
  return {
    async turn(stream, i) {
      const params = {
        model: 'sim',
        instructions: SYSTEM.replace('NONCE', '00000'),
        input: input as never,
        tools,
      };
      const res = stream
        ? await stack.client.responses.stream(params).finalResponse()
        : await stack.client.responses.create(params);
      let called = false;
      for (const item of res.output) {
        // What Codex sends back: the output items as they came (the SDK's parsed fields left out).
        const { parsed_arguments: _p, ...rest } = item as unknown as Obj;
        input.push(rest);
        if (item.type === 'function_call') {
          called = true;
          input.push({
            type: 'function_call_output',
            call_id: item.call_id,
            output: resultText(rich, i, item.call_id),
          });
        }
      }
      const extra = extraOf(rich, i);
      if (extra === 'pdf')
        input.push({
          role: 'user',
          content: [
            { type: 'input_file', filename: 'r.pdf', file_data: `data:application/pdf;base64,${PDF}` },
          ],
        });
      else if (extra === 'image')
        input.push({ role: 'user', content: [{ type: 'input_image', image_url: IMG, detail: 'auto' }] });
      else if (!called) input.push({ role: 'user', content: 'Go on.' });
    },
  };
}

function messagesClient(stack: Stack, rich: boolean): Client {
  const anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 15_000 });
  const tools = TOOLS.map((t) => ({
    name: t.name,
    description: t.description,
    input_schema: t.schema as Anthropic.Tool.InputSchema,
  }));
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Fix the failing test.' }];
  return {
    async turn(stream, i) {
      // Claude Code's system: the billing block (a new nonce every request), then the prompt.
      const [billing, prompt] = SYSTEM.replace('NONCE', nonce(i)).split('\n\n') as [string, string];
      const params = {
        model: 'sim',
        max_tokens: 4096,
        system: [
          { type: 'text' as const, text: billing },
          { type: 'text' as const, text: prompt, cache_control: { type: 'ephemeral' as const } },
        ],
        messages,
        tools,
      };
      const msg = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      const content = msg.content.map((b) => {
        const { parsed_output: _p, ...rest } = b as unknown as Obj;
        return rest;
      }) as unknown as Anthropic.ContentBlockParam[];
      messages.push({ role: 'assistant', content });
      const uses = msg.content.filter((b) => b.type === 'tool_use');
      const extra = extraOf(rich, i);
      const extraBlocks = (
        extra === 'pdf'
          ? [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } }]
          : extra === 'image'
            ? [
                {
                  type: 'image',
                  source: { type: 'base64', media_type: 'image/png', data: IMG.split(',')[1] },
                },
              ]
            : []
      ) as Anthropic.ContentBlockParam[];
      messages.push({
        role: 'user',
        content:
          uses.length > 0
            ? uses.map((u) => ({
                type: 'tool_result' as const,
                tool_use_id: u.id,
                content: [
                  { type: 'text' as const, text: resultText(rich, i, u.id) },
                  ...extraBlocks,
                ] as never,
              }))
            : extraBlocks.length > 0
              ? extraBlocks
              : 'Go on.',
      });
    },
  };
}

const clients: Record<Door, (s: Stack, rich: boolean) => Client> = {
  chat: chatClient,
  responses: responsesClient,
  messages: messagesClient,
};

const SETUPS = {
  'default settings': {},
  // Every history repair that rewrites what goes upstream: Mistral ids, the tool->user bridge,
  // content beside calls, merged same-role messages.
  'all history repairs on': {
    defaults: {
      historyRepair: {
        nineCharIds: true,
        bridgeToolToUser: true,
        toolCallContent: 'empty',
        mergeSameRole: true,
      },
    },
  },
  // Issue 26: documents become their text, images a note (text-only model), big results cut.
  'real content: a PDF, an image on a text-only model, results over maxToolResultTokens': {
    defaults: { vision: false, maxToolResultTokens: 2000 },
  },
} as const;

describe('rawElements', () => {
  it('splits the top-level arrays of a JSON text without parsing it', () => {
    expect(rawElements('{"a":[1],"messages":[{"x":"],"},[2,3],"s"],"tools":[]}', 'messages')).toEqual([
      '{"x":"],"}',
      '[2,3]',
      '"s"',
    ]);
    expect(rawElements('{"tools":[]}', 'tools')).toEqual([]);
  });
});

for (const [setup, file] of Object.entries(SETUPS)) {
  const rich = setup.startsWith('real content');
  describe(`the prefix contract, ${setup}: every turn extends the previous one byte for byte`, () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({ sim: { personality: 'llama-server' }, file });
    });
    afterAll(() => stack.close());

    for (const door of ['chat', 'responses', 'messages'] as const) {
      it(`${door}: random appending conversations, streamed and not`, async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.tuple(stepArb, fc.boolean()), { minLength: rich ? 5 : 2, maxLength: 6 }),
            async (turns) => {
              const plan = planOf(turns.map(([s]) => s));
              let next = 0;
              stack.sim.setScenario(() => plan[Math.min(next++, plan.length - 1)]!);
              stack.sim.reset();
              const client = clients[door](stack, rich);
              const firsts: string[] = [];
              for (let i = 0; i < turns.length; i++) {
                const before = stack.sim.requests.length;
                await client.turn(turns[i]![1], i);
                expect(stack.sim.requests.length).toBeGreaterThan(before);
                firsts.push(stack.sim.requests[before]!.rawBody);
              }
              for (let i = 1; i < firsts.length; i++) {
                const problem = prefixBreak(firsts[i - 1]!, firsts[i]!);
                if (problem)
                  throw new Error(`turn ${i + 1} (${turns.map((t) => t.join('/')).join(', ')}): ${problem}`);
              }
              if (rich) {
                // The content reached the upstream degraded, not as sent (else the property is vacuous).
                const last = stack.sim.requests.at(-1)!.rawBody;
                expect(last).toContain('The answer is 734921.');
                expect(last).toContain('this model cannot read images');
                expect(last).not.toContain(PDF.slice(0, 40));
                expect(last).not.toContain(IMG.slice(-40));
                if (turns.length > 4 && turns[3]![0] !== 'prose')
                  expect(last).toContain('re-run with a narrower command');
              }
            },
          ),
          { numRuns: 12, seed: 22 },
        );
        // ~60 conversation turns over real sockets: a few seconds, more on a loaded machine.
      }, 90_000);
    }
  });
}

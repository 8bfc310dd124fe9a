/**
 * Parser fixtures through the real proxy, streamed and not: the simulator plays the fixture's raw
 * text as the model's content (a backend whose tool parser missed the calls), and the client must
 * see exactly the fixture's calls and leftover content, the streamed answer the same as the
 * non-streamed one. The client is the openai SDK for a sample (each fixture file's first case and
 * every 16th) and a plain keep-alive HTTP client for the rest, which reads the same bytes.
 *
 * Which cases: the engine's reading of every case, whole, one character at a time and under
 * random chunkings, is the conformance suite's (tests/parsers/conformance.test.ts, pure, well
 * under 1 ms a case); what this file adds is the proxy's own path around it (the leak-recovery
 * policy's non-streamed and streamed halves and the retry an unrecovered envelope starts, the
 * server's settings, the simulator's tokens, the SSE and JSON on the wire), ~12 ms of CPU a case
 * (two requests). That path depends on a case's shape, not on its family's grammar, so each
 * fixture file sends the first case of each shape (`shape` below), its longest text, and every
 * 16th case goes too: 1,004 of 3,533 (speed10). V8's block coverage of server/, policies/,
 * protocol/ and simulator/ over those 1,004 and over all 3,533: every block all of them reach
 * the 1,004 reach too, but for a metric label cap (the count of distinct tool names one server
 * has seen, not a case's) and a wait for the client's socket to drain (timing); the shape's leak
 * outcomes, long content and long arguments are there for the blocks a sample without them
 * missed (a leak recorded mid-stream, the held text's growth step past 2,048 characters, the
 * cut of an argument's preview).
 * Fixtures that need upstream reasoning are covered by the conformance suite only (the simulator
 * has no raw reasoning channel); those whose prompt opened the reasoning run against a model
 * configured with `startsInReasoning`.
 */
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletion, ChatCompletionChunk } from '../../protocol/openai.js';
import { recoverMessage } from '../../parsers/recover.js';
import { type FixtureCase, loadFixtures, optionsFor } from '../parsers/fixtures.js';
import { type Collected, collectStream, type Stack, startStack } from '../server/stack.js';

/** Header-safe scenario: JSON with every non-ASCII character escaped. */
function scenarioHeader(text: string): string {
  return JSON.stringify([{ raw: text }]).replace(
    /[\u007f-\uffff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function request(c: FixtureCase) {
  return {
    model: 'sim',
    messages: [{ role: 'user' as const, content: 'go' }],
    tools: c.tools.map((t) => ({
      type: 'function' as const,
      function: { name: t.name, parameters: t.parameters ?? { type: 'object', properties: {} } },
    })),
  };
}

/** POSTs `body` to the proxy's chat completions on a kept-alive socket: the response text, 200 only. */
function post(stack: Stack, agent: Agent, body: unknown, headers: Record<string, string>): Promise<string> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${stack.url}/chat/completions`,
      {
        agent,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(data),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('error', reject);
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(text)
            : reject(new Error(`${res.statusCode}: ${text.slice(0, 500)}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** An SSE body's chunks, as the SDK yields them: an error event throws, [DONE] ends. */
async function* sseChunks(text: string): AsyncGenerator<ChatCompletionChunk> {
  for (const block of text.split('\n\n')) {
    const data = block
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6))
      .join('\n');
    if (data === '') continue;
    if (data === '[DONE]') return;
    const chunk = JSON.parse(data) as ChatCompletionChunk & { error?: unknown };
    if (chunk.error !== undefined) throw new Error(`error event: ${data}`);
    yield chunk;
  }
  throw new Error('the stream ended without [DONE]');
}

/** The non-streamed message's fields read here, as the SDK and the plain client both give them. */
interface Message {
  content?: string | null;
  tool_calls?: Array<{ type: string; function?: { name: string; arguments: string } }>;
}

/** One case both ways: the non-streamed message and the streamed chunks folded. */
async function bothWays(
  stack: Stack,
  agent: Agent,
  c: FixtureCase,
  sdk: boolean,
): Promise<{ message: Message; streamed: Collected }> {
  const headers = { 'x-sim-scenario': scenarioHeader(c.text) };
  if (sdk) {
    const res = await stack.client.chat.completions.create(request(c), { headers });
    const streamed = await collectStream(
      await stack.client.chat.completions.create({ ...request(c), stream: true }, { headers }),
    );
    return { message: res.choices[0]!.message, streamed };
  }
  const res = JSON.parse(await post(stack, agent, request(c), headers)) as ChatCompletion;
  const streamed = await collectStream(
    sseChunks(await post(stack, agent, { ...request(c), stream: true }, headers)),
  );
  return { message: res.choices[0]!.message, streamed };
}

/**
 * A case's shape: what the proxy's path around the engine depends on (see the top), the leaks'
 * outcomes as the engine reads them (an unrecovered envelope makes the proxy retry).
 */
function shape(file: string, c: FixtureCase): string {
  const read = recoverMessage({ content: c.text, reasoning: null }, optionsFor(c));
  return JSON.stringify([
    file,
    Math.min(c.expect.calls.length, 2),
    c.expect.content === null,
    c.expect.outcome ?? '',
    [...new Set(read.leaks.map((l) => l.outcome))].sort(),
    /[^\x20-\x7e\n\t]/.test(c.text),
    c.tools.length === 0,
    c.startsInReasoning ?? false,
    (c.expect.content ?? '').length > 2048,
    c.expect.calls.some((x) => JSON.stringify(x.arguments).length > 80),
  ]);
}

/**
 * Each distinct case once: 248 of the 3,611 are another file's case again (the same text, tools,
 * expectation and setting; peer imports of wild ones), and through the proxy they prove the same
 * thing twice. Of those, each file's first case of each shape, its longest, and every 16th.
 */
const seen = new Set<string>();
const shapes = new Set<string>();
const all = loadFixtures()
  .flatMap(({ file, cases }) => {
    const distinct = cases
      .filter((c) => c.reasoning === undefined && c.text.trim() !== '')
      .filter((c) => {
        const key = JSON.stringify([c.text, c.tools, c.expect, c.startsInReasoning ?? false]);
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
    const longest = distinct.reduce((a, c, i) => (c.text.length > distinct[a]!.text.length ? i : a), 0);
    return distinct.map((c, i) => {
      // read once (the engine's reading of every case: ~0.4 s of CPU a pass over them all)
      const s = shape(file, c);
      const first = !shapes.has(s);
      shapes.add(s);
      return { file, c, sdk: i === 0, pick: first || i === longest };
    });
  })
  .map((x, i) => ({ ...x, sdk: x.sdk || i % 16 === 0, pick: x.pick || i % 16 === 0 }));

/**
 * One proxy per setting: fixtures whose prompt opened the reasoning (`startsInReasoning`) run
 * against a model configured so, the rest against the default.
 */
describe.each([
  { group: 'output starting as content', startsInReasoning: false },
  { group: 'output starting in reasoning (the prompt opened it)', startsInReasoning: true },
])('parser fixtures through the proxy: $group', ({ startsInReasoning }) => {
  const setting = all.filter(({ c }) => (c.startsInReasoning ?? false) === startsInReasoning);
  const cases = setting.filter((x) => x.pick).map((x, i) => ({ ...x, sdk: x.sdk || i % 16 === 0 }));
  let stack: Stack;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let viaSdk = 0;
  const failures: string[] = [];
  const streamedContentDiffers: string[] = [];
  beforeAll(async () => {
    // recovery 'always': fixtures without tools (a think split, prose) are read as the engine reads them.
    // The simulator's prefix-cache emulation off: it only fills usage's cached tokens, which no
    // check here reads, and hashed every prompt block into a map that grew the worker's heap.
    stack = await startStack({
      sim: { personality: 'vllm', prefixCache: false },
      file: { defaults: { forceToolUse: false, recovery: 'always', startsInReasoning } },
    });
    for (const { file, c, sdk } of cases) {
      const want = c.expect.calls.map((x) => ({ name: x.name, arguments: x.arguments }));
      if (sdk) viaSdk++;
      const { message: msg, streamed } = await bothWays(stack, agent, c, sdk);
      const got = (msg.tool_calls ?? []).map((t) =>
        t.type === 'function' && t.function
          ? { name: t.function.name, arguments: JSON.parse(t.function.arguments) }
          : null,
      );
      const gotStreamed = streamed.calls.map((t) => ({ name: t.name, arguments: JSON.parse(t.args) }));
      const label = `${file}: ${c.name}`;
      if (JSON.stringify(got) !== JSON.stringify(want))
        failures.push(`${label}: calls ${JSON.stringify(got)}`);
      if ((msg.content || null) !== c.expect.content)
        failures.push(`${label}: content ${JSON.stringify(msg.content)}`);
      if (JSON.stringify(gotStreamed) !== JSON.stringify(got))
        failures.push(`${label}: streamed calls differ`);
      if ((streamed.content || null) !== (msg.content || null)) streamedContentDiffers.push(label);
    }
  }, 300_000);
  afterAll(async () => {
    agent.destroy();
    await stack.close();
  });

  it('recovers every fixture, streamed and not, with the same calls and the expected content', () => {
    expect(setting.length).toBeGreaterThan(100);
    // every fixture file of this setting sent its cases of each shape
    expect(new Set(cases.map((x) => x.file))).toEqual(new Set(setting.map((x) => x.file)));
    // the real SDK read a sample of them: every fixture file's first case and every 16th
    expect(viaSdk).toBeGreaterThanOrEqual(Math.ceil(cases.length / 16));
    expect(failures).toEqual([]);
  });

  it('streams content recovered or left alone exactly as the non-streamed message has it', () => {
    // An unrecovered envelope used to reach a streaming client twice (its raw text, then the
    // corrective retry's answer after it); the held turn of a retry now drops it as the
    // non-streamed path does.
    expect(streamedContentDiffers).toEqual([]);
  });
});

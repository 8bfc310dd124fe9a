/**
 * A held-out set (tests/fixtures/recall/*.json) through the real proxy, streamed and not:
 * `npx tsx bench/wild-proxy.ts tests/fixtures/recall/wild22.json`. bench/wild.ts measures the
 * engine alone; this sends each case's text as the upstream's answer (whole, and one character a
 * chunk when the client streams) through buildApp on loopback with its default settings (forced
 * tool use, one corrective retry: the upstream answers a retry with the same text), and reads what
 * the openai SDK hands the client. Counted as bench/wild.ts counts: recalled, misread (a call no
 * expectation names), exact (calls and content as expected), and streamed != whole.
 * Cases with reasoning are skipped (the scripted upstream has no reasoning channel).
 */
import { readFileSync } from 'node:fs';
import { completion, scriptedApp } from './lib/scripted-app.js';
import type { FixtureCase } from '../tests/parsers/fixtures.js';
import { readThroughSdk } from '../tests/support/sdk-reading.js';

const file = process.argv[2];
if (!file) throw new Error('usage: tsx bench/wild-proxy.ts <fixture.json>');
const cases: FixtureCase[] = JSON.parse(readFileSync(file, 'utf8'));

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

const app = await scriptedApp({});
let text = '';
let requests = 0;
app.handler = (body, res) => {
  requests++;
  if ((JSON.parse(body.toString()) as { stream?: boolean }).stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const parts = [...text].map((ch, i) =>
      chunk(i === 0 ? { role: 'assistant', content: ch } : { content: ch }),
    );
    res.end(`${parts.join('')}${chunk({}, 'stop')}data: [DONE]\n\n`);
  } else {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(completion({ role: 'assistant', content: text }));
  }
};

const key = (name: string, args: unknown) => JSON.stringify([name, args]);
const totals = {
  whole: { recalled: 0, misread: 0, exact: 0 },
  streamed: { recalled: 0, misread: 0, exact: 0 },
};
let expected = 0;
let deliberate = 0;
let streamDiff = 0;
let measured = 0;
for (const c of cases) {
  if (c.reasoning !== undefined) continue;
  measured++;
  text = c.text;
  const want = c.expect.calls.map((w) => key(w.name, w.arguments));
  expected += want.length;
  if (c.disagreement !== undefined) deliberate++;
  const tools = c.tools.map((t) => ({
    name: t.name,
    parameters: t.parameters ?? { type: 'object', properties: {} },
  }));
  const seen: Record<string, string> = {};
  for (const mode of ['whole', 'streamed'] as const) {
    const before = requests;
    const read = await readThroughSdk(app.origin, tools, mode === 'streamed');
    const left = [...want];
    for (const [name, args] of read.calls) {
      const i = left.indexOf(key(name, args));
      if (i >= 0) {
        totals[mode].recalled++;
        left.splice(i, 1);
      } else totals[mode].misread++;
    }
    const exact = left.length === 0 && read.calls.length === want.length && read.content === c.expect.content;
    if (exact) totals[mode].exact++;
    else
      console.log(
        `MISMATCH (${mode}) ${c.name}: calls ${JSON.stringify(read.calls)} content ${JSON.stringify(read.content)} finish ${read.finish} upstream requests ${requests - before}`,
      );
    seen[mode] = JSON.stringify([read.calls, read.content]);
  }
  if (seen.whole !== seen.streamed) {
    streamDiff++;
    console.log(`STREAM DIFF ${c.name}`);
  }
}
await app.close();

const total = expected + deliberate;
const pct = (n: number) => (total === 0 ? 'n/a' : `${((100 * n) / total).toFixed(1)}%`);
for (const mode of ['whole', 'streamed'] as const)
  console.log(
    `${file} through the proxy (${mode}): ${measured} cases; calls ${total} (${deliberate} kept as text on purpose), ` +
      `recalled ${totals[mode].recalled} (${pct(totals[mode].recalled)}), misread ${totals[mode].misread}, exact ${totals[mode].exact}/${measured}`,
  );
console.log(`streamed != whole ${streamDiff}`);

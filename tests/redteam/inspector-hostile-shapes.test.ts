/**
 * The glass box (docs/inspect.md) against hostile shapes, through the real server on loopback
 * with capture on: names of any length that the client or the model picks (the model, a tool
 * name the model made up) must be kept by a record cut short and counted, never whole and
 * uncounted (the ring's budget is the capture's only bound on memory); the inspector's API
 * answers ids and queries that are not what it expects in its own error shape.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';
import { nodeEntry } from '../support/toolproof-process.js';

const HUGE = 300_000;
const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } };

const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as { messages: Array<{ content?: unknown }> };
  const text = String(body.messages[0]?.content ?? '');
  // The model makes up a tool of a 300 KB name (a degenerate repetition loop does).
  if (text === 'invent')
    return sendCompletion(
      res,
      {
        content: null,
        tool_calls: [
          { id: 't1', type: 'function', function: { name: `x${'N'.repeat(HUGE)}`, arguments: '{}' } },
        ],
      },
      'tool_calls',
    );
  return sendCompletion(res, { content: 'fine' });
});

const chat = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const inspect = async (path: string) => {
  const res = await fetch(`${pair.proxy.origin}/inspect/api${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
type Rec = {
  model: string;
  decisions: Array<{ kind: string; reason: string }>;
  harness?: { validationFailures?: string[] };
};

describe('names of any length in a capture record', () => {
  it('a 300 KB model name is kept cut to 256 characters (list, record, filter)', async () => {
    const model = `m-${'M'.repeat(HUGE)}`;
    const res = await chat(
      { model, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-request-id': 'huge-model' },
    );
    await res.text();
    const one = await inspect('/requests/huge-model');
    expect(one.status).toBe(200);
    const record = one.body.record as Rec;
    expect(record.model).toBe(model.slice(0, 256));
    // The list filter (at most 256 characters) finds it by what the record kept.
    const list = await inspect(`/requests?model=${encodeURIComponent(model.slice(0, 256))}`);
    expect((list.body.requests as Array<{ id: string; model: string }>).map((r) => r.id)).toContain(
      'huge-model',
    );
  });

  it("a tool name of 300 KB the model made up: the harness summary and the decision's reason keep a cut", async () => {
    const res = await chat(
      { model: 'm1', messages: [{ role: 'user', content: 'invent' }], tools: [weather] },
      { 'x-request-id': 'invented-tool' },
    );
    await res.text();
    const one = await inspect('/requests/invented-tool');
    expect(one.status).toBe(200);
    const record = one.body.record as Rec;
    const failures = record.harness?.validationFailures ?? [];
    expect(failures.length).toBeGreaterThan(0);
    for (const name of failures) expect(name.length).toBeLessThanOrEqual(256);
    expect(failures[0]).toBe(`x${'N'.repeat(255)}`);
    const validation = record.decisions.filter((d) => d.kind === 'validation-failed');
    expect(validation.length).toBeGreaterThan(0);
    for (const d of validation) expect(d.reason.length).toBeLessThanOrEqual(2000);
  });
});

describe("what a record keeps beyond the ring's count", () => {
  // A child process with --expose-gc (capture-hostile-probe.ts): a 1 MB ring with 1 KB cuts, 60
  // requests whose model name is 200 KB and whose answer makes up a tool of a 200 KB name. Kept
  // whole (the record's model, the harness summary's failures), or as a cut that holds its
  // parent (a decision's reason, the model's metrics label), the heap grew 4-11 MB past the
  // ring's 1 MB; cut and copied, it grows by about the ring.
  it("hostile names grow the heap by about the ring's size, not by the names' size", async () => {
    const probe = fileURLToPath(new URL('./capture-hostile-probe.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', ...nodeEntry(probe), '60', '200'],
      { timeout: 90_000, maxBuffer: 1 << 20 },
    );
    const got = JSON.parse(stdout) as {
      growthMb: number;
      ringMb: number;
      records: number;
      statuses: number[];
    };
    expect(got.statuses).toEqual([200]);
    expect(got.ringMb).toBeLessThanOrEqual(1);
    expect(got.records).toBeGreaterThan(5);
    expect(got.growthMb).toBeLessThan(2);
  }, 120_000);
});

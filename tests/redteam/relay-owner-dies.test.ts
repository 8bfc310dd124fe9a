/**
 * TOOLPROOF_WORKERS=2 and a Responses request relayed to the worker that holds its state
 * (server/worker-relay.ts), whose worker is killed while it answers (an OOM kill, a crash).
 * Before: killed before its answer began, the relaying worker answered a 500 TP_ERR_INTERNAL
 * (counted in toolproof_internal_errors_total, as toolproof's own bug); killed mid-stream, the
 * client's connection was cut, and the SDK read a network error rather than the API's failure.
 * Now: before the answer, the answer a restarted worker gives (the state is gone: the 400 naming
 * previous_response_id), never a 500; mid-stream, the stream ends with the Responses door's own
 * `error` event (TP_ERR_WORKER_GONE) and `response.failed`, numbered on from the last event.
 * The real process (server/main.ts, two workers), the real openai SDK, SIGKILL.
 */
import OpenAI from 'openai';
import { type Client, type Dispatcher, fetch as undiciFetch } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { startHeldStream } from '../support/held-stream.js';
import { clusterOnYaml, freshRequest } from '../support/toolproof-process.js';
import { sdkThrough, twoWorkers, workerOf } from '../support/worker-clients.js';

/** Answers that stream their first words, then wait for ever (the owner is killed meanwhile). */
const held = await startHeldStream(['first words '], ['never sent']);
afterAll(() => held.close());

const cluster = clusterOnYaml(
  { personality: 'vllm', scenario: (turn) => ({ say: `said to: ${turn.lastUserText}` }) },
  (simUrl) => `
defaults:
  forceToolUse: false
models:
  m:
    upstream: ${simUrl}
  held:
    upstream: ${held.url}
keys:
  - { name: alice, key: sk-alice-0123456789 }
`,
);

const sdkOn = (client: Dispatcher) => sdkThrough(cluster.origin, client, 'sk-alice-0123456789');

/** Two connections that reached different workers, and an anchor response made on the second. */
async function acrossWorkers(): Promise<{ here: Client; anchor: string; owner: number }> {
  const made = async (c: Client) => (await sdkOn(c).responses.create({ model: 'm', input: 'anchor' })).id;
  const { here, there, made: anchor } = await twoWorkers(cluster.origin, made);
  await there.close();
  return { here, anchor, owner: workerOf(anchor) };
}

/** SIGKILLs worker `n`; resolves once the primary has a new worker listening in its place. */
async function kill(n: number): Promise<void> {
  const line = cluster.proc.lines.findLast((l) => String(l.msg).startsWith(`worker ${n} (pid `));
  const pid = Number(/pid (\d+)/.exec(String(line?.msg))![1]);
  const before = cluster.proc.lines.length;
  process.kill(pid, 'SIGKILL');
  await cluster.proc.waitFor(
    (l) =>
      cluster.proc.lines.indexOf(l) >= before && /^worker \d+ \(pid \d+\) listening$/.test(String(l.msg)),
    30_000,
  );
}

const waitForUpstream = async (count: number) => {
  while (held.requests.length < count) await new Promise((r) => setTimeout(r, 20));
};

const metric = async (name: string, labels: string) =>
  (await freshRequest(cluster.origin, { method: 'GET', path: '/metrics' })).text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

describe('the worker holding a relayed request is killed', () => {
  it("before its answer began: the state is gone, answered as a restarted worker's (400), not a 500", async () => {
    const { here, anchor, owner } = await acrossWorkers();
    const sent = held.requests.length;
    const answer = sdkOn(here)
      .responses.create({ model: 'held', previous_response_id: anchor, input: 'wait for me' })
      .catch((e: unknown) => e as { status?: number; message?: string; code?: string });
    // The owner went upstream and waits there: killed before any byte of its answer.
    await waitForUpstream(sent + 1);
    await kill(owner);
    const err = (await answer) as { status?: number; message?: string };
    await here.close();
    expect(err.status).toBe(400);
    expect(err.message).toContain('is not held by this toolproof');
    expect(await metric('toolproof_internal_errors_total', '')).toBe(0);
    expect(await metric('toolproof_responses_relayed_total', 'outcome="broken"')).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it("mid-stream: the stream ends with the door's error event and response.failed, not a cut connection", async () => {
    const { here, anchor, owner } = await acrossWorkers();
    const res = await undiciFetch(`${cluster.origin}/v1/responses`, {
      method: 'POST',
      dispatcher: here,
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-alice-0123456789' },
      body: JSON.stringify({ model: 'held', previous_response_id: anchor, input: 'stream', stream: true }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let killed: Promise<void> | undefined;
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        text += `\n[cut: ${(err as Error).message}]`;
        break;
      }
      if (chunk.done) break;
      text += decoder.decode(chunk.value, { stream: true });
      if (killed === undefined && text.includes('response.output_text.delta')) killed = kill(owner);
    }
    await killed;
    await here.close();
    const events = text
      .split('\n\n')
      .filter((e) => e.includes('data: '))
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as Record<string, unknown>);
    expect(text).not.toContain('[cut:');
    const [error, failed] = events.slice(-2) as [Record<string, unknown>, Record<string, unknown>];
    expect(error).toMatchObject({ type: 'error', code: 'TP_ERR_WORKER_GONE' });
    expect(String(error.message)).toContain('exited before');
    const created = events.find((e) => e.type === 'response.created') as { response: { id: string } };
    expect(failed).toMatchObject({
      type: 'response.failed',
      response: { id: created.response.id, status: 'failed' },
    });
    // Numbered on from the last event the owner sent.
    const numbers = events.map((e) => e.sequence_number as number);
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
    expect(await metric('toolproof_internal_errors_total', '')).toBe(0);
  }, 90_000);

  it('mid-stream, read by the openai SDK: an APIError naming TP_ERR_WORKER_GONE, not a network error', async () => {
    const { here, anchor, owner } = await acrossWorkers();
    const stream = await sdkOn(here).responses.create({
      model: 'held',
      previous_response_id: anchor,
      input: 'stream',
      stream: true,
    });
    let killed: Promise<void> | undefined;
    const seen: string[] = [];
    const thrown = await (async () => {
      for await (const e of stream) {
        seen.push(e.type);
        if (killed === undefined && e.type === 'response.output_text.delta') killed = kill(owner);
      }
    })().catch((e: unknown) => e as Error);
    await killed;
    await here.close();
    expect(seen).toContain('response.output_text.delta');
    expect(thrown).toBeInstanceOf(OpenAI.APIError);
    expect((thrown as InstanceType<typeof OpenAI.APIError>).code).toBe('TP_ERR_WORKER_GONE');
  }, 90_000);
});

/**
 * Images that went upstream as notes, as the inspector says it: which images and why (the
 * backend could not decode them; the backend takes fewer a prompt), on the refused turn and on a
 * later turn that goes with the notes from the start. Through the real server and the openai SDK,
 * against the simulator as llama-server (no WebP) and as vLLM with `--limit-mm-per-prompt`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { otlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { type Stack, startStack } from './stack.js';
import { PNG_1X1_BASE64 as PNG, WEBP_HEAD_BASE64 as WEBP } from '../support/images.js';

interface View {
  id: string;
  record: { kinds: string[]; decisions: Array<{ kind: string; reason: string }> };
}

const stacks: Stack[] = [];
let receiver: OtlpReceiver | undefined;
afterAll(async () => {
  for (const s of stacks) await s.close();
  await receiver?.close();
});

/** The request's server span once it has arrived. */
async function serverSpan(stack: Stack, id: string): Promise<ReceivedSpan> {
  const find = () => receiver!.spans.find((s) => s.kind === 2 && s.attributes['toolproof.request_id'] === id);
  for (let i = 0; i < 100 && !find(); i++) {
    await stack.app.toolproof.tracing!.flush();
    if (!find()) await new Promise((ok) => setTimeout(ok, 20));
  }
  return find()!;
}

async function ask(stack: Stack, images: string[]): Promise<View> {
  const res = await stack.client.chat.completions
    .create({
      model: 'sim',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What do these show?' },
            ...images.map((url) => ({ type: 'image_url' as const, image_url: { url } })),
          ],
        },
      ],
    })
    .withResponse();
  const id = res.response.headers.get('x-request-id')!;
  const v = (await (await fetch(`${stack.origin}/inspect/api/requests/${id}`)).json()) as View;
  return { ...v, id };
}

const reasonOf = (v: View, kind: string) => v.record.decisions.find((d) => d.kind === kind)?.reason;

describe('images as notes, in the inspector', () => {
  it('llama-server: the images it could not decode, named, on the refused turn and the next', async () => {
    receiver = await otlpReceiver();
    const stack = await startStack({
      sim: { personality: 'llama-server', vision: true, scenario: [{ say: 'Fine.' }] },
      file: { defaults: { vision: true } },
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
    });
    stacks.push(stack);
    const webp = (tail: string) => `data:image/webp;base64,${WEBP.slice(0, -4)}${tail}`;
    const images = [webp('AAAA'), `data:image/png;base64,${PNG}`, webp('AAAB')];
    const said = '2 images (image/webp, 36 B; image/webp, 36 B) the backend could not decode went as notes';
    const first = await ask(stack, images);
    expect(reasonOf(first, 'image-undecodable')).toBe(said);
    expect(first.record.kinds).toEqual(['retried', 'degraded']);
    const later = await ask(stack, images); // remembered: one attempt, the same notes
    expect(reasonOf(later, 'image-undecodable')).toBe(said);
    // not 'clean': toolproof changed what went upstream, and the list's filter finds it
    expect(later.record.kinds).toEqual(['degraded']);
    const listed = (await (await fetch(`${stack.origin}/inspect/api/requests?outcome=degraded`)).json()) as {
      requests: Array<{ id: string }>;
    };
    expect(listed.requests.map((r) => r.id)).toEqual([later.id, first.id]);
    // the trace: the refused turn has its refusal event; the remembered turn, the notes it went with
    const degraded = (s: ReceivedSpan) =>
      s.events
        .filter((e) => e.name === 'toolproof.degraded')
        .map((e) => [
          e.attributes['toolproof.policy'],
          e.attributes['toolproof.kind'],
          e.attributes['toolproof.count'],
        ]);
    const firstSpan = await serverSpan(stack, first.id);
    expect(firstSpan.events.some((e) => e.name === 'toolproof.image_decode_refused')).toBe(true);
    expect(degraded(firstSpan)).toEqual([['image-decode', 'image-undecodable', 2]]);
    const laterSpan = await serverSpan(stack, later.id);
    expect(laterSpan.events.some((e) => e.name === 'toolproof.image_decode_refused')).toBe(false);
    expect(degraded(laterSpan)).toEqual([['image-decode', 'image-undecodable', 2]]);
  });

  it('vLLM with an image limit: how many of how many, and the limit', async () => {
    const stack = await startStack({
      sim: { personality: 'vllm', vision: true, imageLimit: 4, scenario: [{ say: 'Fine.' }] },
      file: { defaults: { vision: true } },
    });
    stacks.push(stack);
    const images = Array.from(
      { length: 7 },
      (_, i) => `data:image/png;base64,${PNG}${'A'.repeat(4 * (i + 1))}`,
    );
    const first = await ask(stack, images);
    // steps of half the limit: 3 over 4 notes 4
    expect(reasonOf(first, 'image-limit-note')).toBe(
      'the 4 oldest of 7 images went as notes: the backend takes at most 4 images a prompt',
    );
    const later = await ask(stack, images.slice(0, 5));
    expect(reasonOf(later, 'image-limit-note')).toBe(
      'the 2 oldest of 5 images went as notes: the backend takes at most 4 images a prompt',
    );
  });
});

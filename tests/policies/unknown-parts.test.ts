/**
 * unknown-parts (policies/unknown-parts): a content part of a type toolproof does not know goes as
 * it came until the backend refused one (now or remembered), then as its own text or a note
 * naming its type, the same bytes each time; the refusal read from its words (llama-server's
 * "unsupported content[].type", vLLM's "Unknown part type: <type>") and only for a request that
 * carries such a part.
 */
import { describe, expect, it } from 'vitest';
import { unknownPartsPolicy, unknownPartText } from '../../policies/unknown-parts/index.js';
import { refusedUnknownPart } from '../../policies/unknown-parts/refusal.js';
import { judge, measureScaling } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const thinking = { type: 'thinking', thinking: 'Let me see.', signature: 'sig' };
const withParts = (...parts: unknown[]) => ({ model: 'm', messages: [{ role: 'user', content: parts }] });
const refused = (now: string[], remembered: string[]) => ({
  refused: { now: new Set(now), remembered: new Set(remembered) },
});

describe('unknown-parts', () => {
  it('leaves every part as it came until the backend refused one, now or remembered', () => {
    const req = withParts({ type: 'text', text: 'look' }, thinking);
    const run = (ctx: ReturnType<typeof ctxWith>) =>
      unknownPartsPolicy.onRequest!(req as never, ctx, req as never);
    const untouched = run(ctxWith({}));
    expect(untouched).toEqual({ action: 'continue', request: req, effects: [] });
    for (const ctx of [ctxWith(refused(['unknown-part'], [])), ctxWith(refused([], ['unknown-part']))]) {
      const d = run(ctx);
      if (d.action !== 'continue') throw new Error('rejected');
      expect(d.effects).toEqual([{ policy: 'unknown-parts', kind: 'part-note', count: 1 }]);
      expect(d.request.messages[0]!.content).toBe(
        'look\n\n[content part of type "thinking" left out: the model server does not take this type]',
      );
    }
    // Another policy's refusal is not this one.
    expect(run(ctxWith(refused(['images', 'video'], ['audio']))).effects).toEqual([]);
  });

  it('keeps a part that carries text as its text; the known types as they are; the note names only the type', () => {
    expect(unknownPartText({ type: 'summary_text', text: 'The plan.' })).toBe('The plan.');
    expect(unknownPartText({ type: 'x]\n[evil', data: 'AAAA' })).toBe(
      '[content part of type "x???evil" left out: the model server does not take this type]',
    );
    expect(unknownPartText({ type: 'a'.repeat(500) })).toBe(
      `[content part of type "${'a'.repeat(64)}" left out: the model server does not take this type]`,
    );
    const image = { type: 'image_url', image_url: { url: 'https://x/y.png' } };
    const file = { type: 'file', file: { file_id: 'f' } };
    const req = withParts(
      image,
      file,
      { type: 'refusal', refusal: 'no' },
      { type: 'output_text', text: 'hi' },
    );
    const d = unknownPartsPolicy.onRequest!(
      req as never,
      ctxWith(refused(['unknown-part'], [])),
      req as never,
    );
    if (d.action !== 'continue') throw new Error('rejected');
    expect(d.request.messages[0]!.content).toEqual([
      image,
      file,
      { type: 'refusal', refusal: 'no' },
      { type: 'text', text: 'hi' },
    ]);
  });

  it("reads the backends' refusals of a part type, only for a request carrying an unknown one", () => {
    const withUnknown = withParts(thinking) as never;
    const plain = withParts(
      { type: 'text', text: 'x' },
      { type: 'video_url', video_url: { url: 'https://x' } },
    ) as never;
    const llama = {
      error: { code: 400, message: 'unsupported content[].type', type: 'invalid_request_error' },
    };
    const vllm = { error: { code: 400, message: 'Unknown part type: thinking', type: 'BadRequestError' } };
    expect(refusedUnknownPart(400, llama, withUnknown)).toBe(true);
    expect(refusedUnknownPart(400, vllm, withUnknown)).toBe(true);
    // llama-server's words for a video_url are the video policy's, not this one's.
    expect(refusedUnknownPart(400, llama, plain)).toBe(false);
    expect(refusedUnknownPart(400, { error: { message: 'boom' } }, withUnknown)).toBe(false);
    expect(refusedUnknownPart(200, vllm, withUnknown)).toBe(false);
  });

  it('budget: 4x the parts of unknown types costs about 4x', () => {
    const ctx = ctxWith(refused(['unknown-part'], []));
    const make = (n: number) => ({
      model: 'm',
      messages: Array.from({ length: n }, () => ({
        role: 'user',
        content: [{ type: 'text', text: 'x' }, thinking, { type: 'summary_text', text: 'y'.repeat(200) }],
      })),
    });
    const measure = () =>
      measureScaling(make, (r) => unknownPartsPolicy.onRequest!(r as never, ctx, r as never), {
        from: 16,
        max: 8_000,
      });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});

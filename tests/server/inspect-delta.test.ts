/**
 * Only what changed of one request's answer (server/routes/inspect-delta.ts, docs/inspect.md
 * `?after=`): a text the asker holds the start of comes as its rest, put back together it is the
 * whole answer; a text that is not the asker's plus more (changed, shorter) or a cursor that does
 * not parse comes whole; short texts and keys that are not plain names are never named.
 */
import { describe, expect, it } from 'vitest';
import { withDelta } from '../../server/routes/inspect-delta.js';

/** The page's withHeld (inspect/inspect.js): each delta text completed from the held answer. */
function completed(prev: Record<string, unknown>, next: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(next);
  for (const [path, keep] of Object.entries((next.delta ?? {}) as Record<string, number>)) {
    const keys = path.split('.');
    type Node = Record<string, unknown>;
    let from = prev as Node;
    let to = out as Node;
    for (const k of keys.slice(0, -1)) {
      from = from[k] as Node;
      to = to[k] as Node;
    }
    const last = keys.at(-1)!;
    to[last] = (from[last] as string).slice(0, keep) + to[last];
  }
  return out;
}

const strip = ({ cursor: _c, delta: _d, ...rest }: Record<string, unknown>) => rest;

const prompt = 'a prompt of many bytes '.repeat(200);
const answerAt = (stream: string, extra: Record<string, unknown> = {}) => ({
  record: {
    id: 'r1',
    clientRequest: { headers: { 'x.odd': prompt }, body: { text: prompt, cut: 0 } },
    upstreamAttempts: [{ request: { text: `${prompt}+`, cut: 0 }, response: { text: stream, cut: 0 } }],
    ...extra,
  },
  curl: [`curl ${prompt}`],
  modelWrote: [{ content: 'short' }],
});

describe('an answer read after a cursor', () => {
  const stream1 = `data: ${'x'.repeat(1500)}\n\n`;
  const stream2 = `${stream1}data: more 😀 text\n\n`;
  const first = withDelta(answerAt(stream1), undefined);

  it('names only long texts under plain keys, and sends no delta when not asked', () => {
    expect(first.delta).toBeUndefined();
    const paths = first.cursor.split(',').map((e) => e.split(':')[0]);
    expect(paths).toEqual([
      'record.clientRequest.body.text',
      'record.upstreamAttempts.0.request.text',
      'record.upstreamAttempts.0.response.text',
      'curl.0',
    ]);
  });

  it('sends the rest of a grown text and nothing of an unchanged one; put together it is the whole', () => {
    const next = withDelta(answerAt(stream2), first.cursor);
    expect(next.delta).toEqual({
      'record.clientRequest.body.text': prompt.length,
      'record.upstreamAttempts.0.request.text': prompt.length + 1,
      'record.upstreamAttempts.0.response.text': stream1.length,
      'curl.0': prompt.length + 5,
    });
    expect(next.record.clientRequest.body.text).toBe('');
    expect(next.record.upstreamAttempts[0]!.response.text).toBe('data: more 😀 text\n\n');
    // The header under a key that is not a plain name is sent whole, every time.
    expect(next.record.clientRequest.headers['x.odd']).toBe(prompt);
    // Of the four copies of the prompt, only the header's (whole) is sent again.
    expect(JSON.stringify(next).length).toBeLessThan(prompt.length * 1.5);
    expect(JSON.stringify(first).length).toBeGreaterThan(prompt.length * 4);
    const whole = withDelta(answerAt(stream2), undefined);
    expect(strip(completed(first, next))).toEqual(strip(whole));
    // The next cursor is the whole answer's: a third read after it works the same.
    expect(next.cursor).toBe(whole.cursor);
  });

  it('cuts inside a character pair and still puts it back', () => {
    const split = `${stream1}data: 😀`;
    const a = withDelta(answerAt(split.slice(0, -1)), undefined);
    const b = withDelta(answerAt(split), a.cursor);
    expect(b.delta!['record.upstreamAttempts.0.response.text']).toBe(split.length - 1);
    expect(strip(completed(a, b))).toEqual(strip(withDelta(answerAt(split), undefined)));
  });

  it('sends a text whole when it is not the held one plus more', () => {
    const changed = `data: ${'y'.repeat(1500)}\n\n`;
    const shorter = stream1.slice(0, 1200);
    for (const stream of [changed, shorter]) {
      const next = withDelta(answerAt(stream), first.cursor);
      expect(next.delta!['record.upstreamAttempts.0.response.text']).toBeUndefined();
      expect(next.record.upstreamAttempts[0]!.response.text).toBe(stream);
      expect(strip(completed(first, next))).toEqual(strip(withDelta(answerAt(stream), undefined)));
    }
  });

  it('reads a cursor that does not parse as none held', () => {
    for (const after of [
      '',
      'nonsense',
      'record.clientRequest.body.text:1:short',
      `${'a'.repeat(500)}:1:AAAAAAAAAAAAAAAA`,
    ]) {
      const next = withDelta(answerAt(stream1), after);
      expect(next.delta).toEqual({});
      expect(next.record.clientRequest.body.text).toBe(prompt);
    }
  });

  it('never changes the answer it was given', () => {
    const given = answerAt(stream2);
    const before = JSON.stringify(given);
    withDelta(given, first.cursor);
    expect(JSON.stringify(given)).toBe(before);
  });
});

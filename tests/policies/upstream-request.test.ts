import { describe, expect, it } from 'vitest';
import { upstreamRequestPolicy } from '../../policies/upstream-request/index.js';
import { ctxWith, request } from './helpers.js';

const run = (
  req: ReturnType<typeof request>,
  original: ReturnType<typeof request>,
  upstreamModel?: string,
) => {
  const d = upstreamRequestPolicy.onRequest!(req, ctxWith(upstreamModel ? { upstreamModel } : {}), original);
  if (d.action !== 'continue') throw new Error('rejected');
  return d.request;
};

describe('upstream-request', () => {
  it('leaves a request nothing rewrote and no rename applies to as it is (the client bytes go upstream)', () => {
    const req = request({ stream: true });
    expect(run(req, req)).toBe(req);
  });

  it('renames the model for the upstream, in place of the key', () => {
    const req = request({ temperature: 0 });
    const out = run(req, req, 'org/real-model');
    expect(out.model).toBe('org/real-model');
    expect(Object.keys(out)).toEqual(['model', 'messages', 'temperature']);
    expect(req.model).toBe('m');
  });

  it('a rewritten stream asks for usage, after everything else; the client stream_options kept', () => {
    const original = request({ stream: true, stream_options: { include_usage: false } } as never);
    const rewritten = { ...original, tools: [] };
    const out = run(rewritten, original);
    expect(out.stream_options).toEqual({ include_usage: true });
    const plain = request({ stream: true });
    const out2 = run({ ...plain, tool_choice: 'required' }, plain);
    expect(Object.keys(out2).at(-1)).toBe('stream_options');
    // A non-streamed request carries usage in its body already: nothing added.
    const json = request();
    expect(run({ ...json, n: 1 }, json).stream_options).toBeUndefined();
  });

  it('a stream whose key counts tokens asks for usage though nothing rewrote it (streamUsage)', () => {
    const counted = (req: ReturnType<typeof request>) => {
      const d = upstreamRequestPolicy.onRequest!(req, ctxWith({ streamUsage: true }), req);
      if (d.action !== 'continue') throw new Error('rejected');
      return d.request;
    };
    const req = request({ stream: true });
    const out = counted(req);
    expect(out).not.toBe(req);
    expect(out.stream_options).toEqual({ include_usage: true });
    expect(req.stream_options).toBeUndefined();
    // Asked already, or not a stream: the request as it came.
    const asked = request({ stream: true, stream_options: { include_usage: true } } as never);
    expect(counted(asked)).toBe(asked);
    const json = request();
    expect(counted(json)).toBe(json);
  });
});

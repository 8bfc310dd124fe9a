/**
 * The inspector's list of sessions (`GET /inspect/api/sessions`, server/capture/query.ts) names
 * each session's models, gathered record by record with `models.includes(model)`: a session whose
 * every request names a model of its own (any key holder: one `x-session-id`, a fresh model name
 * each request, up to 256 characters kept) cost the records squared at every read. The default
 * 10 MB ring holds ~1,600 such records (19-23 ms a read against 3-9 ms with one model); a 40 MB
 * ring four times as many, and sixteen times the cost. Now a Set per session, and so when the
 * workers' lists are merged (server/routes/inspect.ts).
 */
import { describe, expect, it } from 'vitest';
import { answer, type SessionSummary } from '../../server/capture/query.js';
import { CaptureRing } from '../../server/capture/ring.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const MODEL = 'm'.repeat(200);

function ringOf(n: number): CaptureRing {
  const ring = new CaptureRing({ maxBytes: 512 * 1024 * 1024, textChars: 1024 });
  for (let i = 0; i < n; i++)
    ring.open({
      id: `r${i}`,
      api: 'chat',
      model: `${MODEL}${i}`,
      stream: false,
      session: 's',
      method: 'POST',
      path: '/v1/chat/completions',
    });
  return ring;
}

describe('the sessions list, one session of n records each naming its own model', () => {
  it('names each model once, in order', () => {
    const ring = ringOf(3);
    ring.open({
      id: 'again',
      api: 'chat',
      model: `${MODEL}1`,
      stream: false,
      session: 's',
      method: 'POST',
      path: '/',
    });
    const [s] = answer(ring, { op: 'sessions' }, 0) as SessionSummary[];
    expect(s!.requests).toBe(4);
    expect(s!.models).toEqual([`${MODEL}0`, `${MODEL}1`, `${MODEL}2`]);
  });

  it('x4 the records cost about x4, not x16', () => {
    const s = measureScaling(
      (n) => ringOf(n),
      (ring) => answer(ring, { op: 'sessions' }, 0),
      { from: 1000, max: 16_000 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  }, 60_000);
});

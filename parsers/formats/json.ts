/**
 * Strict bare / fenced JSON: the WHOLE output is exactly one call object (or one array of
 * them) with a name and arguments/parameters, alone or in a single ```json fence. The same
 * JSON with prose around it, or a fenced example inside an explanation, stays prose:
 * precision first.
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch } from '../engine/family.js';
import type { ParseContext } from '../types.js';
import { callsFromJsonBody, stripCodeFence } from '../kit/envelope.js';

function matchWhole(text: string, _ctx: ParseContext): EnvelopeMatch | null {
  const t = text.trim();
  const fenced = t.startsWith('```') ? stripCodeFence(t) : null;
  if (t.startsWith('```') && fenced === null) return null;
  const body = (fenced ?? t).trim();
  if (!body.startsWith('{') && !body.startsWith('[')) return null;
  const r = callsFromJsonBody(body, true);
  if ('error' in r || r.calls.length === 0) return null;
  const calls =
    fenced !== null ? r.calls.map((c) => ({ ...c, repairs: ['code-fence', ...(c.repairs ?? [])] })) : r.calls;
  return { end: text.length, calls };
}

export const json = defineFamily({
  name: 'json',
  markers: [],
  priority: 90,
  backend: { llamacpp: 'Generic' },
  wholeStarts: ['{', '[', '```'],
  matchWhole,
});

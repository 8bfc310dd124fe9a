/**
 * Strict bare / fenced JSON: the WHOLE output is exactly one call object (or one array of
 * them) with a name and arguments/parameters, alone or in a single ```json fence. The same
 * JSON with prose around it, or a fenced example inside an explanation, stays prose:
 * precision first. Near miss (issue 30): one surplus `]` after a list of calls
 * (`[{…}]]`, ollama/ollama tools/tools_test.go::TestParser[list trailing ]]) is read when every
 * call names a declared tool whose schema its arguments fit (repair `extra-close-bracket`); and
 * (recall21) quotes left unescaped inside a string argument (`unescaped-quotes`, schema-gated).
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { callsFromJsonBody, stripCodeFence } from '../kit/envelope.js';
import { isPlainObject } from '../kit/lenient-json.js';
import { fitsSchema } from '../kit/schema-values.js';

/** `[…]]`: the list without its surplus `]`, when every call fits a declared tool; else null. */
function extraCloseBracket(body: string, ctx: ParseContext): ParsedCall[] | null {
  if (!body.startsWith('[') || !body.endsWith(']]')) return null;
  const r = callsFromJsonBody(body.slice(0, -1), false);
  if ('error' in r || r.calls.length === 0) return null;
  for (const c of r.calls) {
    const tool = ctx.tools.get(c.name);
    if (!tool || !isPlainObject(c.arguments) || !fitsSchema(c.arguments, tool)) return null;
  }
  return r.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'extra-close-bracket'] }));
}

function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  const t = text.trim();
  const fenced = t.startsWith('```') ? stripCodeFence(t) : null;
  if (t.startsWith('```') && fenced === null) return null;
  const body = (fenced ?? t).trim();
  if (!body.startsWith('{') && !body.startsWith('[')) return null;
  const r = callsFromJsonBody(body, true);
  if ('error' in r && fenced === null) {
    const repaired = extraCloseBracket(body, ctx);
    if (repaired) return { end: text.length, calls: repaired };
    // recall21: quotes left unescaped inside a string argument, as in Hermes' closed body
    // (recall20): the bare object is all the output, so a `"` that cannot end its string is part
    // of it; read only for arguments that fit (`unescaped-quotes` is SCHEMA_GATED in the engine)
    const stray = callsFromJsonBody(body, false, true);
    if (!('error' in stray) && stray.calls.length > 0) return { end: text.length, calls: stray.calls };
  }
  if ('error' in r || r.calls.length === 0) return null;
  const calls =
    fenced !== null ? r.calls.map((c) => ({ ...c, repairs: ['code-fence', ...(c.repairs ?? [])] })) : r.calls;
  // what the end of output left open (a brace of bare JSON, the fence): with finish reason
  // `length` the call was cut off, not finished (engine.ts refuses a truncated match then)
  const open = fenced === null ? calls.some((c) => c.repairs?.includes('missing-brace')) : !t.endsWith('```');
  return { end: text.length, calls, ...(open ? { truncated: true } : {}) };
}

export const json = defineFamily({
  name: 'json',
  markers: [],
  priority: 90,
  backend: { llamacpp: 'Generic' },
  wholeStarts: ['{', '[', '```'],
  matchWhole,
});

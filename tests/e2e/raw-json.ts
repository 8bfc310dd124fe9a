/** Test helper: JSON texts split without parsing them (the bytes of each element, as sent). */

/** The raw text of each element of the top-level array `key` of a JSON object's text. */
export function rawElements(text: string, key: string): string[] | undefined {
  let depth = 0;
  let i = 0;
  let inString = false;
  let keyStart = -1;
  let lastKey = '';
  const n = text.length;
  for (; i < n; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') {
        inString = false;
        if (depth === 1) lastKey = text.slice(keyStart + 1, i);
      }
      continue;
    }
    if (ch === '"') {
      inString = true;
      keyStart = i;
    } else if (ch === '{' || ch === '[') {
      depth++;
      if (depth === 2 && ch === '[' && lastKey === key) return splitArray(text, i);
    } else if (ch === '}' || ch === ']') depth--;
  }
  return undefined;
}

function splitArray(text: string, open: number): string[] {
  const out: string[] = [];
  let depth = 0;
  let inString = false;
  let start = open + 1;
  for (let i = open; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      depth--;
      if (depth === 0) {
        if (text.slice(start, i).trim() !== '') out.push(text.slice(start, i));
        return out;
      }
    } else if (ch === ',' && depth === 1) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  return out;
}

/**
 * The first prefix break of upstream body `next` against `prev` (docs/prefix.md), or null: the
 * tools changed (unless `tools: false`), fewer messages, or an earlier message's bytes changed.
 */
export function prefixBreak(prev: string, next: string, opts: { tools?: boolean } = {}): string | null {
  if (opts.tools !== false) {
    const tp = rawElements(prev, 'tools');
    const tn = rawElements(next, 'tools');
    if (JSON.stringify(tp) !== JSON.stringify(tn)) {
      const k = (tp ?? []).findIndex((t, i) => t !== tn?.[i]);
      return `tools changed (${tp?.length} -> ${tn?.length}; first at ${k}):\n  before ${tp?.[k]?.slice(0, 400)}\n  after  ${tn?.[k]?.slice(0, 400)}`;
    }
  }
  const mp = rawElements(prev, 'messages') ?? [];
  const mn = rawElements(next, 'messages') ?? [];
  if (mn.length < mp.length) return `fewer messages (${mn.length} < ${mp.length})`;
  for (let k = 0; k < mp.length; k++)
    if (mp[k] !== mn[k])
      return `message ${k} changed:\n  before ${mp[k]?.slice(0, 600)}\n  after  ${mn[k]?.slice(0, 600)}`;
  return null;
}

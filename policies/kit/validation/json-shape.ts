/**
 * A preview of client- or model-written JSON that stops writing at its budget instead of
 * serializing a whole value to keep 80 characters of it. (Depth is measured, without recursion,
 * by protocol/json-depth.ts.)
 */

/** JSON of `value`, cut to `max` characters ("..." marks the cut); writes at most ~max characters. */
export function preview(value: unknown, max = 80): string {
  let out = '';
  const full = (): boolean => out.length > max;
  const write = (v: unknown, depth: number): void => {
    if (full()) return;
    if (v === null || typeof v !== 'object') {
      const text =
        typeof v === 'string' && v.length > max ? JSON.stringify(v.slice(0, max)) : JSON.stringify(v);
      out += text ?? String(v);
      return;
    }
    if (depth > 16) {
      out += '...';
      return;
    }
    if (Array.isArray(v)) {
      out += '[';
      for (let i = 0; i < v.length && !full(); i++) {
        if (i > 0) out += ',';
        write(v[i], depth + 1);
      }
      out += ']';
      return;
    }
    out += '{';
    let first = true;
    for (const k in v as Record<string, unknown>) {
      if (full()) break;
      if (!Object.hasOwn(v, k)) continue;
      if (!first) out += ',';
      first = false;
      out += `${JSON.stringify(k.length > max ? k.slice(0, max) : k)}:`;
      write((v as Record<string, unknown>)[k], depth + 1);
    }
    out += '}';
  };
  write(value, 0);
  return out.length > max ? `${out.slice(0, max - 3)}...` : out;
}

/**
 * The `model` fields of a form body (multipart/form-data, application/x-www-form-urlencoded), as
 * the pass-through reads them for a key's allow-list and to pick the upstream. /v1/audio/* takes
 * forms, and an upstream serving several models (llama-swap, vLLM's adapters) picks one by this
 * field, so a form left unread took a key held to one model to any other.
 *
 * The scan errs towards seeing more than the upstream's parser, never less: a field the upstream
 * could read as `model` and this scan cannot read exactly (a transfer encoding, a file, an
 * RFC 2231 `name*`, a part without its blank line) makes the form unreadable, and every value
 * found counts (Python's form parsers keep the last of repeated fields, Go's FormValue the
 * first). Delimiters are found after CRLF or LF alone (Go's multipart reader takes both), and
 * urlencoded fields are split at `&` and `;` (python-multipart knows both).
 *
 * One pass: the delimiters are found in order with indexOf, and each part's headers are looked
 * for only up to the next delimiter, so a body of many parts without blank lines costs its
 * length, not parts × length.
 */

/** Where a model's value lies in the body, to rename it. */
export interface ModelSpan {
  start: number;
  end: number;
  /** How the new name is written there. */
  encode: (name: string) => string;
}

export type FormModels = { models: string[]; spans: ModelSpan[] } | { unreadable: string };

/** The form's model fields, or undefined when the body is not a form by its content type. */
export function formModels(contentType: string | undefined, body: Buffer): FormModels | undefined {
  const type = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') return urlencodedModels(body);
  if (type.startsWith('multipart/')) return multipartModels(contentType!, body);
  return undefined;
}

/** A media type's parameters (lower-cased names, quoted values unescaped), or null if one repeats. */
function parameters(header: string): Map<string, string> | null {
  const out = new Map<string, string>();
  const re = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (const m of header.matchAll(re)) {
    const name = m[1]!.toLowerCase();
    if (out.has(name)) return null;
    out.set(name, m[2] === undefined ? m[3]!.trim() : m[2].replace(/\\(.)/g, '$1'));
  }
  return out;
}

function lenientDecode(text: string): string {
  const plus = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(plus);
  } catch {
    // Python's unquote leaves a malformed escape as it is, and decodes the rest
    return plus.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
  }
}

/** The `model` fields of a request target's query, read as a urlencoded form is. */
export function queryModels(url: string): string[] {
  const q = url.indexOf('?');
  if (q < 0) return [];
  const found = urlencodedModels(Buffer.from(url.slice(q + 1), 'latin1'));
  return 'models' in found ? found.models : [];
}

function urlencodedModels(body: Buffer): FormModels {
  const models: string[] = [];
  const spans: ModelSpan[] = [];
  const text = body.toString('latin1'); // one byte a character: offsets are the body's
  let from = 0;
  let eq = -2;
  while (from <= text.length) {
    let end = from;
    while (end < text.length && text.charCodeAt(end) !== 0x26 && text.charCodeAt(end) !== 0x3b) end++;
    // the next `=` from here, found again only once passed: one with none after it was scanned
    // for again at every field (a form of `a&a&a…` cost its length squared)
    if (eq !== -1 && eq < from) eq = text.indexOf('=', from);
    if (eq >= 0 && eq < end && lenientDecode(text.slice(from, eq)) === 'model') {
      if (models.length >= MAX_MODEL_FIELDS)
        return { unreadable: `it has over ${MAX_MODEL_FIELDS} model fields` };
      models.push(Buffer.from(lenientDecode(text.slice(eq + 1, end)), 'latin1').toString('utf8'));
      spans.push({ start: eq + 1, end, encode: encodeURIComponent });
    }
    from = end + 1;
  }
  return { models, spans };
}

/** Model fields a form may repeat (each is judged). */
const MAX_MODEL_FIELDS = 64;

const CR = 0x0d;
const LF = 0x0a;

/** Where the line after a delimiter's boundary starts, or -1 when these bytes are not one. */
function afterDelimiter(body: Buffer, at: number): number {
  let i = at;
  if (body[i] === 0x2d && body[i + 1] === 0x2d) return i + 2; // the close delimiter
  while (body[i] === 0x20 || body[i] === 0x09) i++;
  if (body[i] === CR) i++;
  return body[i] === LF ? i + 1 : -1;
}

function multipartModels(contentType: string, body: Buffer): FormModels {
  const params = parameters(contentType);
  const boundary = params?.get('boundary');
  // RFC 2046 allows 70 characters; a longer one is not a client's
  if (!params || !boundary || boundary.length > 200)
    return { unreadable: 'its content type names no single boundary' };
  const dash = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.from(`\n--${boundary}`);
  // Delimiter starts (the `--` of each), in order: the body's first bytes, or after a LF.
  // The next delimiter's start (the `--` of it) from `from`: after a LF, or the body's first bytes.
  const next = (from: number): number => {
    if (from === 0 && body.subarray(0, dash.length).equals(dash) && afterDelimiter(body, dash.length) >= 0)
      return 0;
    for (
      let at = body.indexOf(delimiter, Math.max(0, from - 1));
      at >= 0;
      at = body.indexOf(delimiter, at + 1)
    )
      if (afterDelimiter(body, at + delimiter.length) >= 0) return at + 1;
    return -1;
  };
  const models: string[] = [];
  const spans: ModelSpan[] = [];
  for (let at = next(0); at >= 0; ) {
    const open = afterDelimiter(body, at + dash.length);
    const following = next(open);
    at = following;
    if (body[open - 1] !== LF) continue; // a close delimiter: no part follows
    // the part's bytes end where the next delimiter's line break begins
    let end = following >= 0 ? following - 1 : body.length;
    if (following >= 0 && body[end - 1] === CR) end--;
    const part = body.subarray(open, end);
    const crlf = part.indexOf('\r\n\r\n');
    const lf = part.indexOf('\n\n');
    const blank =
      crlf >= 0 && (lf < 0 || crlf < lf) ? { at: crlf, size: 4 } : lf >= 0 ? { at: lf, size: 2 } : null;
    const head = (blank ? part.subarray(0, blank.at) : part).toString('latin1');
    const name = fieldName(head);
    if (name === null) return { unreadable: 'a part names its field in a way this scan does not read' };
    if (name !== 'model') continue;
    if (!blank) return { unreadable: 'its model part has no blank line after its headers' };
    if (/\bfilename\*?\s*=/i.test(dispositionOf(head) ?? '') || /^content-transfer-encoding\s*:/im.test(head))
      return { unreadable: 'its model part is a file or has a transfer encoding' };
    // a client names its model once; thousands of fields are no form an agent sends
    if (models.length >= MAX_MODEL_FIELDS)
      return { unreadable: `it has over ${MAX_MODEL_FIELDS} model fields` };
    const start = open + blank.at + blank.size;
    models.push(body.toString('utf8', start, end));
    spans.push({ start, end, encode: (s) => s });
  }
  return { models, spans };
}

/** The Content-Disposition header of a part's headers (folded lines joined), if there is one. */
function dispositionOf(head: string): string | undefined {
  const lines = head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/);
  const found = lines.filter((l) => /^content-disposition\s*:/i.test(l));
  if (found.length > 1) return '\0'; // two of them: unreadable below
  return found[0]?.slice(found[0].indexOf(':') + 1);
}

/** The part's field name; '' when it has none; null when the scan cannot read it exactly. */
function fieldName(head: string): string | null {
  const disposition = dispositionOf(head);
  if (disposition === undefined) return '';
  if (disposition === '\0') return /model/i.test(head) ? null : '';
  const params = parameters(disposition);
  if (params === null || params.has('name*')) return null;
  return params.get('name') ?? '';
}

/**
 * The chat-completions `file` content part, the one shape every front door's documents take on
 * the way to the pipeline: a Messages `document` block (in user content or inside a
 * `tool_result`) and a Responses `input_file` part become one, and a chat client sends one as it
 * is. The `documents` request policy then turns each into its text, or a one-line note
 * (policies/documents/). Pure.
 *
 * `{type: 'file', file: {filename?, file_data?, file_id?, file_url?}}`: `file_data` is a data URL
 * (`data:<media type>;base64,<bytes>`) or bare base64 (fileDataUrl), as OpenAI's chat API takes it; `file_url` is a URL source
 * (Messages `url`, Responses `file_url`) that toolproof never fetches.
 */
import type { ContentPart } from './openai.js';
import { isObject } from './is-object.js';

export interface FileFields {
  filename?: string;
  file_data?: string;
  file_id?: string;
  file_url?: string;
}

/** A chat `file` part from its fields (absent and empty values left out). */
export function filePart(fields: FileFields): ContentPart {
  const file: FileFields = {};
  for (const k of ['filename', 'file_data', 'file_id', 'file_url'] as const) {
    const v = fields[k];
    if (typeof v === 'string' && v !== '') file[k] = v;
  }
  return { type: 'file', file };
}

/**
 * `file_data` as a data URL. OpenAI's chat and Responses APIs take a data URL or bare base64 (its
 * SDKs document `file_data` as "the base64 encoded file data"): bare base64 is typed by its first
 * bytes (a PDF opens with `%PDF-`, `JVBERi0` in base64), else by the file name (.pdf, or plain
 * text for .txt/.md/.csv/.json); anything else stays as it is (the documents policy's note says
 * it is bare base64 neither typed as a PDF nor as text).
 */
export function fileDataUrl(data: string, filename = ''): string {
  if (data === '' || data.startsWith('data:')) return data;
  const type =
    data.startsWith('JVBERi0') || /\.pdf$/i.test(filename)
      ? 'application/pdf'
      : /\.(txt|md|csv|json)$/i.test(filename)
        ? 'text/plain'
        : undefined;
  return type ? `data:${type};base64,${data}` : data;
}

/** The fields of a chat `file` part (bare base64 `file_data` as a data URL), or undefined when `part` is not one. */
export function fileFields(part: unknown): FileFields | undefined {
  if (!isObject(part) || part.type !== 'file' || !isObject(part.file)) return undefined;
  const out: FileFields = {};
  for (const k of ['filename', 'file_data', 'file_id', 'file_url'] as const) {
    const v = part.file[k];
    if (typeof v === 'string') out[k] = v;
  }
  if (out.file_data !== undefined) out.file_data = fileDataUrl(out.file_data, out.filename);
  return out;
}

/** A data URL's media type and base64 payload; undefined when `url` is no base64 data URL. */
export function splitDataUrl(url: string): { mediaType: string; base64: string } | undefined {
  if (!url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  // The header is short; a comma past 256 characters means this is no data URL header.
  if (comma < 0 || comma > 256) return undefined;
  const header = url.slice(5, comma);
  if (!/;base64$/i.test(header)) return undefined;
  const mediaType = header.slice(0, -';base64'.length).split(';')[0]!.trim().toLowerCase();
  return { mediaType: mediaType || 'application/octet-stream', base64: url.slice(comma + 1) };
}

/** The number of bytes a base64 text decodes to (no whitespace assumed), in O(1). */
export function base64Size(base64: string): number {
  let len = base64.length;
  while (len > 0 && base64.charCodeAt(len - 1) === 0x3d) len--;
  return Math.floor((len * 3) / 4);
}

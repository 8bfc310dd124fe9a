/**
 * What a media part carries, for the note that takes its place (policies/video, policies/audio's
 * `audio_url`): a pure function of the part, so the note is the same bytes on every turn.
 */
import { base64Size } from '../../protocol/file-part.js';
import { formatBytes } from './sizes.js';

/** A data URL's media type, when a short token of its own (never the client's other text). */
const MEDIA_TYPE = /^data:([A-Za-z0-9.+-]{1,32}\/[A-Za-z0-9.+-]{1,64})[;,]/i;

/**
 * What a media part's URL or data holds, for its note: a data URL's media type (else `kind`) and
 * the size of its bytes; "<kind> by URL" for an http(s) one; else the size of bare base64.
 */
export function mediaWhat(url: unknown, kind: string): string {
  if (typeof url !== 'string') return kind;
  const head = url.slice(0, 300);
  if (/^data:/i.test(head)) {
    const comma = url.indexOf(',');
    const type = MEDIA_TYPE.exec(head)?.[1] ?? kind;
    return `${type}, ${formatBytes(base64Size(comma < 0 ? '' : url.slice(comma + 1)))}`;
  }
  if (/^https?:/i.test(head)) return `${kind} by URL`;
  return `${kind}, ${formatBytes(base64Size(url))}`;
}

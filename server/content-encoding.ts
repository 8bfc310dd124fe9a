/**
 * A request body's Content-Encoding. toolproof never decompresses a request (a gzip bomb of a
 * few hundred kilobytes would be gigabytes): a compressed body is refused with a 415 that names
 * its encoding (RFC 7694 §3: the answer's Accept-Encoding says only `identity` is read), where it
 * read as "not valid JSON: Unexpected token '\u001f'" with the compressed bytes echoed back.
 */
import { ToolproofError } from '../protocol/errors.js';

/** The body's content codings, lower-cased; undefined when it has none but `identity`. */
export function bodyEncoding(header: string | string[] | undefined): string | undefined {
  const value = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .slice(0, 200)
    .trim()
    .toLowerCase();
  return value === '' || value === 'identity' ? undefined : value;
}

/** The 415 of a compressed request body. */
export function compressedBodyError(encoding: string): ToolproofError {
  return new ToolproofError('TP_ERR_UNSUPPORTED_MEDIA_TYPE', {
    message: `The request body is compressed (Content-Encoding: ${JSON.stringify(encoding).slice(1, -1)}): toolproof reads request bodies uncompressed only; send it without Content-Encoding.`,
  });
}

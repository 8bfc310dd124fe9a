/**
 * A request body's Content-Encoding. Clients that compress (Codex sends zstd, some SDKs and
 * gateways gzip) get their body decoded before it is read, in zlib's thread pool, never on the
 * event loop; the decoded bytes are what toolproof parses, judges and forwards (the upstreams,
 * vLLM and llama-server, decode no request), and the header is dropped with the encoding.
 *
 * A bomb costs no more than a plain body: fastify's body limit counts the decoded bytes (and the
 * encoded ones), so a few hundred kilobytes of gzip that would be gigabytes are a 413 at the
 * limit, the decoder paused by backpressure. One coding only: a chain (`gzip, gzip`) could make
 * its inner layer as large as it likes from a small body while the last layer stays empty (a
 * deflate stream of empty blocks decodes to nothing), so it is a 415 that names it, as is a
 * coding toolproof has no decoder for (RFC 7694 §3), where it read as "not valid JSON:
 * Unexpected token '\u001f'" with the compressed bytes echoed back.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import { ToolproofError } from '../protocol/errors.js';

/** The body's content codings, lower-cased; undefined when it has none but `identity`. */
export function bodyEncoding(header: string | string[] | undefined): string | undefined {
  const value = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .slice(0, 200)
    .trim()
    .toLowerCase();
  return value === '' || value === 'identity' ? undefined : value;
}

/** zstd is in node:zlib from Node 22.15 (Codex's coding); undefined before. */
const zstd = (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress;

/** A decoder for one content coding, or undefined when toolproof has none. */
function decoderFor(coding: string): Transform | undefined {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      // RFC 9110's deflate is the zlib format (raw deflate, a historical mistake, is a 400 as
      // corrupt); Unzip also reads a gzip body labelled deflate.
      return zlib.createUnzip();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return zstd?.();
    default:
      return undefined;
  }
}

/** The 415 of a body toolproof cannot decode. */
export function compressedBodyError(encoding: string): ToolproofError {
  const named = JSON.stringify(encoding).slice(1, -1);
  const supported = `gzip, deflate, br${zstd ? ', zstd' : ''}`;
  return new ToolproofError('TP_ERR_UNSUPPORTED_MEDIA_TYPE', {
    message: `The request body is compressed (Content-Encoding: ${named}) in a way toolproof does not decode: it reads one of ${supported}${zstd ? '' : ' (zstd with Node 22.15 or later)'}, or an uncompressed body.`,
  });
}

/** A decoding stream as fastify's body reader wants it: its encoded bytes counted. */
type Decoding = Transform & { receivedEncodedLength?: number };

/**
 * The body as fastify should read it (a preParsing hook's answer): `payload` itself when it is
 * not encoded, else a decoder it flows through (the header removed), or the 415.
 */
export function decodedBody(headers: IncomingHttpHeaders, payload: Readable): Readable | ToolproofError {
  const encoding = bodyEncoding(headers['content-encoding']);
  if (encoding === undefined) return payload;
  const decoder = decoderFor(encoding) as Decoding | undefined;
  if (!decoder) return compressedBodyError(encoding);
  delete headers['content-encoding'];
  let encoded = 0;
  payload.on('data', (chunk: Buffer) => {
    encoded += chunk.length;
    // Compared with Content-Length by fastify when the body ends, and with the body limit.
    decoder.receivedEncodedLength = encoded;
  });
  payload.on('error', (err) => decoder.destroy(err));
  // First of its listeners: a corrupt body is the client's 400 that says what failed (fastify's
  // reader answers with it). A body nobody reads (a GET's) still ends, and its decoder's
  // "unexpected end of file" must not be an unhandled error.
  decoder.on('error', (err: Error & { statusCode?: number }) => {
    err.message = `The request body could not be decoded (Content-Encoding: ${encoding}): ${err.message}`;
    err.statusCode = 400;
  });
  payload.pipe(decoder);
  return decoder;
}

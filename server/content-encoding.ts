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
 *
 * HTTP/1.1's transfer codings are read the same way. Node's parser takes off the `chunked` it
 * must end with (anything else is its 400) and hands the body on still coded: `Transfer-Encoding:
 * gzip, chunked` read as "not valid JSON" too. A `gzip`, `x-gzip` or `deflate` transfer coding is
 * decoded as that content coding would be, under the same limit; with a content coding as well
 * it is a chain (the 415). A transfer coding toolproof has no decoder for (`compress`, an unknown
 * name) is the 415 naming it, not RFC 9112 §6.1's 501: the SDKs retry a 5xx, and the same body
 * would fail each time.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type Readable, Transform } from 'node:stream';
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

/**
 * The transfer codings before the closing `chunked` (Node's parser reads that one and refuses a
 * request whose codings do not end with it), lower-cased and joined as sent; undefined when
 * there are none (`identity`, obsolete since RFC 7230, counts as none).
 */
export function transferCodings(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const codings = header
    .slice(0, 200)
    .toLowerCase()
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.at(-1) === 'chunked') codings.pop();
  return codings.length === 0 ? undefined : codings.join(', ');
}

/** Which header names the body's coding, for the messages that name it. */
type CodingHeader = 'Content-Encoding' | 'Transfer-Encoding';

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
export function compressedBodyError(
  encoding: string,
  header: CodingHeader = 'Content-Encoding',
): ToolproofError {
  const named = JSON.stringify(encoding).slice(1, -1);
  const supported =
    header === 'Transfer-Encoding'
      ? 'a transfer coding of gzip or deflate before chunked, with no content coding'
      : `one of gzip, deflate, br${zstd ? ', zstd' : ''}${zstd ? '' : ' (zstd with Node 22.15 or later)'}`;
  return new ToolproofError('TP_ERR_UNSUPPORTED_MEDIA_TYPE', {
    message: `The request body is compressed (${header}: ${named}) in a way toolproof does not decode: it reads ${supported}, or an uncompressed body.`,
  });
}

/** A decoding stream as fastify's body reader wants it: its encoded bytes counted. */
type Decoding = Transform & { receivedEncodedLength?: number };

/**
 * Whether a body labelled `deflate` starts as RFC 9110 says it should (a zlib header: method 8,
 * a window of at most 32 KiB, the check bits) or as gzip (which zlib's Unzip also reads). Some
 * clients send raw DEFLATE under that name (RFC 9110 §8.4.1.2: "some non-conformant
 * implementations send the deflate compressed data without the zlib wrapper"); browsers, curl
 * and nginx-fronted servers read it, and so does toolproof: zlib first, raw when the first two
 * bytes are no zlib or gzip header.
 */
export function wrappedDeflate(head: Buffer): boolean {
  if (head.length < 2) return true;
  if (head[0] === 0x1f && head[1] === 0x8b) return true;
  const cmf = head[0]!;
  return (cmf & 0x0f) === 8 && cmf >> 4 <= 7 && ((cmf << 8) | head[1]!) % 31 === 0;
}

/**
 * The first `n` bytes of `payload` or more (fewer when it ends first), read off it: the stream
 * is left paused, the rest of its bytes unread. Resolves with what came (a client gone, too).
 */
function peek(payload: Readable, n: number): Promise<Buffer> {
  return new Promise((resolve) => {
    const got: Buffer[] = [];
    let length = 0;
    const finish = () => {
      payload.off('readable', onReadable);
      payload.off('end', finish);
      payload.off('error', finish);
      payload.off('close', finish);
      resolve(Buffer.concat(got, length));
    };
    const onReadable = () => {
      for (let chunk = payload.read() as Buffer | null; chunk !== null; chunk = payload.read()) {
        got.push(chunk);
        length += chunk.length;
        if (length >= n) return finish();
      }
    };
    payload.on('readable', onReadable);
    payload.on('end', finish);
    payload.on('error', finish);
    payload.on('close', finish);
  });
}

/** A request with no body to read: nothing to peek at (a GET that names a coding). */
function bodiless(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] === undefined && Number(headers['content-length'] ?? 0) === 0;
}

/**
 * The body as fastify should read it (a preParsing hook's answer): `payload` itself when it is
 * not encoded, else its decoded bytes (the header removed), or the 415. A body labelled deflate
 * is looked at first (its first two bytes: zlib or raw); the others answer at once.
 *
 * The decoded bytes stop at `limit`: past it the decoder is destroyed and the request drained
 * unread, as fastify drains a plain body past its limit. Fastify's reader only stops listening
 * there, and a decoder nobody listens to goes on flowing: a 1.6 KB brotli body that decodes to
 * 1 GiB was a 413 at once and then 2.8 s of CPU decoding the rest for nobody.
 */
export function decodedBody(
  headers: IncomingHttpHeaders,
  payload: Readable,
  limit: number,
): Readable | ToolproofError | Promise<Readable> {
  const content = bodyEncoding(headers['content-encoding']);
  const transfer = transferCodings(headers['transfer-encoding']);
  if (content === undefined && transfer === undefined) return payload;
  if (transfer !== undefined) {
    // Either the only coding, or the outer one of a chain.
    if (content !== undefined) return compressedBodyError(`${content}; Transfer-Encoding: ${transfer}`);
    if (transfer !== 'gzip' && transfer !== 'x-gzip' && transfer !== 'deflate')
      return compressedBodyError(transfer, 'Transfer-Encoding');
  }
  const header: CodingHeader = transfer === undefined ? 'Content-Encoding' : 'Transfer-Encoding';
  const encoding = (transfer ?? content)!;
  if (encoding === 'deflate' && !bodiless(headers)) {
    return peek(payload, 2).then((head) => {
      const decoder = wrappedDeflate(head) ? zlib.createUnzip() : zlib.createInflateRaw();
      return decoding(headers, payload, limit, header, encoding, decoder, head);
    });
  }
  const decoder = decoderFor(encoding);
  return decoder
    ? decoding(headers, payload, limit, header, encoding, decoder)
    : compressedBodyError(encoding, header);
}

/** `head` (bytes already read off `payload`) and `payload` through `from`, cut at `limit`. */
function decoding(
  headers: IncomingHttpHeaders,
  payload: Readable,
  limit: number,
  header: CodingHeader,
  encoding: string,
  from: Transform,
  head?: Buffer,
): Readable {
  // What the body now is: uncoded (chunked still frames it as Node received it).
  if (header === 'Transfer-Encoding') headers['transfer-encoding'] = 'chunked';
  else delete headers['content-encoding'];
  let decoded = 0;
  const body: Decoding = new Transform({
    transform(chunk: Buffer, _enc, callback) {
      decoded += chunk.length;
      if (decoded <= limit) return callback(null, chunk);
      // What fastify's reader would have answered had it seen the chunk (it counts the same bytes).
      callback(new ToolproofError('TP_ERR_BODY_TOO_LARGE'));
    },
  });
  let encoded = head?.length ?? 0;
  body.receivedEncodedLength = encoded;
  payload.on('data', (chunk: Buffer) => {
    encoded += chunk.length;
    // Compared with Content-Length by fastify when the body ends.
    body.receivedEncodedLength = encoded;
    // The encoded bytes stop at the limit here: fastify compares them with it only when a decoded
    // chunk comes, and bytes that decode to nothing (empty gzip members, empty deflate blocks)
    // bring none. Sent chunked, with no Content-Length to refuse first, 256 MiB of empty members
    // were all read and decoded (~2 s of CPU) where a plain body was a 413 after its limit.
    if (encoded > limit && !body.destroyed) body.destroy(new ToolproofError('TP_ERR_BODY_TOO_LARGE'));
  });
  payload.on('error', (err) => from.destroy(err));
  // First of its listeners: a corrupt body is the client's 400 that says what failed (fastify's
  // reader answers with it). A body nobody reads (a GET's) still ends, and its decoder's
  // "unexpected end of file" must not be an unhandled error.
  from.on('error', (err: Error & { statusCode?: number }) => {
    err.message = `The request body could not be decoded (${header}: ${encoding}): ${err.message}`;
    err.statusCode = 400;
    body.destroy(err);
  });
  // Past the limit (or a reader gone): stop decoding, drain the rest unread.
  body.on('error', () => {
    payload.unpipe(from);
    from.destroy();
    payload.resume();
  });
  if (head !== undefined && head.length > 0) from.write(head);
  payload.pipe(from).pipe(body);
  // A client gone while its first bytes were looked at (deflate): nothing more will come.
  if (payload.destroyed && !payload.readableEnded)
    from.destroy(payload.errored ?? new Error('the client closed the connection'));
  return body;
}

/**
 * A response body read as text up to a limit: what answers a URL the user gave the CLI (a model
 * server, a squatted port) is untrusted, and an endless body read whole (`res.text()`) held every
 * byte until the timeout, GBs at loopback speed.
 */

/** A body past its limit (the rest is not read). */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the answer is over ${limit / 1024 / 1024} MiB`);
  }
}

/** The body as text, or BodyTooLarge once it is past `limit` bytes (the rest cancelled, unread). */
export async function boundedText(
  body: AsyncIterable<Uint8Array> | null | undefined,
  limit: number,
): Promise<string> {
  if (!body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    // thrown out of the loop: the iterator's return() cancels the rest of the body
    if (size > limit) throw new BodyTooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

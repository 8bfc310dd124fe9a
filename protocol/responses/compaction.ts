/**
 * The compaction toolproof makes (POST /v1/responses/compact, server/front-doors/responses/
 * compact.ts): the model's summary of the conversation, carried in the `compaction` item's
 * `encrypted_content` in the clear under a marker, so that the item, sent back first on every
 * later turn, becomes that summary again on any worker or replica (nothing is kept). OpenAI's
 * own compaction items are encrypted: those stay the note that says so (hosted-history.ts).
 */

const MARK = 'toolproof-summary-v1:';

/** What the model is asked, as the conversation's last user turn, to compact it. */
export const COMPACT_INSTRUCTION =
  'Summarize the conversation so far so that it can be continued from the summary alone: the task and its constraints, what was done and found (files, commands, results, decisions), what is left and the next step. Do not call any tools; answer in text only.';

export function encodeOwnCompaction(summary: string): string {
  return MARK + Buffer.from(summary, 'utf8').toString('base64');
}

/** The summary a compaction item toolproof made holds; undefined for any other. */
export function decodeOwnCompaction(encrypted: unknown): string | undefined {
  if (typeof encrypted !== 'string' || !encrypted.startsWith(MARK)) return undefined;
  return Buffer.from(encrypted.slice(MARK.length), 'base64').toString('utf8');
}

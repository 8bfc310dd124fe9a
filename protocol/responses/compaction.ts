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

/**
 * What a `compaction_trigger` input item becomes (OpenAI's API: "Compacts the current context.
 * Must be the final input item."; the compaction runs on its servers and the answer's output is
 * its encrypted `compaction` item): the user turn asking for the summary, saying why. The answer
 * is a `compaction` item holding the model's summary (stream.ts), as /v1/responses/compact's.
 * Before, a 400 on every request that carried one: the client could not compact, and every turn
 * that compaction would have shortened was refused as too long.
 */
export const COMPACTION_TRIGGER_TEXT = `[compaction_trigger: the conversation is compacted here. toolproof has no server-side compaction, so the summary is the answer.]\n\n${COMPACT_INSTRUCTION}`;

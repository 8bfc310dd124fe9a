/**
 * Mistral-family templates raise "Tool call IDs should be alphanumeric strings with length 9!"
 * (llama-server turns it into a 400; so does vLLM's mistral tokenizer). Every id is mapped to 9
 * alphanumerics by hashing it: stateless, so the same history maps the same way on every turn,
 * and the calls and their results get the same new id because the mapping is by original id.
 */
import { StringMap } from '../../protocol/string-set.js';
import { base62Hash } from '../kit/short-hash.js';

const NINE_ALNUM = /^[A-Za-z0-9]{9}$/;

export function isNineCharId(id: string): boolean {
  return NINE_ALNUM.test(id);
}

/**
 * Builds the mapping for `ids`, in order of appearance, in one pass: an id that already fits is
 * kept unless an earlier id took it; any other id gets its hash, re-salted while taken. Each
 * id's mapping depends only on the ids before it, so the ids of turn N stay the same when turn
 * N+1 appends more (the prompt prefix does not change: docs/prefix.md).
 */
export function buildNineCharIdMap(ids: readonly string[]): StringMap<string> {
  // Ids are the client's: many long ones alike but for their ends must not share one hash.
  const map = new StringMap<string>();
  const taken = new Set<string>();
  for (const id of ids) {
    if (map.has(id)) continue;
    let candidate = isNineCharId(id) ? id : base62Hash(id, 9);
    for (let salt = 1; taken.has(candidate); salt++) candidate = base62Hash(`${id}#${salt}`, 9);
    map.set(id, candidate);
    taken.add(candidate);
  }
  return map;
}

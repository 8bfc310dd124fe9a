/**
 * What the inspector diffs an upstream attempt's request against (docs/inspect.md). Every attempt
 * goes upstream as chat completions; a chat client's request is in that format already, so it is
 * the base. A Messages or Responses client's request is not: diffed against its own body, every
 * line of the attempt read as added. Its base is the client's request as the door translated it
 * to chat completions, before toolproof's policies: what the diff shows then is what the policies
 * changed (the forced tool, repaired history, a retry's feedback).
 *
 * Translated when the record is read, not when the request ran: the translations are pure
 * (protocol/), and keeping a second copy of every translated request would cost the capture's
 * hot path a serialization per request. An item_reference is resolved from the Responses item
 * store as the request did, and a previous_response_id's conversation from the same store; one no
 * longer held there (evicted, or served by another worker) is shown as a placeholder that says so.
 * Both are read only within what a captured body keeps (TOOLPROOF_CAPTURE_BODY_KB): a record of a
 * few bytes continuing a 16 MB conversation cost the whole conversation at every read.
 */
import { translateRequest as translateMessages } from '../../protocol/anthropic/request.js';
import type { MessagesRequest } from '../../protocol/anthropic/types.js';
import { keepSourceText, stringifyJson } from '../../protocol/lossless-json.js';
import type { ItemLookup } from '../../protocol/responses/items.js';
import { translateRequest as translateResponses } from '../../protocol/responses/request.js';
import type { InputItem, ResponsesRequest } from '../../protocol/responses/types.js';
import type { AppState } from '../app-state.js';
import { DEFAULT_CAPTURE_BODY_KB } from '../config.js';
import type { CaptureRecord } from '../capture/ring.js';

export interface DiffBase {
  /**
   * `client`: the client's request as received (chat completions); `translated`: the client's
   * request translated to chat completions, before toolproof's policies; null: none (see note).
   */
  against: 'client' | 'translated' | null;
  /** The base's JSON text ('' when there is none). */
  text: string;
  /** Why there is no base. */
  note?: string;
}

/**
 * The store's scope of a record's key ('' without keys): the key whose name the record keeps, or,
 * among the flat keys (TOOLPROOF_API_KEYS, all named "default"), the one whose token it keeps
 * (config-keys.ts flatKeyToken). Undefined when it cannot be told: a record without a token of
 * several keys of its name, or a key no longer configured (a reload took it out). The name alone
 * read the first flat key's scope for every flat key's record, so another flat key's request
 * showed the first one's items in its diff base.
 */
function scopeOf(
  state: AppState,
  keyName: string | undefined,
  token: string | undefined,
): string | undefined {
  if (keyName === undefined) return '';
  let scope: string | undefined;
  for (const k of state.config.keys) {
    if (k.name !== keyName) continue;
    if (token !== undefined) {
      if (k.token === token) return k.key;
      continue;
    }
    if (scope !== undefined) return undefined;
    scope = k.key;
  }
  return token !== undefined ? undefined : (scope ?? '');
}

/** Why a record's conversation or reference is not shown when its key's scope is unknown. */
const SHARED_NAME =
  'made with a key that is no longer configured, or one of several of one name the capture cannot tell apart: which store holds it cannot be told';

/**
 * A base larger than a captured body: the attempt it would be diffed against was cut at that size
 * (it holds the same conversation), and reading it would cost what the whole conversation costs
 * at every read of a record of a few bytes.
 */
class LargerThanCaptured extends Error {
  constructor(chars: number) {
    super(
      `the conversation it continues and the items it refers to come to more than a captured body keeps (${Math.round(chars / 1024)} KB: TOOLPROOF_CAPTURE_BODY_KB), as the attempt's request was cut, so there is no base to diff against`,
    );
  }
}

/**
 * The conversation a Responses request's previous_response_id or conversation continued, as the
 * store holds it now (read without making it the newest; a conversation's latest turns included,
 * since it went on), or a placeholder that says it is gone; and its bytes. Past `limit`, thrown.
 */
function historyOf(
  state: AppState,
  scope: string | undefined,
  request: ResponsesRequest,
  limit: number,
): { items: InputItem[]; bytes: number } | undefined {
  const previous = request.previous_response_id;
  const c = request.conversation;
  const conversation = typeof c === 'string' ? c : typeof c?.id === 'string' ? c.id : undefined;
  if (typeof previous !== 'string' && conversation === undefined) return undefined;
  const store = scope === undefined ? undefined : state.responsesStore;
  const found =
    scope === undefined
      ? undefined
      : conversation !== undefined
        ? store?.conversationItems(scope, conversation, false, limit)
        : store?.conversation(scope, previous as string, false, limit);
  if (found && found.missing === undefined) {
    if (found.bytes > limit) throw new LargerThanCaptured(limit);
    return found;
  }
  const named =
    conversation !== undefined ? `conversation ${conversation}` : `previous_response_id ${previous}`;
  const gone = {
    type: 'message',
    role: 'user',
    content: `[the conversation ${named} continued: ${scope === undefined ? SHARED_NAME : "no longer in this process's store"}, so not shown here]`,
  } as unknown as InputItem;
  return { items: [gone], bytes: 0 };
}

/**
 * The Responses item an item_reference named, as the request resolved it (or a placeholder), all
 * of them with the conversation's `already` bytes within `limit`.
 */
function itemLookup(state: AppState, scope: string | undefined, limit: number, already: number): ItemLookup {
  const resolve =
    scope === undefined
      ? undefined
      : state.responsesStore?.references(scope, limit, () => new LargerThanCaptured(limit), already);
  return (id) =>
    resolve?.(id) ??
    ({
      type: 'message',
      role: 'assistant',
      content: [
        {
          type: 'output_text',
          text: `[item_reference ${id}: ${scope === undefined ? SHARED_NAME : "no longer in this process's item store"}, so not shown here]`,
        },
      ],
    } as unknown as InputItem);
}

export function diffBaseOf(record: CaptureRecord, state: AppState): DiffBase {
  const body = record.clientRequest.body;
  if (record.api !== 'messages' && record.api !== 'responses') return { against: 'client', text: body.text };
  if (body.cut > 0)
    return {
      against: null,
      text: '',
      note: `the client's request was cut at capture (${body.cut} characters left out), so it cannot be translated`,
    };
  try {
    const bytes = Buffer.from(body.text, 'utf8');
    const parsed = JSON.parse(body.text) as unknown;
    keepSourceText(parsed, bytes);
    let chat: unknown;
    if (record.api === 'messages') chat = translateMessages(parsed as MessagesRequest).chat;
    else {
      const scope = scopeOf(state, record.key, record.keyToken);
      // What a captured attempt keeps of a body (the default when the capture is off: no record).
      const limit = state.config.capture?.textChars ?? DEFAULT_CAPTURE_BODY_KB * 1024;
      const history = historyOf(state, scope, parsed as ResponsesRequest, limit);
      chat = translateResponses(
        parsed as ResponsesRequest,
        itemLookup(state, scope, limit, history?.bytes ?? 0),
        history?.items,
      ).chat;
    }
    return { against: 'translated', text: stringifyJson(chat, parsed) };
  } catch (err) {
    if (err instanceof LargerThanCaptured) return { against: null, text: '', note: err.message };
    return {
      against: null,
      text: '',
      note: `the client's request does not translate now: ${(err as Error).message.slice(0, 300)}`,
    };
  }
}

/**
 * The diff bases of a session's export (`records` oldest first), the newest first within `chars`
 * of their text: past it, each says it was left out. A base of a Responses request is its
 * conversation as the store holds it now, up to a captured body (256 KB by default) for each
 * record, however small the record: a session of tiny requests naming one conversation grown
 * since (POST .../items) exported 100 requests as 26 MB, about 250 KB of base each, past the
 * export's 16 MiB bound by as many bases as the ring held (a 10 MB ring holds thousands). Once a
 * base does not fit, none after it is built (each costs its conversation's translation).
 */
export function diffBasesWithin(
  records: readonly CaptureRecord[],
  state: AppState,
  chars: number,
): DiffBase[] {
  const out = new Array<DiffBase>(records.length);
  let room = chars;
  for (let i = records.length - 1; i >= 0; i--) {
    const base = room > 0 ? diffBaseOf(records[i]!, state) : undefined;
    if (base !== undefined && base.text.length <= room) {
      room -= base.text.length;
      out[i] = base;
      continue;
    }
    room = 0;
    out[i] = {
      against: null,
      text: '',
      note: `left out of this export: the newer requests' bases came to its bound (${Math.round(chars / 1048576)} MiB of text); the request's own view (/inspect/api/requests/:id) still has it`,
    };
  }
  return out;
}

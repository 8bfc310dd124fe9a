/**
 * A captured body read back as what it says: the text, the reasoning and the calls of a chat
 * completion or its stream (what the model wrote, upstream), or of any front door's answer (what
 * the client received: chat, Responses or Messages, whole or streamed). Best effort by design:
 * an unknown event is skipped, a body cut by the capture reads as far as it goes.
 */

export interface Reassembled {
  content: string;
  reasoning: string;
  calls: Array<{ name: string; arguments: string }>;
  /** An error the body carried (an error body or event). */
  error?: string;
  /** Whether the body was a stream of events. */
  stream: boolean;
  /**
   * How the answer ended, as the body says: each chat choice's `finish_reason` (in its order), a
   * Responses answer's `status` (`incomplete`: its `incomplete_details.reason`), a Messages
   * answer's `stop_reason`. Empty when the body names none (a stream cut, or still coming); the
   * view (query.ts) then says who ended it.
   */
  finish: string[];
  /**
   * A chat body of more than one choice (`n` > 1): each choice read back on its own, by its
   * index (the fields above run them all together).
   */
  choices?: Reassembled[];
}

/** The JSON payloads of a body: one per `data:` line of a stream (or of captured events), or the body itself. */
export function payloadsOf(text: string): { payloads: unknown[]; stream: boolean } {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) {
    // One JSON body, or captured events (one payload a line).
    try {
      return { payloads: [JSON.parse(trimmed)], stream: false };
    } catch {
      // events, one a line
    }
  }
  const payloads: unknown[] = [];
  let stream = false;
  for (const raw of text.split('\n')) {
    const line = raw.startsWith('data:') ? raw.slice(5).trim() : raw.trim();
    if (raw.startsWith('data:')) stream = true;
    if (!line.startsWith('{')) continue;
    stream = true;
    try {
      payloads.push(JSON.parse(line));
    } catch {
      // a cut or foreign line
    }
  }
  return { payloads, stream };
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * A value of the upstream's written again as JSON, or a note when it cannot be: JSON.stringify
 * recurses, and an object nested a few thousand levels (a 14 KB error body, under every scan's
 * threshold) overflowed the stack: the inspector's view of that request was a 500.
 */
function jsonOf(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return '(nested too deep to show)';
  }
}

export function reassemble(text: string): Reassembled {
  const { payloads, stream } = payloadsOf(text);
  const out: Reassembled = { content: '', reasoning: '', calls: [], stream, finish: [] };
  /** Calls by their index in the stream (chat: tool_calls[].index; others: output or block index). */
  const byIndex = new Map<string, { name: string; arguments: string }>();
  const callAt = (key: string, name?: string) => {
    let c = byIndex.get(key);
    if (!c) {
      c = { name: name ?? '', arguments: '' };
      byIndex.set(key, c);
      out.calls.push(c);
    } else if (name) c.name = name;
    return c;
  };
  /** A chat body's choices by index, each read on its own (calls shared with `out.calls`). */
  const byChoice = new Map<number, Reassembled>();
  const choiceAt = (index: number): Reassembled => {
    let c = byChoice.get(index);
    if (!c) {
      c = { content: '', reasoning: '', calls: [], stream, finish: [] };
      byChoice.set(index, c);
    }
    return c;
  };
  for (const p of payloads) {
    const e = obj(p);
    if (!e) continue;
    // `error: null` is no error: a Responses answer carries the field whole (OpenAI's shape), and
    // a non-streamed one read as "error: null", its text lost (its chain split into one session
    // per turn: runs.ts marks a run by that text).
    if (e.error !== undefined && e.error !== null && !Array.isArray(e.choices)) {
      const err = obj(e.error);
      out.error = err ? str(err.message) || jsonOf(err) : String(e.error);
      continue;
    }
    if (Array.isArray(e.choices)) {
      for (const ch of e.choices) {
        const c = obj(ch);
        const index = typeof c?.index === 'number' ? c.index : 0;
        if (typeof c?.finish_reason === 'string' && c.finish_reason !== '') {
          out.finish.push(c.finish_reason);
          choiceAt(index).finish.push(c.finish_reason);
        }
        const m = obj(c?.delta) ?? obj(c?.message);
        if (!m) continue;
        const one = choiceAt(index);
        const content = str(m.content);
        const reasoning = str(m.reasoning_content) || str(m.reasoning);
        out.content += content;
        out.reasoning += reasoning;
        one.content += content;
        one.reasoning += reasoning;
        if (Array.isArray(m.tool_calls))
          m.tool_calls.forEach((t, i) => {
            const tc = obj(t);
            const f = obj(tc?.function);
            const idx = typeof tc?.index === 'number' ? tc.index : i;
            const key = `c${index}.${idx}`;
            const fresh = !byIndex.has(key);
            const call = callAt(key, str(f?.name) || undefined);
            if (fresh) one.calls.push(call);
            call.arguments += str(f?.arguments);
          });
      }
      continue;
    }
    const type = str(e.type);
    // OpenAI Responses
    if (type === 'response.output_text.delta') out.content += str(e.delta);
    else if (type === 'response.reasoning_text.delta' || type === 'response.reasoning_summary_text.delta')
      out.reasoning += str(e.delta);
    else if (type === 'response.output_item.added') {
      const item = obj(e.item);
      if (item?.type === 'function_call') callAt(`r${e.output_index}`, str(item.name));
    } else if (type === 'response.function_call_arguments.delta')
      callAt(`r${e.output_index}`).arguments += str(e.delta);
    else if (type === 'response' || Array.isArray(e.output)) {
      readResponsesOutput(e, out);
      responsesFinish(e, out);
    }
    // Anthropic Messages
    else if (type === 'content_block_start') {
      const b = obj(e.content_block);
      if (b?.type === 'tool_use') callAt(`m${e.index}`, str(b.name));
    } else if (type === 'content_block_delta') {
      const d = obj(e.delta);
      if (d?.type === 'text_delta') out.content += str(d.text);
      else if (d?.type === 'thinking_delta') out.reasoning += str(d.thinking);
      else if (d?.type === 'input_json_delta') callAt(`m${e.index}`).arguments += str(d.partial_json);
    } else if (type === 'message_delta') {
      const reason = str(obj(e.delta)?.stop_reason);
      if (reason) out.finish.push(reason);
    } else if (type === 'message' && Array.isArray(e.content)) {
      if (str(e.stop_reason)) out.finish.push(str(e.stop_reason));
      for (const b of e.content) {
        const block = obj(b);
        if (block?.type === 'text') out.content += str(block.text);
        else if (block?.type === 'thinking') out.reasoning += str(block.thinking);
        else if (block?.type === 'tool_use')
          out.calls.push({ name: str(block.name), arguments: jsonOf(block.input ?? {}) });
      }
    } else if (type === 'error') {
      const err = obj(e.error);
      out.error = err ? str(err.message) : 'error';
    } else if (
      type === 'response.failed' ||
      type === 'response.completed' ||
      type === 'response.incomplete'
    ) {
      const r = obj(e.response);
      if (r) responsesFinish(r, out);
      const err = obj(r?.error);
      if (err) out.error = str(err.message);
      if (r && out.content === '' && out.calls.length === 0 && type === 'response.completed')
        readResponsesOutput(r, out);
    }
  }
  if (byChoice.size > 1) out.choices = [...byChoice].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
  return out;
}

/** A Responses answer's end: its status, or why it is incomplete. */
function responsesFinish(r: Obj, out: Reassembled): void {
  const status = str(r.status);
  if (status === '' || status === 'in_progress' || status === 'queued') return;
  const why = status === 'incomplete' ? str(obj(r.incomplete_details)?.reason) : '';
  out.finish = [why ? `incomplete: ${why}` : status];
}

function readResponsesOutput(r: Obj, out: Reassembled): void {
  if (!Array.isArray(r.output)) return;
  for (const it of r.output) {
    const item = obj(it);
    if (item?.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content) out.content += str(obj(part)?.text);
    } else if (item?.type === 'function_call')
      out.calls.push({ name: str(item.name), arguments: str(item.arguments) });
    else if (item?.type === 'reasoning' && Array.isArray(item.content))
      for (const part of item.content) out.reasoning += str(obj(part)?.text);
  }
}

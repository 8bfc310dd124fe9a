/**
 * A kept response as the event stream a streamed request for it sends (GET
 * /v1/responses/{id}?stream=true: the openai SDK's `responses.retrieve(id, {stream: true})` and
 * `responses.stream({response_id})`). The events are rebuilt from the final response.
 *
 * A response that was streamed is rebuilt as it went out: its StreamNumbering (a few numbers an
 * event: its kind, its item and part, a delta's length) gives each event its live
 * sequence_number and each delta its slice of the final text, so a client that lost its stream
 * after event N and resumes with `starting_after` N gets exactly the events it had not seen, the
 * live stream's keepalives included (numbered without a gap).
 * Before, the rebuilt stream was numbered from 0 with each item's content in one delta: N from the
 * live stream named another event, and the resumed client skipped or repeated content (the openai
 * SDK filters the replay by sequence_number itself). A response answered whole has no live
 * numbering: response.created and response.in_progress (no output yet), each output item added,
 * its content in one delta, done, then the terminal event, numbered from 0. Pure.
 */
import type { ResponsesEvent, ResponsesEventBody } from './types.js';

type Obj = Record<string, unknown>;

const TERMINAL: Readonly<Record<string, string>> = {
  completed: 'response.completed',
  incomplete: 'response.incomplete',
  failed: 'response.failed',
  cancelled: 'response.cancelled',
};

/** One item's events between output_item.added and output_item.done. */
function itemEvents(item: Obj, outputIndex: number, out: ResponsesEventBody[]): void {
  const at = { item_id: item.id, output_index: outputIndex };
  const parts = Array.isArray(item.content) ? (item.content as Obj[]) : [];
  if (item.type === 'message' || item.type === 'reasoning') {
    parts.forEach((part, k) => {
      const text = typeof part.text === 'string' ? part.text : '';
      const at2 = { ...at, content_index: k };
      const output = part.type === 'output_text';
      const reasoning = part.type === 'reasoning_text';
      out.push({
        type: 'response.content_part.added',
        ...at2,
        part: { ...part, ...(output || reasoning ? { text: '' } : {}) },
      });
      if (output) {
        out.push({ type: 'response.output_text.delta', ...at2, delta: text, logprobs: [] });
        out.push({ type: 'response.output_text.done', ...at2, text, logprobs: [] });
      } else if (reasoning) {
        out.push({ type: 'response.reasoning_text.delta', ...at2, delta: text });
        out.push({ type: 'response.reasoning_text.done', ...at2, text });
      }
      out.push({ type: 'response.content_part.done', ...at2, part });
    });
  } else if (item.type === 'function_call') {
    const args = typeof item.arguments === 'string' ? item.arguments : '';
    out.push({ type: 'response.function_call_arguments.delta', ...at, delta: args });
    out.push({ type: 'response.function_call_arguments.done', ...at, name: item.name, arguments: args });
  } else if (item.type === 'custom_tool_call') {
    const input = typeof item.input === 'string' ? item.input : '';
    out.push({ type: 'response.custom_tool_call_input.delta', ...at, delta: input });
    out.push({ type: 'response.custom_tool_call_input.done', ...at, input });
  }
}

/** The item as output_item.added shows it: in progress, before its content. */
function opened(item: Obj): Obj {
  const out: Obj = { ...item };
  if ('status' in item) out.status = 'in_progress';
  if (item.type === 'message' || item.type === 'reasoning') out.content = [];
  if (item.type === 'function_call') out.arguments = '';
  if (item.type === 'custom_tool_call') out.input = '';
  return out;
}

/** The events a live stream numbers, by code (StreamNumbering); any other is not replayed. */
const CODES = [
  'keepalive',
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.content_part.added',
  'response.output_text.delta',
  'response.output_text.done',
  'response.reasoning_text.delta',
  'response.reasoning_text.done',
  'response.content_part.done',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'response.custom_tool_call_input.delta',
  'response.custom_tool_call_input.done',
  'response.output_item.done',
  ...Object.values(TERMINAL),
] as const;
const CODE = new Map<string, number>(CODES.map((c, i) => [c, i]));
const OTHER = 255;

/** Words a live event takes: its code and content index, its output index, a delta's length. */
const WORDS = 3;

/**
 * The numbering of one live stream, recorded event by event as it goes out (server: the
 * Responses SSE output) and kept beside the response. Three 32-bit words an event. Invalid (and
 * not kept) when the events are not numbered 0, 1, 2, ... as recorded.
 */
export class StreamNumbering {
  private words = new Uint32Array(WORDS * 64);
  private n = 0;
  private valid = true;

  record(event: ResponsesEvent): void {
    if (event.sequence_number !== this.n) this.valid = false;
    if (this.words.length < WORDS * (this.n + 1)) {
      const grown = new Uint32Array(this.words.length * 2);
      grown.set(this.words);
      this.words = grown;
    }
    const e = event as unknown as Obj;
    const content = typeof e.content_index === 'number' ? e.content_index + 1 : 0;
    const output = typeof e.output_index === 'number' ? e.output_index + 1 : 0;
    const delta = typeof e.delta === 'string' ? e.delta.length : 0;
    const at = WORDS * this.n++;
    this.words[at] = (CODE.get(event.type) ?? OTHER) | (content << 8);
    this.words[at + 1] = output;
    this.words[at + 2] = delta;
  }

  /** The numbering as kept (a copy of its length), or undefined when it cannot be trusted. */
  finish(): Uint32Array | undefined {
    return this.valid ? this.words.slice(0, WORDS * this.n) : undefined;
  }
}

/** The text an item's deltas at content index `k` (-1: none) build. */
function textOf(item: Obj | undefined, k: number): string {
  if (!item) return '';
  if (item.type === 'function_call') return typeof item.arguments === 'string' ? item.arguments : '';
  if (item.type === 'custom_tool_call') return typeof item.input === 'string' ? item.input : '';
  const part = Array.isArray(item.content) ? (item.content as Obj[])[k] : undefined;
  return typeof part?.text === 'string' ? part.text : '';
}

/**
 * The events of `response` as its live stream numbered them (`numbering`), those after
 * `startingAfter`, one at a time: a long stream's events were built in one array, then one
 * string, on the event loop, once per request (GET /v1/responses/{id}?stream=true).
 */
function* replayNumbered(
  response: Obj,
  numbering: Uint32Array,
  startingAfter: number,
): Generator<ResponsesEvent, void, undefined> {
  const output = Array.isArray(response.output) ? (response.output as Obj[]) : [];
  const snapshot = { ...response, status: 'in_progress', output: [], output_text: '', usage: null };
  /** Each item's and part's text sent so far (a delta's start). */
  const sent = new Map<number, number>();
  for (let seq = 0; WORDS * seq < numbering.length; seq++) {
    const word = numbering[WORDS * seq]!;
    const type = CODES[word & 0xff];
    const k = (word >>> 8) - 1;
    const i = numbering[WORDS * seq + 1]! - 1;
    const item = output[i];
    const key = i * 65_536 + k + 1;
    const from = sent.get(key) ?? 0;
    const length = numbering[WORDS * seq + 2]!;
    if (type?.endsWith('.delta')) sent.set(key, from + length);
    if (seq <= startingAfter || type === undefined) continue;
    // Sent again at its place: left out, the resumed stream's numbering had a gap there, as if an
    // event had been lost.
    if (type === 'keepalive') {
      yield { type, sequence_number: seq };
      continue;
    }
    const at = { item_id: item?.id, output_index: i, ...(k >= 0 ? { content_index: k } : {}) };
    const text = textOf(item, k);
    const part = k >= 0 && Array.isArray(item?.content) ? (item.content as Obj[])[k] : undefined;
    let body: ResponsesEventBody;
    switch (type) {
      case 'response.created':
      case 'response.in_progress':
        body = { type, response: snapshot };
        break;
      case 'response.output_item.added':
        body = { type, output_index: i, item: item ? opened(item) : {} };
        break;
      case 'response.output_item.done':
        body = { type, output_index: i, item: item ?? {} };
        break;
      case 'response.content_part.added':
        body = { type, ...at, part: { ...part, ...(typeof part?.text === 'string' ? { text: '' } : {}) } };
        break;
      case 'response.content_part.done':
        body = { type, ...at, part: part ?? {} };
        break;
      case 'response.output_text.delta':
        body = { type, ...at, delta: text.slice(from, from + length), logprobs: [] };
        break;
      case 'response.reasoning_text.delta':
      case 'response.function_call_arguments.delta':
      case 'response.custom_tool_call_input.delta':
        body = { type, ...at, delta: text.slice(from, from + length) };
        break;
      case 'response.output_text.done':
        body = { type, ...at, text, logprobs: [] };
        break;
      case 'response.reasoning_text.done':
        body = { type, ...at, text };
        break;
      case 'response.function_call_arguments.done':
        body = { type, ...at, name: item?.name, arguments: text };
        break;
      case 'response.custom_tool_call_input.done':
        body = { type, ...at, input: text };
        break;
      default:
        body = { type, response };
    }
    yield { ...body, sequence_number: seq };
  }
}

/**
 * The events of `response` (a kept one, its output whole), those numbered after `startingAfter`:
 * as its live stream numbered them when `numbering` was kept, else rebuilt from 0.
 */
export function* replayEvents(
  response: Obj,
  startingAfter = -1,
  numbering?: Uint32Array,
): Generator<ResponsesEvent, void, undefined> {
  if (numbering) {
    yield* replayNumbered(response, numbering, startingAfter);
    return;
  }
  const output = Array.isArray(response.output) ? (response.output as Obj[]) : [];
  const snapshot = { ...response, status: 'in_progress', output: [], output_text: '', usage: null };
  const bodies: ResponsesEventBody[] = [
    { type: 'response.created', response: snapshot },
    { type: 'response.in_progress', response: snapshot },
  ];
  output.forEach((item, i) => {
    bodies.push({ type: 'response.output_item.added', output_index: i, item: opened(item) });
    itemEvents(item, i, bodies);
    bodies.push({ type: 'response.output_item.done', output_index: i, item });
  });
  const terminal = TERMINAL[String(response.status)];
  if (terminal) bodies.push({ type: terminal, response });
  for (let seq = startingAfter + 1; seq < bodies.length; seq++)
    yield { ...bodies[seq]!, sequence_number: seq };
}

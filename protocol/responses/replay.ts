/**
 * A kept response as the event stream a streamed request for it sends (GET
 * /v1/responses/{id}?stream=true: the openai SDK's `responses.retrieve(id, {stream: true})` and
 * `responses.stream({response_id})`). Nothing is held of a stream but its final response, so the
 * events are rebuilt from it, numbered from 0: response.created and response.in_progress (the
 * response with no output yet), each output item added, its content in one delta, done, then the
 * response's terminal event. An SDK that assembles the stream gets the response as kept.
 * `starting_after` counts in this rebuilt numbering. Pure.
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

/** The events of `response` (a kept one, its output whole), those numbered after `startingAfter`. */
export function replayEvents(response: Obj, startingAfter = -1): ResponsesEvent[] {
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
  const out: ResponsesEvent[] = [];
  for (let seq = startingAfter + 1; seq < bodies.length; seq++)
    out.push({ ...bodies[seq]!, sequence_number: seq });
  return out;
}

/**
 * The inspector API's answers as its OpenAPI document shows them (docs/inspect.md names every
 * field): what a script reads without reading toolproof's code. Documentation only: the routes
 * serialize their answers with JSON.stringify (inspect.ts), so a field left out here is still
 * sent, never stripped or coerced; tests/server/inspect.test.ts checks each answer against these.
 */
import type { Outcome } from '../capture/ring.js';

/** Every outcome a request can have (the list's `outcome` filter and its `kinds`). */
export const OUTCOMES: Outcome[] = [
  'clean',
  'degraded',
  'leak_recovered',
  'final_answer',
  'retried',
  'failed',
  'in_flight',
];

const obj = (description: string, properties: Record<string, unknown>, required?: string[]) => ({
  type: 'object',
  description,
  additionalProperties: true,
  properties,
  ...(required ? { required } : {}),
});
const nullable = (type: string, description?: string) => ({
  type: [type, 'null'],
  ...(description ? { description } : {}),
});
const str = (description?: string) => ({ type: 'string', ...(description ? { description } : {}) });
const int = (description?: string) => ({ type: 'integer', ...(description ? { description } : {}) });
const num = (description?: string) => ({ type: 'number', ...(description ? { description } : {}) });

const capturedText = obj(
  'A captured text: its first TOOLPROOF_CAPTURE_BODY_KB, the rest counted in `cut`.',
  {
    text: str(),
    cut: int('Characters left out.'),
    partial: { type: 'boolean', description: 'A request in flight: what was read or sent so far.' },
  },
  ['text', 'cut'],
);

const error = obj('An error: its catalogue code, HTTP status and message.', {
  code: str(),
  status: int(),
  message: str(),
});

const tokens = obj(
  "Summed over the attempts, from the upstream's usage; null when it did not report them (never 0 for unknown).",
  { cached: nullable('integer'), prompt: nullable('integer'), completion: nullable('integer') },
);

const summaryProperties = {
  id: str("The request id: the x-request-id response header and the log line's reqId."),
  worker: int(),
  at: num('Epoch milliseconds when the request arrived.'),
  api: str('chat, responses or messages: the front door.'),
  model: str('The model the client named.'),
  stream: { type: 'boolean' },
  session: str('The session label (the affinity key, docs/inspect.md).'),
  key: str('The name of the client key it came with (none when no key is configured).'),
  inFlight: { type: 'boolean' },
  status: {
    type: ['integer', 'string', 'null'],
    description: 'The status sent to the client; `aborted` when the client left; null in flight.',
  },
  outcome: { type: 'string', enum: OUTCOMES },
  kinds: { type: 'array', items: { type: 'string', enum: OUTCOMES } },
  attempts: int('Upstream attempts.'),
  tokens,
  durationMs: nullable('number', 'null in flight.'),
};

/** One captured request in a list (and a session's turn). */
export const summarySchema = obj('One captured request (docs/inspect.md).', summaryProperties);

export const listSchema = obj('Recent and in-flight requests, newest first.', {
  capture: { type: 'boolean', description: 'false: capture is off (TOOLPROOF_CAPTURE_MB=0).' },
  workers: int('How many workers answered.'),
  partial: { type: 'boolean', description: 'Only the answering worker could be read.' },
  requests: { type: 'array', items: summarySchema },
  older: int('How many matching requests the rings hold older than the last one listed.'),
  droppedForOthers: obj(
    "Only for a named key that sees its own requests (inspect: own): how many of its requests the rings dropped to make room for other keys' requests (the ring is shared), and when the newest of them arrived (epoch ms).",
    { records: int(), newest: num() },
  ),
});

const attempt = obj('One upstream attempt.', {
  n: int('1, 2, ...'),
  upstream: str(),
  replica: str('The replica that answered.'),
  at: num('Epoch milliseconds when it was sent.'),
  queueMs: num("From the client's request arriving to this attempt being sent."),
  ttfbMs: num("From sending to the upstream's response headers (none without a response)."),
  firstChunkMs: num("A stream's: from sending to its first bytes (the prefill shows here)."),
  totalMs: num('From sending to the end of the body, or to the failure.'),
  stream: { type: 'boolean' },
  request: { ...capturedText, description: 'The body exactly as sent.' },
  headers: {
    type: 'object',
    additionalProperties: { type: 'string' },
    description:
      "The headers as sent, name to value in their order (the backend's key `[redacted]`); absent when its record had no room for them.",
  },
  status: int("The upstream's status."),
  response: { ...capturedText, description: "A non-streamed body, or a stream's events as received." },
  events: int('How many events a stream carried.'),
  error,
});

const decision = obj('A harness decision.', {
  atMs: num('Milliseconds since the request arrived.'),
  attempt: int('The attempt it belongs to (0: before the first).'),
  kind: str(),
  policy: str(),
  reason: str('Why, in words.'),
  detail: str("The policy's own detail (JSON text, cut)."),
});

const record = obj('The request whole.', {
  ...summaryProperties,
  method: str(),
  path: str(),
  clientRequest: obj("The client's request as received.", {
    headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Name to value; credentials `[redacted]`.',
    },
    body: capturedText,
  }),
  upstreamAttempts: { type: 'array', items: attempt },
  decisions: { type: 'array', items: decision },
  clientResponse: obj('What the client received.', {
    status: nullable('integer'),
    body: { ...capturedText, description: "The response body as sent (a stream's frames)." },
  }),
  error,
  harness: { type: 'object', additionalProperties: true, description: "The log line's harness summary." },
});

const call = obj('A tool call.', { name: str(), arguments: str('JSON text.') });
const reassembledProperties = {
  content: str(),
  reasoning: str(),
  calls: { type: 'array', items: call },
  error: str('An error the body carried.'),
  stream: { type: 'boolean' },
  finish: {
    type: 'array',
    items: str(),
    description:
      "How the answer ended: each chat choice's finish_reason, a Responses answer's status (`incomplete: <reason>`), a Messages stop_reason. When the body names none: `client_closed` (the client left and its attempt was cancelled), `early_stop` (toolproof cut the attempt off itself), `error` (the attempt failed after its response opened: its error says which); empty while in flight.",
  },
};
const reassembled = obj('A response read back.', {
  ...reassembledProperties,
  choices: {
    type: 'array',
    description: 'A chat body of several choices (`n` > 1), each read back on its own, by index.',
    items: obj('One choice read back.', reassembledProperties),
  },
});

export const requestSchema = obj(
  'One request whole, and what the page reads of it.',
  {
    record,
    modelWrote: { type: 'array', items: reassembled, description: 'Per attempt, its response read back.' },
    clientReceived: reassembled,
    curl: {
      type: 'array',
      items: str(),
      description:
        "Per attempt, a curl command that replays it as sent: its URL, headers and body (the backend's key as the variable TOOLPROOF_UPSTREAM_API_KEY).",
    },
    attemptChoice: {
      type: 'array',
      items: nullable('integer'),
      description:
        "Per attempt, the choice it served when the client's n choices were asked one request each.",
    },
    diffBase: obj("What each attempt's request is diffed against.", {
      against: { type: ['string', 'null'], enum: ['client', 'translated', null] },
      text: str(),
      note: str('Why there is none.'),
    }),
    traces: {
      type: 'array',
      items: {
        type: ['object', 'null'],
        properties: { traceId: str('32 hex digits.'), spanId: str("The attempt's own span: 16 hex digits.") },
      },
      description:
        "Per attempt, its trace and span ids in the user's traces, from the traceparent it was sent with (docs/tracing.md); null when tracing is off, the sampler left it out, or its headers were not kept.",
    },
    cursor: str('Names the long texts of this answer: `?after=` it for only what changed.'),
    delta: {
      type: 'object',
      additionalProperties: { type: 'integer' },
      description: "Asked `?after=`: per text's path, how many characters of the asker's copy go before it.",
    },
  },
  ['record', 'modelWrote', 'clientReceived', 'curl', 'attemptChoice', 'diffBase', 'traces', 'cursor'],
);

export const sessionsSchema = obj('The sessions the rings hold, the newest first.', {
  workers: int('How many workers answered.'),
  partial: { type: 'boolean', description: 'Only the answering worker could be read.' },
  sessions: {
    type: 'array',
    items: obj('One session.', {
      session: str(),
      requests: int(),
      first: num('Epoch milliseconds of its first request.'),
      last: num('Epoch milliseconds of its last request.'),
      models: { type: 'array', items: str() },
      failed: int(),
    }),
  },
});

export const sessionSchema = obj("One session's turns in order.", {
  session: str(),
  workers: int('How many workers answered.'),
  partial: { type: 'boolean', description: 'Only the answering worker could be read.' },
  turns: {
    type: 'array',
    items: obj('One turn.', {
      summary: summarySchema,
      cachedRatio: nullable(
        'number',
        'Cached prompt tokens over prompt tokens, when the upstream reported both.',
      ),
      prefix: {
        type: ['object', 'null'],
        additionalProperties: true,
        description:
          'Whether the prompt kept the bytes of the turn it continues: null on the first turn or when a body was cut; {earlier: N} on the first turn held when its prompt carries N replies of the model (the turns before it are not in the capture: dropped from the ring, or made before toolproof started); {kept: true}; {opens: true} (a prompt of its own); or {kept: false, where, offset, partOffset, before, after}: the part of the prompt sent where it first differs, the byte in the prompt and in that part, and the text around it (docs/prefix.md).',
        properties: {
          kept: { type: 'boolean' },
          opens: { type: 'boolean' },
          earlier: int("The model's replies the first turn held carries: turns not in the capture."),
          where: str('tools, or messages[i].'),
          offset: int("In the prompt's UTF-8 bytes."),
          partOffset: int("In `where`'s UTF-8 bytes."),
          before: str(),
          after: str(),
        },
      },
    }),
  },
});

const { cursor: _cursor, delta: _delta, ...exportedRequestProperties } = requestSchema.properties;

/** One request or one session as a file (docs/inspect.md, "A bug report"): what the page shows. */
export const exportSchema = obj(
  'One request, or one session, as a single JSON file to hand to someone: what the inspector page shows of it. No credential is in it (the capture keeps none).',
  {
    format: { type: 'string', enum: ['toolproof-inspect-export'] },
    version: { type: 'integer', enum: [1] },
    exportedAt: str('When it was exported (ISO 8601).'),
    workers: int('How many workers answered.'),
    partial: { type: 'boolean', description: 'Only the answering worker could be read.' },
    session: obj(
      "A session's export: its turns in order, each with its cached ratio and prompt-prefix check (as /inspect/api/session answers).",
      {
        session: str(),
        turns: sessionSchema.properties.turns,
        omitted: int(
          "The session's older requests left out: the file holds each worker's newest requests of it up to 16 MiB of JSON in all.",
        ),
      },
    ),
    requests: {
      type: 'array',
      description:
        "Each request whole (a session's in order): the client's request, every attempt, the decisions, what the client received, as /inspect/api/requests/:id answers (without its cursor).",
      items: obj('One request whole.', exportedRequestProperties, [
        'record',
        'modelWrote',
        'clientReceived',
        'curl',
        'attemptChoice',
        'diffBase',
      ]),
    },
  },
  ['format', 'version', 'exportedAt', 'requests'],
);

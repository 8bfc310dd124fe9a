/**
 * The vLLM personality, shapes taken from vLLM's OpenAI server (entrypoints/openai protocol and
 * serving_chat): `chatcmpl-<hex>` ids, `chatcmpl-tool-<hex>` call ids, `content: null` beside
 * tool calls, a first streamed delta `{"role":"assistant","content":""}`, tool-call deltas that
 * open with id/type/name and empty arguments, errors nested under `error` with an int `code`.
 */
import { imageFetchError } from './image-fetch.js';
import { strictHistoryProblem } from './history-checks.js';
import type { Generation } from './generate.js';
import { pyLiteral } from './leak-formats.js';
import { contentLogprobs, promptLogprobs } from './logprobs.js';
import {
  jsonTypeName,
  type PersonalityImpl,
  type ResponseMeta,
  type SimError,
  type SimStats,
} from './personality.js';
import { randomHex, splitTokens } from './tokens.js';
import type { SimulatorOptions } from './types.js';

/** The media parts vLLM's chat parser takes (a text-only model refuses each). */
const MEDIA_PARTS: ReadonlySet<string> = new Set(['image_url', 'input_audio', 'audio_url', 'video_url']);

/**
 * The part types vLLM's chat parser takes (vllm/entrypoints/chat_utils.py, MM_PARSER_MAP); any
 * other raises NotImplementedError("Unknown part type: <type>"), a 400.
 */
const VLLM_PART_TYPES: ReadonlySet<string> = new Set([
  'text',
  'thinking',
  'input_text',
  'output_text',
  'input_image',
  'image_url',
  'image_embeds',
  'audio_embeds',
  'image_pil',
  'audio_url',
  'input_audio',
  'refusal',
  'video_url',
]);

type Obj = Record<string, unknown>;

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'BadRequestError',
  401: 'Unauthorized',
  404: 'NotFoundError',
  500: 'InternalServerError',
  501: 'NotImplementedError',
};

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (message: string, type = 'BadRequestError'): SimError => ({ status: 400, message, type });

/**
 * FastAPI/pydantic validation failures, worded like vLLM's validation_exception_handler:
 * "1 validation error:\n  {<pydantic error repr>}", type "Bad Request", param from the error's loc.
 */
function validationError(
  kind: string,
  loc: Array<string | number>,
  msg: string,
  input: unknown,
  ctx?: Obj,
): SimError {
  const fields = [
    `'type': ${pyLiteral(kind)}`,
    `'loc': (${loc.map(pyLiteral).join(', ')})`,
    `'msg': ${pyLiteral(msg)}`,
    `'input': ${pyLiteral(input)}`,
  ];
  if (ctx) fields.push(`'ctx': ${pyLiteral(ctx)}`);
  return {
    status: 400,
    message: `1 validation error:\n  {${fields.join(', ')}}`,
    type: 'Bad Request',
    param: loc.join('.'),
  };
}

function pydanticError(kind: string, field: string, msg: string, input: unknown): SimError {
  return validationError(kind, ['body', field], msg, input);
}

/** Python json.JSONDecodeError's reason and position, from V8's JSON.parse message. */
function pythonJsonError(raw: string, v8Message: string): { reason: string; pos: number; text: string } {
  const pos = Number(/position (\d+)/.exec(v8Message)?.[1] ?? raw.length);
  const table: Array<[RegExp, string]> = [
    [/property name/, 'Expecting property name enclosed in double quotes'],
    [/after (array element|property value)/, "Expecting ',' delimiter"],
    [/after property name/, "Expecting ':' delimiter"],
    [/Unterminated string/, 'Unterminated string starting at'],
    [/non-whitespace character after JSON/, 'Extra data'],
  ];
  const reason = table.find(([re]) => re.test(v8Message))?.[1] ?? 'Expecting value';
  const before = raw.slice(0, pos);
  const line = before.split('\n').length;
  const col = pos - before.lastIndexOf('\n');
  return { reason, pos, text: `${reason}: line ${line} column ${col} (char ${pos})` };
}

function jsonDecodeError(raw: string, v8Message: string): SimError {
  const { reason, pos } = pythonJsonError(raw, v8Message);
  return validationError('json_invalid', ['body', pos], 'JSON decode error', {}, { error: reason });
}

/** vLLM json.loads() every string `arguments` in history (chat_utils), so bad JSON is always a 400. */
function historyArgumentsError(messages: Obj[]): SimError | null {
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
    for (const tc of m.tool_calls) {
      const args = isObj(tc) && isObj(tc.function) ? tc.function.arguments : undefined;
      if (typeof args !== 'string' || args === '') continue;
      try {
        JSON.parse(args);
      } catch (err) {
        return bad(pythonJsonError(args, (err as Error).message).text);
      }
    }
  }
  return null;
}

function usage(meta: ResponseMeta) {
  return {
    prompt_tokens: meta.promptTokens,
    total_tokens: meta.promptTokens + meta.completionTokens,
    completion_tokens: meta.completionTokens,
    prompt_tokens_details: meta.promptTokensDetails ? { cached_tokens: meta.cachedTokens } : null,
  };
}

function chunk(meta: ResponseMeta, delta: Obj, finish: string | null = null, matched: string | null = null) {
  const choice: Obj = { index: 0, delta, logprobs: null, finish_reason: finish };
  if (finish !== null) choice.stop_reason = matched;
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    choices: [choice],
  };
}

function validate(body: Obj, options: SimulatorOptions): SimError | null {
  if (!('messages' in body)) return pydanticError('missing', 'messages', 'Field required', body);
  if (!Array.isArray(body.messages)) {
    return pydanticError('list_type', 'messages', 'Input should be a valid list', body.messages);
  }
  if ('stream' in body && body.stream !== null && typeof body.stream !== 'boolean') {
    return pydanticError('bool_parsing', 'stream', 'Input should be a valid boolean', body.stream);
  }
  for (const f of ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens']) {
    if (f in body && body[f] !== null && typeof body[f] !== 'number') {
      return pydanticError(
        jsonTypeName(body[f]) === 'string' ? 'float_parsing' : 'float_type',
        f,
        'Input should be a valid number',
        body[f],
      );
    }
  }
  const requested = body.model;
  const served = options.modelName ?? 'simulated-model';
  if (options.checkModel && typeof requested === 'string' && requested !== served) {
    return { status: 404, message: `The model \`${requested}\` does not exist.`, type: 'NotFoundError' };
  }
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const choice = body.tool_choice;
  if (typeof choice === 'string' && !['auto', 'none', 'required'].includes(choice)) {
    return pydanticError(
      'literal_error',
      'tool_choice',
      "Input should be 'none', 'auto' or 'required'",
      choice,
    );
  }
  if (choice !== undefined && choice !== null && choice !== 'none' && tools.length === 0) {
    return bad('When using `tool_choice`, `tools` must be set.');
  }
  if (isObj(choice)) {
    const name = isObj(choice.function) ? choice.function.name : undefined;
    const declared = tools.some((t) => isObj(t) && isObj(t.function) && t.function.name === name);
    if (!declared)
      return bad('The tool specified in `tool_choice` does not match any of the specified `tools`');
  }
  if (options.rejectRequired && choice === 'required') {
    return bad('tool_choice must either be a named tool, "auto", or "none".');
  }
  const messages = body.messages.filter(isObj);
  if (options.mistralToolNames) {
    const names: unknown[] = tools.map((t) => (isObj(t) && isObj(t.function) ? t.function.name : undefined));
    for (const m of messages)
      if (Array.isArray(m.tool_calls))
        for (const c of m.tool_calls) if (isObj(c) && isObj(c.function)) names.push(c.function.name);
    const refused = names.find((n) => typeof n === 'string' && !/^[a-zA-Z0-9_-]{1,64}$/.test(n));
    if (typeof refused === 'string')
      return bad(
        `Function name was ${refused} but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64.`,
      );
  }
  // A text-only model refuses any image (vllm-project/vllm#19144, studio-dots-ai/dots.ocr#61), and
  // any audio or video (vllm/entrypoints/chat_utils.py: image_url, input_audio, audio_url,
  // video_url): it is no multimodal model at all.
  if (
    options.vision === false &&
    messages.some(
      (m) => Array.isArray(m.content) && m.content.some((p) => isObj(p) && MEDIA_PARTS.has(String(p.type))),
    )
  )
    return bad(`${served} is not a multimodal model None`);
  for (const m of messages)
    if (Array.isArray(m.content))
      for (const p of m.content)
        if (isObj(p) && typeof p.type === 'string' && !VLLM_PART_TYPES.has(p.type))
          return bad(`Unknown part type: ${p.type}`);
  if (options.imageLimit !== undefined) {
    // --limit-mm-per-prompt '{"image": N}' (vllm/entrypoints/chat_utils.py, the item tracker).
    let images = 0;
    for (const m of messages)
      if (Array.isArray(m.content))
        for (const p of m.content) if (isObj(p) && p.type === 'image_url') images++;
    if (images > options.imageLimit)
      return bad(`At most ${options.imageLimit} image(s) may be provided in one prompt.`);
  }
  if (options.mistralRoleOrder)
    for (let i = 1; i < messages.length; i++) {
      const role = messages[i]!.role;
      if (messages[i - 1]!.role === 'tool' && role !== 'assistant' && role !== 'tool')
        return bad(`Unexpected role '${String(role)}' after role 'tool'`);
    }
  const fetchError = imageFetchError(messages, options);
  if (fetchError) return fetchError;
  if (options.vision !== false && messages.some(carriesUnidentifiableImage))
    return bad(`cannot identify image file <_io.BytesIO object at 0x7f${randomHex(10)}>`);
  if (options.toolMessageImages === false) {
    const index = firstToolMessageImage(messages);
    if (index >= 0)
      return {
        status: 500,
        type: 'InternalServerError',
        message: `Failed to apply prompt replacement for mm_items['image'][${index}]`,
      };
  }
  const argsError = historyArgumentsError(messages);
  if (argsError) return argsError;
  if (options.strictHistory) {
    const problem = strictHistoryProblem(messages);
    if (problem) return bad(problem);
  }
  return null;
}

/**
 * An inline image PIL cannot identify: vLLM loads each image_url with PIL's Image.open
 * (vllm/multimodal/media/image.py), and the connector turns PIL's UnidentifiedImageError into a
 * ValueError (media/connector.py, fetch_image_async), its chat preprocessing's 400 with PIL's words,
 * "cannot identify image file <_io.BytesIO object at 0x…>", naming no image. PIL has no SVG, HEIC
 * (without the pillow-heif plugin, which vLLM does not install) or PDF reader. Bytes of no known
 * format pass here (tests send placeholder bytes as PNGs); the real server refuses them too.
 */
function carriesUnidentifiableImage(m: Obj): boolean {
  if (!Array.isArray(m.content)) return false;
  return m.content.some((p) => {
    if (!isObj(p) || p.type !== 'image_url') return false;
    const url = isObj(p.image_url) ? p.image_url.url : p.image_url;
    if (typeof url !== 'string' || !url.startsWith('data:')) return false;
    const head = Buffer.from(url.slice(url.indexOf(',') + 1, url.indexOf(',') + 25), 'base64').toString(
      'latin1',
    );
    return (
      /^\s*<(svg|\?xml)/.test(head) ||
      head.startsWith('%PDF') ||
      /^ftyp(heic|heix|hevc|heim|heis|mif1)/.test(head.slice(4))
    );
  });
}

/**
 * The index, among the request's images in order, of the first image in a `tool` message, or -1.
 * vLLM counts the images it loaded (mm_items) and looks for each one's placeholder in the prompt
 * the chat template rendered; a template that renders no image of a tool message (Gemma 4's before
 * its tool template, vllm-project/vllm#41452; GLM-4.xV under the openai content format) leaves
 * that image without one, and the processor's assertion is a 500.
 */
function firstToolMessageImage(messages: Obj[]): number {
  let index = 0;
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (!isObj(p) || p.type !== 'image_url') continue;
      if (m.role === 'tool') return index;
      index++;
    }
  }
  return -1;
}

export const vllm: PersonalityImpl = {
  name: 'vllm',
  okHeaders(contentType) {
    const type =
      contentType === 'sse'
        ? 'text/event-stream; charset=utf-8'
        : contentType === 'text'
          ? 'text/plain; version=0.0.4; charset=utf-8'
          : 'application/json';
    return { server: 'uvicorn', 'content-type': type };
  },
  errorHeaders() {
    return { server: 'uvicorn', 'content-type': 'application/json' };
  },
  errorBody(err: SimError, options?: SimulatorOptions) {
    const type = err.type ?? TYPE_BY_STATUS[err.status] ?? 'InternalServerError';
    // vLLM before ~0.10 sent the error flat with object:"error"; newer versions nest it.
    if (options?.errorShape === 'legacy') {
      return { object: 'error', message: err.message, type, param: err.param ?? null, code: err.status };
    }
    return { error: { message: err.message, type, param: err.param ?? null, code: err.status } };
  },
  // vLLM's AuthenticationMiddleware guards /v1/* only, with its own bare body.
  guarded: (path) => path.startsWith('/v1'),
  unauthorized: () => ({ status: 401, body: { error: 'Unauthorized' } }),
  routeNotFound(knownPath) {
    // FastAPI's own answers: vLLM does not wrap them in its error shape.
    return knownPath
      ? { status: 405, body: { detail: 'Method Not Allowed' } }
      : { status: 404, body: { detail: 'Not Found' } };
  },
  parseBody(raw) {
    try {
      return { ok: true, value: JSON.parse(raw) };
    } catch (err) {
      return { ok: false, error: jsonDecodeError(raw, (err as Error).message) };
    }
  },
  validateChat: validate,
  completionId: () => `chatcmpl-${randomHex(32)}`,
  toolCallId: () => `chatcmpl-tool-${randomHex(32)}`,
  completion(gen: Generation, meta: ResponseMeta) {
    const toolCalls = gen.calls.map((c, i) => ({
      id: meta.toolCallIds[i],
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
    return {
      id: meta.id,
      object: 'chat.completion',
      created: meta.created,
      model: meta.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: gen.calls.length > 0 && gen.content === '' ? null : gen.content,
            refusal: null,
            annotations: null,
            audio: null,
            function_call: null,
            tool_calls: toolCalls,
            [meta.reasoningField]: gen.reasoning,
          },
          logprobs:
            meta.logprobs === null
              ? null
              : contentLogprobs(gen.content, { top: meta.logprobs, withIds: false }),
          finish_reason: gen.finish,
          stop_reason: gen.stopMatched ?? null,
          token_ids: null,
        },
      ],
      service_tier: null,
      system_fingerprint: null,
      usage: usage(meta),
      prompt_logprobs:
        meta.promptLogprobs == null ? null : promptLogprobs(meta.promptTokens, meta.promptLogprobs),
      prompt_token_ids: null,
      kv_transfer_params: null,
    };
  },
  chunks(gen: Generation, meta: ResponseMeta) {
    const out: unknown[] = [chunk(meta, { role: 'assistant', content: '' })];
    if (gen.reasoning)
      for (const p of splitTokens(gen.reasoning)) out.push(chunk(meta, { [meta.reasoningField]: p }));
    for (const p of splitTokens(gen.content)) out.push(chunk(meta, { content: p }));
    gen.calls.forEach((call, index) => {
      out.push(
        chunk(meta, {
          tool_calls: [
            {
              id: meta.toolCallIds[index],
              type: 'function',
              index,
              function: { name: call.name, arguments: '' },
            },
          ],
        }),
      );
      for (const p of splitTokens(call.arguments))
        out.push(chunk(meta, { tool_calls: [{ index, function: { arguments: p } }] }));
    });
    if (gen.midStreamError) return out;
    out.push(chunk(meta, {}, gen.finish, gen.stopMatched ?? null));
    if (meta.includeUsage) {
      out.push({
        id: meta.id,
        object: 'chat.completion.chunk',
        created: meta.created,
        model: meta.model,
        choices: [],
        usage: usage(meta),
      });
    }
    return out;
  },
  midStreamError(err) {
    // vLLM's generator yields the error event and still ends the stream with [DONE].
    return { event: this.errorBody({ ...err, type: err.type ?? 'InternalServerError' }), done: true };
  },
  modelName: (options) => options.modelName ?? 'simulated-model',
  models(options, created) {
    const id = this.modelName(options);
    return {
      object: 'list',
      data: [
        {
          id,
          object: 'model',
          created,
          owned_by: 'vllm',
          root: id,
          parent: null,
          max_model_len: options.maxModelLen ?? 32768,
          permission: [
            {
              id: `modelperm-${randomHex(32)}`,
              object: 'model_permission',
              created,
              allow_create_engine: false,
              allow_sampling: true,
              allow_logprobs: true,
              allow_search_indices: false,
              allow_view: true,
              allow_fine_tuning: false,
              organization: '*',
              group: null,
              is_blocking: false,
            },
          ],
        },
      ],
    };
  },
  metrics(options: SimulatorOptions, stats: SimStats) {
    const model = this.modelName(options);
    const label = `{engine="0",model_name="${model}"}`;
    const lines = [
      '# HELP vllm:num_requests_running Number of requests in model execution batches.',
      '# TYPE vllm:num_requests_running gauge',
      `vllm:num_requests_running${label} ${stats.running}`,
      '# HELP vllm:num_requests_waiting Number of requests waiting to be processed.',
      '# TYPE vllm:num_requests_waiting gauge',
      `vllm:num_requests_waiting${label} 0`,
      '# HELP vllm:prompt_tokens_total Number of prefill tokens processed.',
      '# TYPE vllm:prompt_tokens_total counter',
      `vllm:prompt_tokens_total${label} ${stats.promptTokens}`,
      '# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.',
      '# TYPE vllm:prefix_cache_queries_total counter',
      `vllm:prefix_cache_queries_total${label} ${stats.promptTokens}`,
      '# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.',
      '# TYPE vllm:prefix_cache_hits_total counter',
      `vllm:prefix_cache_hits_total${label} ${stats.cachedTokens}`,
      '# HELP vllm:generation_tokens_total Number of generation tokens processed.',
      '# TYPE vllm:generation_tokens_total counter',
      `vllm:generation_tokens_total${label} ${stats.generationTokens}`,
      ...histogram(
        'vllm:time_to_first_token_seconds',
        'Histogram of time to first token in seconds.',
        label,
        stats.ttftSeconds,
      ),
      ...histogram(
        'vllm:e2e_request_latency_seconds',
        'Histogram of e2e request latency in seconds.',
        label,
        stats.e2eSeconds,
      ),
    ];
    return { ok: true, text: `${lines.join('\n')}\n` };
  },
  health: () => ({ status: 200, body: null }),
};

const BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

function histogram(name: string, help: string, label: string, values: number[]): string[] {
  const inner = label.slice(1, -1);
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`];
  for (const le of BUCKETS) {
    lines.push(`${name}_bucket{${inner},le="${le}"} ${values.filter((v) => v <= le).length}`);
  }
  lines.push(`${name}_bucket{${inner},le="+Inf"} ${values.length}`);
  lines.push(`${name}_count${label} ${values.length}`);
  lines.push(`${name}_sum${label} ${values.reduce((a, b) => a + b, 0)}`);
  return lines;
}

/**
 * The llama-server personality: llama.cpp's OpenAI-compatible wire format, key order included
 * (build b9928). Reference recordings: /work/shared/wire/llama-server/.
 */
import type { Generation } from './generate.js';
import { validateLlamaChat } from './llama-server-validate.js';
import { contentLogprobs } from './logprobs.js';
import { parseLikeNlohmann } from './nlohmann-json.js';
import type { PersonalityImpl, ResponseMeta, SimError, SimStats } from './personality.js';
import { randomAlnum, splitTokens } from './tokens.js';
import type { SimulatorOptions } from './types.js';

const FINGERPRINT = 'b9928-81ff7ab';

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  500: 'server_error',
  501: 'not_supported_error',
  503: 'unavailable_error',
};

function timings(meta: ResponseMeta) {
  // prompt_n counts only what was evaluated: the prompt less what the cache served (recordings:
  // cache_n 177 + prompt_n 1 = prompt_tokens 178).
  const evaluated = Math.max(1, meta.promptTokens - meta.cachedTokens);
  const promptMs = Math.max(0.5, evaluated * 0.02);
  const predictedMs = Math.max(0.5, meta.completionTokens * 0.4);
  return {
    cache_n: meta.cachedTokens,
    prompt_n: evaluated,
    prompt_ms: promptMs,
    prompt_per_token_ms: promptMs / evaluated,
    prompt_per_second: (evaluated * 1000) / promptMs,
    predicted_n: meta.completionTokens,
    predicted_ms: predictedMs,
    predicted_per_token_ms: predictedMs / Math.max(1, meta.completionTokens),
    predicted_per_second: (meta.completionTokens * 1000) / predictedMs,
  };
}

function usage(meta: ResponseMeta) {
  return {
    completion_tokens: meta.completionTokens,
    prompt_tokens: meta.promptTokens,
    total_tokens: meta.promptTokens + meta.completionTokens,
    prompt_tokens_details: { cached_tokens: meta.cachedTokens },
  };
}

function chunk(meta: ResponseMeta, delta: Record<string, unknown>, finish: string | null = null) {
  return {
    choices: [{ finish_reason: finish, index: 0, delta }],
    created: meta.created,
    id: meta.id,
    model: meta.model,
    system_fingerprint: FINGERPRINT,
    object: 'chat.completion.chunk',
  };
}

function cors(origin: string | undefined): Record<string, string> {
  return { 'Access-Control-Allow-Origin': origin ?? '' };
}

export const llamaServer: PersonalityImpl = {
  name: 'llama-server',
  okHeaders(contentType, origin) {
    const type =
      contentType === 'sse'
        ? 'text/event-stream'
        : contentType === 'text'
          ? 'text/plain; version=0.0.4'
          : 'application/json; charset=utf-8';
    const headers: Record<string, string> = {
      'Keep-Alive': 'timeout=5, max=100',
      'Content-Type': type,
      Server: 'llama.cpp',
      ...cors(origin),
    };
    if (contentType === 'sse') headers['X-Accel-Buffering'] = 'no';
    return headers;
  },
  errorHeaders(origin) {
    // Every 4xx/5xx closes the connection: a proxy's pooled socket dies after each error.
    return {
      Connection: 'close',
      'Content-Type': 'application/json; charset=utf-8',
      Server: 'llama.cpp',
      ...cors(origin),
    };
  },
  errorBody(err: SimError) {
    const type = err.type ?? TYPE_BY_STATUS[err.status] ?? 'server_error';
    // 401 and 404 bodies are built by a different code path, with another key order.
    if (err.status === 401 || err.status === 404)
      return { error: { message: err.message, type, code: err.status } };
    // server_task_result_error::to_json: the overflow's counts after code, message and type
    // (its JSON keeps insertion order).
    return { error: { code: err.status, message: err.message, type, ...err.counts } };
  },
  // /health and /v1/models stay public with --api-key; everything else, unknown paths included, needs the key.
  guarded: (path) => path !== '/health' && path !== '/v1/models',
  unauthorized() {
    return { status: 401, body: this.errorBody({ status: 401, message: 'Invalid API Key' }) };
  },
  routeNotFound() {
    // A GET on a POST-only route is also 404 here, not 405.
    return { status: 404, body: this.errorBody({ status: 404, message: 'File Not Found' }) };
  },
  parseBody(raw) {
    const parsed = parseLikeNlohmann(raw);
    return parsed.ok ? parsed : { ok: false, error: { status: 500, message: parsed.message } };
  },
  validateChat: validateLlamaChat,
  completionId: () => `chatcmpl-${randomAlnum(32)}`,
  toolCallId: () => randomAlnum(32),
  completion(gen: Generation, meta: ResponseMeta) {
    const message: Record<string, unknown> = { role: 'assistant', content: gen.content };
    if (gen.reasoning !== null) message.reasoning_content = gen.reasoning;
    if (gen.calls.length > 0) {
      message.tool_calls = gen.calls.map((c, i) => ({
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
        id: meta.toolCallIds[i],
      }));
    }
    const choice: Record<string, unknown> = { finish_reason: gen.finish, index: 0, message };
    if (meta.logprobs !== null)
      choice.logprobs = contentLogprobs(gen.content, { top: meta.logprobs, withIds: true });
    return {
      choices: [choice],
      created: meta.created,
      model: meta.model,
      system_fingerprint: FINGERPRINT,
      object: 'chat.completion',
      usage: usage(meta),
      id: meta.id,
      timings: timings(meta),
    };
  },
  chunks(gen: Generation, meta: ResponseMeta) {
    const out: unknown[] = [chunk(meta, { role: 'assistant', content: null })];
    if (gen.reasoning)
      for (const p of splitTokens(gen.reasoning)) out.push(chunk(meta, { reasoning_content: p }));
    for (const p of splitTokens(gen.content)) out.push(chunk(meta, { content: p }));
    gen.calls.forEach((call, index) => {
      // The first delta of a call already carries the first argument fragment.
      const pieces = splitTokens(call.arguments);
      out.push(
        chunk(meta, {
          tool_calls: [
            {
              index,
              id: meta.toolCallIds[index],
              type: 'function',
              function: { name: call.name, arguments: pieces[0] ?? '' },
            },
          ],
        }),
      );
      for (const p of pieces.slice(1))
        out.push(chunk(meta, { tool_calls: [{ index, function: { arguments: p } }] }));
    });
    if (gen.midStreamError) return out;
    const finish: Record<string, unknown> = chunk(meta, {}, gen.finish);
    if (meta.includeUsage) {
      out.push(finish);
      out.push({ ...chunk(meta, {}), choices: [], usage: usage(meta), timings: timings(meta) });
    } else {
      out.push({ ...finish, timings: timings(meta) });
    }
    return out;
  },
  midStreamError(err) {
    return { event: this.errorBody(err), done: false };
  },
  modelName: (options) => options.modelName ?? 'simulated-model.gguf',
  props(options) {
    // The fields toolproof reads, as a real llama-server b9928 sends them (/work/shared/wire:
    // get_props): the context size, the modalities (--mmproj gives vision, audio or both) and the template.
    const name = this.modelName(options);
    return {
      default_generation_settings: { n_ctx: options.nCtx ?? 4096 },
      total_slots: 1,
      model_alias: name,
      model_path: name,
      modalities: { vision: options.vision === true, video: false, audio: options.audio === true },
      endpoint_slots: true,
      endpoint_props: false,
      endpoint_metrics: options.metrics !== false,
      chat_template: '{% for message in messages %}{{ message.content }}{% endfor %}',
      build_info: 'b9928-simulated',
      is_sleeping: false,
    };
  },
  models(options, created) {
    const name = this.modelName(options);
    return {
      models: [
        {
          name,
          model: name,
          modified_at: '',
          size: '',
          digest: '',
          type: 'model',
          description: '',
          tags: [''],
          capabilities: ['completion'],
          parameters: '',
          details: {
            parent_model: '',
            format: 'gguf',
            family: '',
            families: [''],
            parameter_size: '',
            quantization_level: '',
          },
        },
      ],
      object: 'list',
      data: [
        {
          id: name,
          aliases: [name],
          tags: [],
          object: 'model',
          created,
          owned_by: 'llamacpp',
          meta: {
            vocab_type: 1,
            n_vocab: 32000,
            n_ctx: options.nCtx ?? 4096,
            n_ctx_train: options.nCtx ?? 4096,
            n_embd: 8,
            n_params: 513048,
            size: 1026144,
            ftype: 'F16',
          },
        },
      ],
    };
  },
  metrics(options: SimulatorOptions, stats: SimStats) {
    if (options.metrics === false) {
      return {
        ok: false,
        error: {
          status: 501,
          message: 'This server does not support metrics endpoint. Start it with `--metrics`',
        },
      };
    }
    const rows: Array<[string, string, string, number]> = [
      ['prompt_tokens_total', 'Number of prompt tokens processed.', 'counter', stats.promptTokens],
      ['prompt_seconds_total', 'Prompt process time', 'counter', 0],
      ['tokens_predicted_total', 'Number of generation tokens processed.', 'counter', stats.generationTokens],
      ['tokens_predicted_seconds_total', 'Predict process time', 'counter', 0],
      ['n_decode_total', 'Total number of llama_decode() calls', 'counter', stats.requests],
      ['n_tokens_max', 'Largest observed n_tokens.', 'counter', 0],
      ['prompt_tokens_seconds', 'Average prompt throughput in tokens/s.', 'gauge', 0],
      ['predicted_tokens_seconds', 'Average generation throughput in tokens/s.', 'gauge', 0],
      ['requests_processing', 'Number of requests processing.', 'gauge', stats.running],
      ['requests_deferred', 'Number of requests deferred.', 'gauge', 0],
      ['n_busy_slots_per_decode', 'Average number of busy slots per llama_decode() call', 'gauge', 0],
    ];
    const text = rows
      .map(
        ([n, help, type, v]) =>
          `# HELP llamacpp:${n} ${help}\n# TYPE llamacpp:${n} ${type}\nllamacpp:${n} ${v}\n`,
      )
      .join('');
    return { ok: true, text };
  },
  health: () => ({ status: 200, body: { status: 'ok' } }),
};

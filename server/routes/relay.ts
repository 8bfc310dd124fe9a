/**
 * /v1/completions and /v1/embeddings: passed through untouched (body bytes in, status and
 * body bytes out), with the same routing, auth, timeouts, abort and error shape as chat.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { ToolproofError } from '../../protocol/errors.js';
import { keepSourceText, stringifyJson } from '../../protocol/lossless-json.js';
import { RequestAbort } from '../abort.js';
import type { Usage } from '../../protocol/openai.js';
import { bodyErrorKind, encodedBody, readText, readUpstreamBytes } from '../chat/attempt.js';
import { usageFromRaw } from '../chat/json-driver.js';
import {
  cutOff,
  dropAfterDone,
  eventAllowance,
  FINISH_SET,
  pastMaxTokens,
  QuietClock,
  stalled,
} from '../chat/stream-read.js';
import type { AppState } from '../app-state.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import { chatErrorEvent } from '../front-doors/chat/errors.js';
import { admissionOwner, allowsModel, countAgainstKey, forbiddenModel } from '../keys.js';
import { priorityOf } from '../priority.js';
import { resolveRoute } from '../routing.js';
import { SSE_DONE } from '../sse.js';
import { SseDoneScan } from '../sse-done.js';
import { cutWhenUnread, untilDrainOrClose } from '../drain.js';
import { toCutError } from '../upstream.js';
import { completionBody, embeddingBody } from './schemas.js';
import { windowOf } from '../context-window.js';

/** The stream's last characters kept: its usage chunk (a few hundred bytes) and [DONE] fit. */
const USAGE_TAIL = 2048;
const USAGE_KEY = Buffer.from('"usage"');

/**
 * A relayed body's usage, as the upstream reported it: vLLM writes it last, llama-server's
 * embeddings before their data. Bounded: only the 1 KB from the key on is decoded, never the
 * vectors after it.
 */
function usageIn(body: Buffer): Usage | undefined {
  const key = body.lastIndexOf(USAGE_KEY);
  return key < 0 ? undefined : usageFromRaw(body.toString('latin1', key, Math.min(body.length, key + 1024)));
}

export function registerRelayRoutes(app: FastifyInstance, state: AppState): void {
  const relay = (path: '/completions' | '/embeddings', routeLabel: string) =>
    async function handler(
      request: import('fastify').FastifyRequest,
      reply: import('fastify').FastifyReply,
    ): Promise<unknown> {
      const body = request.body as { model?: unknown; stream?: unknown };
      const key = request.tpKey;
      if (key && !allowsModel(key, typeof body.model === 'string' ? body.model : '')) {
        state.metrics.keyRefusals.labels(key.name, 'model').inc();
        throw forbiddenModel(key, String(body.model ?? ''));
      }
      const route = resolveRoute(state.config, state.upstreams, body.model, state.modelLabels, key);
      const controller = new RequestAbort();
      request.tpAbort = controller;
      const waiting = countAgainstKey(request, state.keyLimits, state.metrics, controller);
      if (waiting) await waiting;
      request.tp = {
        model: route.name,
        upstream: route.client.label,
        stream: body.stream === true,
        api: 'passthrough',
      };
      // A renamed model is the one change: the client's numbers and key order stay as written.
      if (route.upstreamModel && request.rawBody) keepSourceText(body, request.rawBody);
      const payload = route.upstreamModel
        ? stringifyJson({ ...body, model: route.upstreamModel }, body)
        : request.rawBody;
      // Tracing on: a CLIENT span for the call (the GenAI inference or embeddings span, with its
      // tokens), under the server span; its traceparent goes upstream, so the backend's span nests
      // under it.
      const span = request.tpSpan;
      const upstreamModel = route.upstreamModel ?? (typeof body.model === 'string' ? body.model : '');
      const headers: Record<string, string> = span
        ? span.relay(
            path === '/completions' ? 'text_completion' : 'embeddings',
            upstreamModel,
            route.client.origin,
            body,
            { 'x-request-id': request.id },
          )
        : { 'x-request-id': request.id };
      const started = performance.now();
      // Its failures are counted as a chat attempt's are (toolproof_upstream_errors_total).
      const failed = (kind: string) =>
        state.metrics.upstreamErrors.labels(route.name, route.client.label, kind).inc();
      const res = await route.client
        .request({
          method: 'POST',
          path,
          body: payload ?? JSON.stringify(body),
          headers,
          signal: controller,
          // The upstream's slots are shared with chat: the same admission queue and classes.
          admission: {
            cls: priorityOf({
              headers: request.headers,
              model: typeof body.model === 'string' ? body.model : '',
              ...(route.priority ? { route: route.priority } : {}),
              ...(key?.priority ? { key: key.priority } : {}),
            }),
            owner: admissionOwner(request, key),
            ...(key ? { key: { waits: state.keyWaits, entry: key, reached: false } } : {}),
            queued: () => {},
          },
        })
        .catch((err: unknown) => {
          span?.attemptThrew(err, controller.aborted);
          // The client leaving, or toolproof's own admission queue refusing, is no upstream failure.
          const code = (err as ToolproofError).code;
          if (
            !controller.aborted &&
            code !== 'TP_ERR_QUEUE_FULL' &&
            code !== 'TP_ERR_QUEUE_TIMEOUT' &&
            code !== 'TP_ERR_UNAUTHORIZED'
          )
            failed(code === 'TP_ERR_UPSTREAM_TIMEOUT' ? 'timeout' : 'unreachable');
          throw err;
        });
      state.metrics.hot
        .upstreamDuration(route.name, routeLabel, route.client.label)
        .observe((performance.now() - started) / 1000);
      span?.attemptOpened(res);
      if (res.status >= 400) {
        failed(res.status >= 500 ? 'status_5xx' : 'status_4xx');
        const parsed = parseUpstreamBody(await readText(res));
        span?.attemptRejected(res.status, parsed);
        throw fromUpstreamError(res.status, parsed, route.client.label, res.headers);
      }
      const encoded = encodedBody(res, route.client.label);
      if (encoded) {
        failed('bad_response');
        throw encoded;
      }
      const type = String(res.headers['content-type'] ?? 'application/json');
      if (!type.toLowerCase().includes('text/event-stream')) {
        // Whole, or a 504 when it stalls and a 502 when it is cut: never a torn body sent as a 200.
        let bytes: Buffer;
        try {
          bytes = await readUpstreamBytes(res, route.client.label);
        } catch (err) {
          span?.attemptRead({ kind: 'failed', error: err as ToolproofError });
          // Cut, stalled or too large after its headers: counted as the chat door counts it.
          if (err instanceof ToolproofError && !controller.aborted) failed(bodyErrorKind(err));
          throw err;
        }
        const usage = usageIn(bytes);
        if (usage) request.tp.usage = usage;
        span?.attemptRead({ kind: 'relayed', ...(usage ? { usage } : {}) });
        const sent = reply.code(res.status).type(type).send(bytes);
        // A client that never reads it is cut as gone, as a stream's is (drain.ts).
        cutWhenUnread(reply.raw, state.config.clientTimeouts.requestMs);
        return sent;
      }
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-request-id': request.id,
      });
      let tail = '';
      // A choice's finish_reason was read (looked for in the tail and the read: one cut across
      // two reads is found): without it or [DONE], a stream that ends was cut off.
      let finished = false;
      const reads = res.body[Symbol.asyncIterator]();
      // [DONE] ends the stream, as on the front doors: an upstream that kept its connection open
      // after it (silent, or sending on, in the same read too) held the client's stream open.
      const scan = new SseDoneScan();
      // Comments and blank lines alone are no progress (TOOLPROOF_IDLE_TIMEOUT_MS, as on the front
      // doors): an upstream that only pings held the client's stream and its admission slot for good.
      const quiet = new QuietClock(route.client.idleMs);
      // Events past what the client's max_tokens, or the model's window, allows: the upstream does not
      // stop (eventAllowance).
      const allowance = eventAllowance(body as Record<string, unknown>, windowOf(route));
      try {
        for (let read = await reads.next(); !read.done; read = await reads.next()) {
          let buf = read.value as Buffer;
          const events = scan.events;
          const end = scan.push(buf);
          if (!scan.done && !quiet.tick(scan.events - events)) {
            res.body.destroy();
            throw stalled(route.client.label);
          }
          if (!scan.done && scan.events > allowance.events) {
            res.body.destroy();
            throw pastMaxTokens(route.client.label, allowance);
          }
          if (end >= 0 && end < buf.length) buf = buf.subarray(0, end);
          // The end of the stream: the usage chunk of stream_options.include_usage.
          const seen = tail + buf.toString('latin1');
          if (!finished && FINISH_SET.test(seen)) finished = true;
          tail = seen.slice(-USAGE_TAIL);
          // A full socket buffer waits for drain, or for close: a client that left never drains.
          if (!reply.raw.write(buf))
            await untilDrainOrClose(reply.raw, state.config.clientTimeouts.requestMs);
          if (reply.raw.destroyed) {
            res.body.destroy();
            break;
          }
          if (scan.done) {
            dropAfterDone(res);
            break;
          }
        }
        // A stream that ended without its [DONE] gets one (one cut short of its blank line: as it
        // came), when a finish_reason said the answer was whole; cut off before, the error event.
        if (!reply.raw.destroyed && !scan.done && !tail.slice(-32).includes('[DONE]')) {
          if (!finished) throw cutOff(route.client.label);
          reply.raw.write(SSE_DONE);
        }
        const usage = usageFromRaw(tail);
        if (usage) request.tp.usage = usage;
        // A client that left ends the span as client_aborted (the server span's end closes it).
        if (!reply.raw.destroyed) span?.attemptRead({ kind: 'relayed', ...(usage ? { usage } : {}) });
      } catch (err) {
        if (!controller.aborted && !reply.raw.destroyed) {
          failed('mid_stream');
          const mapped = toCutError(err, route.client.label, 'the stream');
          const e =
            mapped instanceof ToolproofError
              ? mapped
              : new ToolproofError('TP_ERR_UPSTREAM_CUT_OFF', { cause: err });
          span?.attemptRead({ kind: 'failed', error: e });
          reply.raw.write(`\n\n${chatErrorEvent(e)}`);
        }
      } finally {
        if (!reply.raw.writableEnded) reply.raw.end();
      }
      return reply;
    };

  app.post(
    '/v1/completions',
    { schema: { tags: ['openai'], summary: 'Text completion, passed through.', body: completionBody } },
    relay('/completions', 'completions'),
  );
  app.post(
    '/v1/embeddings',
    { schema: { tags: ['openai'], summary: 'Embeddings, passed through.', body: embeddingBody } },
    relay('/embeddings', 'embeddings'),
  );
}

/**
 * A loopback OTLP/HTTP receiver for tracing tests: accepts POST /v1/traces in the JSON protocol
 * (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps every span, flattened. Requests in another
 * encoding are counted (protobuf: `raw`) but not decoded. Each POST is answered 200 with an empty
 * response in the request's encoding (`{}`, or no bytes for protobuf), unless `respond` says
 * otherwise for it (a 503 with retry-after, to make the exporter retry).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; timeNs: bigint; attributes: Record<string, unknown> }>;
  status: { code?: number; message?: string };
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  origin: string;
  spans: ReceivedSpan[];
  /** Every POST as received: path, content type, size and body. */
  raw: Array<{ path: string; contentType: string; bytes: number; body: Buffer }>;
  close(): Promise<void>;
}

type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};

function anyValue(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(anyValue);
  return undefined;
}

function attributesOf(list: Array<{ key: string; value: AnyValue }> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) out[a.key] = anyValue(a.value);
  return out;
}

export interface OtlpReceiverOptions {
  /**
   * The answer to the POST at `index` (0 for the first, counted as `raw` is), or undefined for
   * the usual 200.
   */
  respond?: (index: number) => { status: number; headers?: Record<string, string> } | undefined;
}

export async function otlpReceiver(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: OtlpReceiver['raw'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers['content-type'] ?? '');
      raw.push({ path: req.url ?? '', contentType, bytes: body.length, body });
      if (req.method === 'POST' && req.url === '/v1/traces' && contentType.startsWith('application/json')) {
        const data = JSON.parse(body.toString('utf8')) as {
          resourceSpans?: Array<{
            resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
            scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
          }>;
        };
        for (const rs of data.resourceSpans ?? []) {
          const resource = attributesOf(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              spans.push({
                traceId: String(s.traceId),
                spanId: String(s.spanId),
                parentSpanId: String(s.parentSpanId ?? ''),
                name: String(s.name),
                kind: Number(s.kind),
                startNs: BigInt(String(s.startTimeUnixNano)),
                endNs: BigInt(String(s.endTimeUnixNano)),
                attributes: attributesOf(s.attributes as Array<{ key: string; value: AnyValue }>),
                events: ((s.events ?? []) as Array<Record<string, unknown>>).map((e) => ({
                  name: String(e.name),
                  timeNs: BigInt(String(e.timeUnixNano)),
                  attributes: attributesOf(e.attributes as Array<{ key: string; value: AnyValue }>),
                })),
                status: (s.status ?? {}) as ReceivedSpan['status'],
                resource,
              });
        }
      }
      const answer = options.respond?.(raw.length - 1);
      if (answer) {
        res.writeHead(answer.status, answer.headers).end();
        return;
      }
      if (contentType.startsWith('application/json')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        // An empty ExportTraceServiceResponse is no bytes at all in protobuf.
        res.writeHead(200, { 'content-type': contentType || 'application/x-protobuf' }).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    raw,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

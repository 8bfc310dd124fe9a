/**
 * The benches' OTLP/HTTP sink, in the load generator's process: it drains each export unread
 * (its CPU is the load generator's, not toolproof's) and counts the exports and their bytes.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpSink {
  /** `http://127.0.0.1:PORT`, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  origin: string;
  port: number;
  /** Export requests received so far. */
  exports(): number;
  /** Their body bytes so far. */
  bytes(): number;
  close(): void;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    exports++;
    req.on('data', (d: Buffer) => {
      bytes += d.length;
    });
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    exports: () => exports,
    bytes: () => bytes,
    close: () => server.close(),
  };
}

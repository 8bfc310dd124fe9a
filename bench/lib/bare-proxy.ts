/**
 * A bare pass-through proxy, the floor any Node proxy pays on this machine: node:http server,
 * body read as a Buffer, forwarded with an undici Pool (keep-alive) to the fake upstream, the
 * answer piped back (status, content-type, body). No JSON parsing, no validation, no logging.
 * Started by bench/run.ts with --baseline, as its own child process (so its CPU time can be read
 * like toolproof's):
 *
 *   node --import tsx bench/lib/bare-proxy.ts <upstream origin>
 *
 * Prints `PORT <n>` on stdout once it listens on 127.0.0.1.
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { serveChild } from './child-server.js';

const upstream = process.argv[2];
if (!upstream) {
  process.stderr.write('usage: bare-proxy.ts <upstream origin, e.g. http://127.0.0.1:9000>\n');
  process.exit(2);
}
const pool = new Pool(upstream, { pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    pool
      .request({
        method: 'POST',
        path: req.url ?? '/',
        headers: { 'content-type': 'application/json' },
        body,
      })
      .then(async (up) => {
        const type = up.headers['content-type'];
        res.writeHead(up.statusCode, typeof type === 'string' ? { 'content-type': type } : {});
        for await (const chunk of up.body) res.write(chunk);
        res.end();
      })
      .catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (err as Error).message } }));
      });
  });
});
serveChild(server, () => pool.close());

/**
 * The bare Node hop: node:http in, node:http out, bodies piped both ways, nothing parsed, one
 * keep-alive agent. It is the least any Node process in the path costs (two sockets, the HTTP
 * parser, chunked encoding), measured in every run next to direct and toolproof, so "toolproof vs
 * the hop" is what toolproof's own work costs. Run as a child process by bench/run.ts:
 *
 *   node --import tsx bench/lib/node-hop.ts <upstream origin> [<more origins>...]
 *
 * With several origins it is a plain round-robin balancer (bench/prefix-cache.ts: what replicas
 * see without affinity).
 *
 * Prints `PORT <n>` on stdout once it listens on 127.0.0.1.
 */
import { Agent, createServer, request } from 'node:http';
import { serveChild } from './child-server.js';

const upstream = process.argv[2];
if (!upstream) {
  process.stderr.write('usage: node-hop.ts <upstream origin, e.g. http://127.0.0.1:9000>\n');
  process.exit(2);
}
const targets = process.argv.slice(2).map((u) => new URL(u));
let next = 0;
const agent = new Agent({ keepAlive: true, keepAliveMsecs: 60_000, maxSockets: Number.POSITIVE_INFINITY });

const server = createServer((req, res) => {
  const target = targets[next++ % targets.length]!;
  const up = request(
    {
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
      agent,
    },
    (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    },
  );
  up.on('error', (err) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: err.message } }));
  });
  // A client that goes away cancels the upstream request (held streams in the memory probe).
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  req.pipe(up);
});
serveChild(server);

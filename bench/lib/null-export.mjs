/**
 * A preload (`NODE_OPTIONS=--import=<this file>`) for a traced toolproof whose OTLP exports never
 * reach a socket: node:http's `request` answers a POST to `.../v1/traces` at once with an empty
 * 200 (the exporter's own code, its batch and its serialization run as before; node's HTTP
 * client, the socket, its timers and the response's parsing do not). bench/tracing-ab.ts
 * `--variant=nul:NODE_OPTIONS=--import=$PWD/bench/lib/null-export.mjs` against `on`: what the
 * export's HTTP costs the process, everything included (with --cpu-prof: node's net and http
 * frames that rise in a traced process and not in this one). `NULL_EXPORT_SAY=1`: the count of
 * exports answered so, said at exit.
 */
import http from 'node:http';
import { syncBuiltinESMExports } from 'node:module';
import { PassThrough, Writable } from 'node:stream';

const real = http.request;
let posts = 0;

http.request = function request(...args) {
  const [url, options, callback] = args;
  const href = String(typeof url === 'string' ? url : (url?.href ?? url?.path ?? ''));
  // Every export, or (NULL_EXPORT_MARKED=1) only those whose URL says null=1: one app of a twin
  // (bench/tracing-twin.ts --before with a copy of the build whose endpoint carries the mark).
  const marked = process.env.NULL_EXPORT_MARKED === '1';
  if (!href.includes('/v1/traces') || (marked && !href.includes('null=1'))) return real.apply(this, args);
  const cb = typeof options === 'function' ? options : callback;
  const req = new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
    final(done) {
      done();
      posts++;
      setImmediate(() => {
        const res = new PassThrough();
        res.statusCode = 200;
        res.statusMessage = 'OK';
        res.headers = {};
        cb?.(res);
        res.end();
      });
    },
  });
  req.setTimeout = () => req;
  req.setHeader = () => {};
  return req;
};
syncBuiltinESMExports();
process.on('exit', () => {
  if (process.env.NULL_EXPORT_SAY) console.error(`null-export: ${posts} exports answered`);
});

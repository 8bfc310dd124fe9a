/**
 * A forwarding proxy's handler for the tests that put a recorder or a slow door in front of a
 * real server: the request goes to `target` (an origin) as it came, method, path and headers, and
 * the answer streams back as it comes. A failed hop destroys the client's socket, as a dead proxy
 * would.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';

/**
 * `body`, when given, is sent in place of the request's own stream (a recorder that read it
 * first); otherwise the request is piped through.
 */
export function forwardTo(
  target: string,
): (req: IncomingMessage, res: ServerResponse, body?: Buffer) => void {
  return (req, res, body) => {
    const out = httpRequest(
      `${target}${req.url ?? ''}`,
      { method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    if (body) out.end(body);
    else req.pipe(out);
  };
}

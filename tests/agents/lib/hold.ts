/**
 * Another client holding what the agent needs: a request of the same key (or to the same
 * upstream) that stays in flight until the test lets it go. The hop sits between toolproof and
 * the simulator: a chat request for the model HOLD_MODEL waits there for release() and is then
 * answered; everything else goes on to the simulator as it came. Both models share the hop's
 * upstream, so the holder takes a slot of the agent's key and of the upstream's admission gate.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { loadConfig } from '../../../server/config.js';
import { forwardTo } from '../../support/forward.js';
import { SUITE_KEY } from './plan.js';
import { UPSTREAM_MODEL } from './stack.js';

export const HOLD_MODEL = 'holder';

export interface Hold {
  /** The hop's /v1 URL: toolproof's upstream for the agent's model and for HOLD_MODEL. */
  url: string;
  /** Where the rest goes: the simulator's /v1 URL (known once the case's servers start). */
  forwardTo(simUrl: string): void;
  /** Resolves once a held request reached the hop (it holds its slots from then). */
  held: Promise<void>;
  /** Answers the held requests (and any later one at once). */
  release(): void;
  close(): Promise<void>;
}

const ANSWER = JSON.stringify({
  id: 'chatcmpl-holder',
  object: 'chat.completion',
  created: 0,
  model: HOLD_MODEL,
  choices: [{ index: 0, message: { role: 'assistant', content: 'held' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

/** A hop in front of the simulator (forwardTo names it). */
export async function startHold(): Promise<Hold> {
  let forward: ReturnType<typeof forwardTo> = (_req, res) => {
    res.writeHead(502);
    res.end();
  };
  let released = false;
  const waiting: Array<() => void> = [];
  let onHeld: () => void = () => {};
  const held = new Promise<void>((r) => {
    onHeld = r;
  });
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(parts);
      let model: unknown;
      try {
        model = (JSON.parse(raw.toString('utf8')) as { model?: unknown }).model;
      } catch {
        // not JSON: forwarded
      }
      if (model !== HOLD_MODEL) return forward(req, res, raw);
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(ANSWER);
      };
      onHeld();
      if (released) answer();
      else waiting.push(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const release = () => {
    released = true;
    for (const answer of waiting.splice(0)) answer();
  };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    forwardTo(simUrl) {
      forward = forwardTo(simUrl.replace(/\/v1$/, ''));
    },
    held,
    release,
    async close() {
      release();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** toolproof's YAML for a run behind the hop: the suite's key with `key`'s limits, `more` merged in. */
export function holdConfig(
  hopUrl: string,
  key: Record<string, unknown>,
  more: Record<string, unknown> = {},
): Parameters<typeof loadConfig>[1] {
  return {
    keys: [{ name: 'agent', key: SUITE_KEY, ...key }],
    models: { [UPSTREAM_MODEL]: { upstream: hopUrl }, [HOLD_MODEL]: { upstream: hopUrl } },
    ...more,
  };
}

/** Sends the holder's request to toolproof at `origin` with the suite's key; resolves with its status. */
export async function sendHolder(origin: string): Promise<number> {
  const res = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${SUITE_KEY}` },
    body: JSON.stringify({ model: HOLD_MODEL, messages: [{ role: 'user', content: 'hold' }] }),
  });
  await res.text();
  return res.status;
}

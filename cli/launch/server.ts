/**
 * Finding toolproof: the given URL (else the local default) answers /health, or, when it is a
 * loopback address, `toolproof --serve` is started there in the background and waited for. The
 * launcher stops the server it started when the agent exits. The one network boundary of
 * `toolproof launch` (with `fetchModels`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BodyTooLarge, boundedText } from '../bounded-body.js';
import type { ServingMessage } from '../../server/cluster.js';

export const DEFAULT_URL = 'http://127.0.0.1:8787';

/** The origin without a trailing slash or /v1. */
export function normalizeUrl(raw: string): string {
  const url = new URL(raw);
  let path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith('/v1')) path = path.slice(0, -3);
  return `${url.origin}${path}`;
}

export function defaultUrl(env: NodeJS.ProcessEnv): string {
  return env.TOOLPROOF_PORT ? `http://127.0.0.1:${env.TOOLPROOF_PORT}` : DEFAULT_URL;
}

/**
 * What answers at `base`: toolproof (`up`), nothing (`down`: the connection was refused, so a
 * server may be started there), or something that took the connection but gave no healthy answer
 * in time (`busy`: a toolproof too loaded to answer yet, or another program on the port).
 */
export type Probe = 'up' | 'down' | 'busy';

/** Another program answered, not toolproof: what it said. */
export interface NotToolproof {
  other: string;
}

const NOTHING_THERE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EADDRNOTAVAIL', 'EHOSTUNREACH', 'ENETUNREACH']);

export async function probe(base: string, timeoutMs = 1500): Promise<Probe | NotToolproof> {
  try {
    const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    if (res.ok) return 'up';
    // toolproof's /health is open and always 200: a 4xx is another program's own answer (a 5xx
    // may be a proxy in front of a toolproof not up yet).
    return res.status >= 400 && res.status < 500 ? { other: `GET /health: HTTP ${res.status}` } : 'busy';
  } catch (err) {
    const cause = (err as { cause?: { code?: unknown; name?: unknown; message?: unknown } }).cause;
    const code = cause?.code;
    // The answer was not HTTP (llhttp's parse error: code HPE_* from Node's own undici, name
    // HTTPParserError without a code from undici 7's dispatcher): another kind of server holds
    // the port (SSH, a database). Waiting 30 s for it to turn into toolproof ended in "is
    // toolproof running there?".
    if ((typeof code === 'string' && code.startsWith('HPE_')) || cause?.name === 'HTTPParserError')
      return { other: `it answers GET /health, but not in HTTP: ${String(cause?.message ?? code)}` };
    return typeof code === 'string' && NOTHING_THERE.has(code) ? 'down' : 'busy';
  }
}

/**
 * vLLM and llama-server answer GET /health with a 200 as toolproof does, so a model server's URL
 * given as toolproof's ran the agent straight against it, without toolproof and without a word.
 * Every toolproof serves /api/hello (open, or behind its keys): a 404 there is not toolproof. No
 * answer in time is no proof either way.
 */
async function identify(base: string, timeoutMs: number): Promise<Probe | NotToolproof> {
  try {
    const res = await fetch(`${base}/api/hello`, { method: 'HEAD', signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.status === 404
      ? { other: 'GET /health answers, but /api/hello, which toolproof serves, is a 404' }
      : 'up';
  } catch {
    return 'up';
  }
}

/**
 * Waits up to `timeoutMs` for a server that took the connection to answer /health: a slow answer
 * (a toolproof on a loaded machine, measured past 1.5 s with a 2-core box at load 15) is not
 * "nothing there", and starting a second server on its port could only fail. A server that
 * answers as toolproof does not is said at once.
 */
export async function findServer(base: string, timeoutMs = 30_000): Promise<Probe | NotToolproof> {
  const deadline = Date.now() + timeoutMs;
  let wait = 1500;
  for (;;) {
    const state = await probe(base, Math.max(1, Math.min(wait, deadline - Date.now())));
    if (state === 'up') return identify(base, 5_000);
    if (state !== 'busy' || Date.now() >= deadline) return state;
    wait *= 2;
    await new Promise((r) => setTimeout(r, 150));
  }
}

export interface StartedServer {
  pid: number;
  /** It serves its built-in simulator, as it said (no upstream in its environment or YAML). */
  simulator: boolean;
  log: string;
  stop(): Promise<void>;
  /** Leaves it running (for another launch using it): this process may exit without it. */
  leave(): void;
}

/** Set for a `toolproof --serve` this launcher starts: it stops when the launcher's channel closes. */
export const EXIT_WITH_LAUNCHER = 'TOOLPROOF_EXIT_WITH_LAUNCHER';
/** The folder of the launches using the server a launch starts (launchers.ts), handed to it. */
export const LAUNCHERS_DIR = 'TOOLPROOF_LAUNCHERS_DIR';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** `node <this CLI> --serve`: the built bin, or the source under the same loader (tsx). */
function serveCommand(): string[] {
  const built = fileURLToPath(new URL('../toolproof.js', import.meta.url));
  if (existsSync(built)) return [built, '--serve'];
  const source = fileURLToPath(new URL('../toolproof.ts', import.meta.url));
  return [...process.execArgv, source, '--serve'];
}

function waitExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/**
 * The log's last line that is not JSON: the reason `toolproof --serve` printed for exiting (a port
 * in use, a bad setting). Reads only the last 4 KB of a log that grows across runs.
 */
export function lastLine(path: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = statSync(path).size;
    const buf = Buffer.alloc(Math.min(size, 4096));
    readSync(fd, buf, 0, buf.length, size - buf.length);
    const lines = buf
      .toString('utf8')
      .split('\n')
      .map((l) => l.trim());
    const line = lines.reverse().find((l) => l !== '' && !l.startsWith('{'));
    return line ? line.slice(0, 300) : '';
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The server's log at `path`, appended to across runs. Opened without following a symbolic link
 * and without blocking on a FIFO, and kept only when it is a regular file of this user: the temp
 * folder is shared, and a name another user took first (a link to one of this user's files, a
 * FIFO, a file of theirs) would get the log's lines, or hang the launch. Else a new private
 * folder's file of the same name.
 */
export function openServerLog(path: string): { fd: number; path: string } {
  const flags =
    constants.O_WRONLY |
    constants.O_APPEND |
    constants.O_CREAT |
    (constants.O_NOFOLLOW ?? 0) |
    (constants.O_NONBLOCK ?? 0);
  try {
    const fd = openSync(path, flags, 0o600);
    const st = fstatSync(fd);
    if (st.isFile() && (process.getuid === undefined || st.uid === process.getuid())) return { fd, path };
    closeSync(fd);
  } catch {
    // a link (ELOOP), a FIFO nobody reads (ENXIO), a file this user may not write
  }
  const own = join(mkdtempSync(join(tmpdir(), 'toolproof-')), basename(path));
  return { fd: openSync(own, 'a', 0o600), path: own };
}

/** Starts toolproof on `base`'s host and port and waits (up to `timeoutMs`) for /health. */
export async function startServer(
  base: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
): Promise<StartedServer> {
  const url = new URL(base);
  if (!LOOPBACK.has(url.hostname) || url.protocol !== 'http:')
    throw new Error(
      `nothing answers at ${base}, and toolproof is only started on this machine (http://127.0.0.1)`,
    );
  const port = url.port || '80';
  const { fd: out, path: log } = openServerLog(join(tmpdir(), `toolproof-${port}.log`));
  // An IPC channel the server watches (cli/main.ts): it closes when this process is gone, however
  // it ended. A launcher ended by a signal before the agent ran (the server takes seconds to come
  // up), or killed outright, left `toolproof --serve` holding the port.
  // A process group of its own (`detached`): a terminal's Ctrl-C goes to the whole foreground
  // group, and an interactive agent takes it as "stop this turn" and goes on; the server, in the
  // launcher's group, took it as "shut down", and the agent's next turn found nothing there. The
  // launcher stops it when the agent exits, the channel when the launcher is gone.
  const child = spawn(process.execPath, serveCommand(), {
    env: {
      ...env,
      TOOLPROOF_PORT: port,
      TOOLPROOF_HOST: url.hostname.replace(/^\[|\]$/g, ''),
      [EXIT_WITH_LAUNCHER]: '1',
    },
    stdio: ['ignore', out, out, 'ipc'],
    detached: true,
  });
  child.channel?.unref();
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const forced = setTimeout(() => child.kill('SIGKILL'), 5000);
    await waitExit(child);
    clearTimeout(forced);
  };
  // The channel closed, the server goes on while another launch runs (cli/main.ts).
  const leave = () => {
    if (child.connected) child.disconnect();
    child.unref();
  };
  // Its own word that it listens (server/cluster.ts, tellParent), not /health: with two launches at once the
  // other's server answered while this one's was still loading, and this launch said it had
  // started the server (its pid), which then exited on the taken port.
  let listening = false;
  let simulator = false;
  const heard = (m: unknown) => {
    const said = m as Partial<ServingMessage> | null;
    if (said?.tp !== 'toolproof:listening') return;
    listening = true;
    simulator = said.simulator === true;
  };
  child.on('message', heard);
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        const why = lastLine(log);
        throw new Error(
          `toolproof --serve exited ${child.exitCode ?? child.signalCode}${why ? `: ${why}` : ''}; see ${log}`,
        );
      }
      if (listening) return { pid: child.pid ?? 0, simulator, log, stop, leave };
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    // A listener of 'message' holds the channel, and so the launcher, open.
    child.off('message', heard);
  }
  await stop();
  throw new Error(`toolproof --serve did not listen on ${base} within ${timeoutMs / 1000} s; see ${log}`);
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The most of a /v1/models answer the launcher reads: whatever answers --url (a squatted port)
 * wrote an endless body, and res.text() held it all (GBs at loopback speed within the timeout).
 * Toolproof's own list of even thousands of models is well under it.
 */
export const MAX_MODELS_BYTES = 16 * 1024 * 1024;

/** The body as text, or an error once it is past `limit` bytes (the rest is not read). */
async function boundedModels(res: Response, limit: number): Promise<string> {
  try {
    return await boundedText(res.body, limit);
  } catch (err) {
    if (err instanceof BodyTooLarge)
      throw new Error(`GET ${res.url}: the answer is over ${limit / 1024 / 1024} MiB; not a model list`);
    throw err;
  }
}

/** GET /v1/models in both shapes (the Anthropic-shaped page may carry other fields). */
export async function fetchModels(base: string, key: string): Promise<unknown[]> {
  const get = async (headers: Record<string, string>) => {
    const res = await fetch(`${base}/v1/models`, {
      headers: { authorization: `Bearer ${key}`, ...headers },
      signal: AbortSignal.timeout(15_000),
    });
    const text = await boundedModels(res, MAX_MODELS_BYTES);
    if (!res.ok)
      throw new HttpError(res.status, `GET ${base}/v1/models: HTTP ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text) as unknown;
  };
  const openai = await get({});
  const anthropic = await get({ 'anthropic-version': '2023-06-01' }).catch(() => undefined);
  return anthropic === undefined ? [openai] : [openai, anthropic];
}

/**
 * Whether the model server at `upstream` (an OpenAI-style base URL, `http://gpu:8000/v1`) refuses
 * toolproof's start-up requests without the key toolproof would send (TOOLPROOF_UPSTREAM_API_KEY,
 * if any): the first 401 or 403 of GET /models (vLLM guards /v1/*) and GET /props at its origin
 * (llama-server keeps /health and /v1/models open and guards the rest), else undefined (it
 * answered, or could not be asked).
 */
export async function upstreamRefusal(
  upstream: string,
  key: string | undefined,
): Promise<{ status: number; path: string } | undefined> {
  let urls: URL[];
  try {
    const models = new URL('models', upstream.endsWith('/') ? upstream : `${upstream}/`);
    urls = [models, new URL('/props', models)];
  } catch {
    return undefined;
  }
  for (const url of urls) {
    try {
      const res = await fetch(url, {
        headers: key ? { authorization: `Bearer ${key}` } : {},
        signal: AbortSignal.timeout(5_000),
      });
      await res.body?.cancel();
      if (res.status === 401 || res.status === 403) return { status: res.status, path: url.pathname };
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** What toolproof's `GET /ready` found: the upstreams it cannot reach (the first 16 named), of how many. */
export interface Readiness {
  down: Array<{ upstream: string; problem: string }>;
  downCount: number;
  of: number;
  /** It serves its built-in simulator (its /ready says `simulator: true`). */
  simulator: boolean;
}

/**
 * The upstreams toolproof at `base` cannot reach, from its open `GET /ready` (each configured
 * upstream's `/models`, 3 s each); none when it is ready, or when the answer is not /ready's (an
 * older toolproof, a timeout): the launch goes on as before then.
 */
export async function readiness(base: string, timeoutMs = 10_000): Promise<Readiness> {
  const none: Readiness = { down: [], downCount: 0, of: 0, simulator: false };
  try {
    const res = await fetch(`${base}/ready`, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await boundedText(res.body, 1024 * 1024);
    if (res.status !== 200 && res.status !== 503) return none;
    const said = JSON.parse(text) as { upstreams?: unknown; simulator?: unknown } | null;
    const simulator = said?.simulator === true;
    const upstreams = said?.upstreams;
    if (res.status !== 503 || !Array.isArray(upstreams)) return { ...none, simulator };
    const down: Readiness['down'] = [];
    let downCount = 0;
    for (const u of upstreams as Array<Record<string, unknown> | null>) {
      if (u?.ok !== false || typeof u.upstream !== 'string') continue;
      // What answers --url wrote the list: a megabyte of entries is not printed whole.
      if (++downCount > 16) continue;
      const problem =
        typeof u.error === 'string'
          ? u.error
          : `it answered GET /models with HTTP ${typeof u.status === 'number' ? u.status : '?'}`;
      down.push({ upstream: u.upstream.slice(0, 500), problem: problem.slice(0, 500) });
    }
    return { down, downCount, of: upstreams.length, simulator };
  } catch {
    return none;
  }
}

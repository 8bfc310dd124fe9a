/**
 * Clients of a TOOLPROOF_WORKERS > 1 process (clusterOnYaml): the cluster's primary spreads
 * connections over the workers, not requests, so a test picks its worker by its connection.
 * The openai SDK over one undici dispatcher, the worker an id names (its four hex digits), and
 * two connections known to reach different workers.
 */
import OpenAI from 'openai';
import { Agent, Client, type Dispatcher, fetch as undiciFetch } from 'undici';

/** The openai SDK at `origin` whose every request goes through `dispatcher`. */
export const sdkThrough = (origin: string, dispatcher: Dispatcher, apiKey = 'unused'): OpenAI =>
  new OpenAI({
    baseURL: `${origin}/v1`,
    apiKey,
    maxRetries: 0,
    timeout: 20_000,
    fetch: ((url: string, init: object) =>
      undiciFetch(url, { ...init, dispatcher } as Parameters<typeof undiciFetch>[1])) as never,
  });

/** A dispatcher that opens a fresh connection for every request (so requests go round the workers). */
export const freshConnections = (): Dispatcher =>
  new Agent().compose((dispatch) => (opts, handler) => dispatch({ ...opts, reset: true }, handler));

/** The worker that made a kept-state id (`resp_`, `conv_`, ...: four hex digits after the prefix). */
export const workerOf = (id: string): number => Number.parseInt(/^[a-z]+_([0-9a-f]{4})/.exec(id)![1]!, 16);

/**
 * Two connections to `origin` that reached different workers, each told by the worker in the id
 * `made` returns for a request on it, whatever order the primary hands connections out in.
 */
export async function twoWorkers(
  origin: string,
  made: (c: Client) => Promise<string>,
): Promise<{ here: Client; there: Client; made: string }> {
  const here = new Client(origin);
  const mine = workerOf(await made(here));
  for (let tries = 0; tries < 20; tries++) {
    const there = new Client(origin);
    const id = await made(there);
    if (workerOf(id) !== mine) return { here, there, made: id };
    await there.close();
  }
  throw new Error('20 connections in a row reached one worker');
}

/**
 * Two connections to `origin` on different workers (twoWorkers, probed with a Responses request
 * under `apiKey`), and one Responses answer kept on each: `mine` on `here`'s worker, `theirs`
 * on `there`'s, for `inputs[0]` and `inputs[1]`.
 */
export async function answeredOnEach(
  origin: string,
  apiKey: string,
  inputs: readonly [string, string],
): Promise<{
  here: Client;
  there: Client;
  mine: OpenAI.Responses.Response;
  theirs: OpenAI.Responses.Response;
}> {
  const sdkOn = (c: Client) => sdkThrough(origin, c, apiKey);
  const { here, there } = await twoWorkers(
    origin,
    async (c) => (await sdkOn(c).responses.create({ model: 'm', input: 'probe' })).id,
  );
  const mine = await sdkOn(here).responses.create({ model: 'm', input: inputs[0] });
  const theirs = await sdkOn(there).responses.create({ model: 'm', input: inputs[1] });
  if (workerOf(mine.id) === workerOf(theirs.id)) throw new Error('both answers were kept on one worker');
  return { here, there, mine, theirs };
}

/**
 * A request's answer as its front door frames it, with what asking its choices one request each
 * takes (the attempt loop does that when the request went upstream asking fewer choices than the
 * client's `n`: an upstream that answers one choice a request, policies/single-choice). Each
 * choice is read by a driver of its own, as a single choice is; these only join what they framed:
 * a whole completion with choices 0..n-1, or one stream whose chunks carry each choice's index.
 */
import type { ChatCompletion, ChatCompletionChunk, Usage } from '../../protocol/openai.js';
import type { ToolproofError } from '../../protocol/errors.js';
import type { AttemptDriver, ChatResult } from './attempt-end.js';
import type { ChatCall, ChatDeps } from './context.js';
import { JsonDriver } from './json-driver.js';
import type { StreamOutput, StreamSummary } from './output.js';
import { SseDriver } from './stream-driver.js';

export interface Framing {
  /** The whole answer's driver; choice 0's when the choices are asked one request each. */
  readonly driver: AttemptDriver;
  /** A driver for choice `index` (1..n-1), asked by a request of its own; made in order. */
  choice(index: number): AttemptDriver;
  /** The last word of an answer whose choices were asked one request each, with every choice's usage. */
  join(usage: Usage | undefined): Promise<ChatResult | undefined>;
}

/** Non-streamed: each choice's completion, its one choice given its index, in one completion. */
export function jsonFraming(call: ChatCall, deps: ChatDeps): Framing {
  const drivers: JsonDriver[] = [new JsonDriver(call, deps)];
  return {
    driver: drivers[0]!,
    choice(index) {
      const d = new JsonDriver(call, deps);
      drivers[index] = d;
      return d;
    },
    async join(usage) {
      let head: ChatCompletion | undefined;
      const choices: ChatCompletion['choices'] = [];
      for (const [index, d] of drivers.entries()) {
        const r = await d.finish(undefined);
        if (r.kind !== 'completion') continue; // never: a choice of its own is not relayed
        head ??= r.completion;
        // One choice asked: the first (askedChoicesOf kept at most the client's n of them).
        const c = r.completion.choices[0];
        if (c) choices.push({ ...c, index });
      }
      const completion: ChatCompletion = { ...head!, choices, ...(usage ? { usage } : {}) };
      return { kind: 'completion', completion, ...(usage ? { usage } : {}) };
    },
  };
}

/** Streamed: one stream; each choice's chunks carry its index and the first choice's identity. */
export function sseFraming(call: ChatCall, deps: ChatDeps, out: StreamOutput): Framing {
  const driver = new SseDriver(call, deps, out);
  let identity: StreamSummary | undefined;
  return {
    driver,
    choice(index) {
      identity ??= call.streamIdentity;
      return new SseDriver(call, deps, new ChoiceOutput(out, index, identity));
    },
    join(usage) {
      // The stream closes as the first choice's: later choices' upstream ids were theirs only.
      if (identity) call.streamIdentity = identity;
      return driver.finish(usage);
    },
  };
}

/**
 * The client's stream as one choice's driver sees it: its chunks go out under the choice's index
 * and the stream's identity; the stream's end is the whole answer's (sseFraming.join). No chat
 * framing by splicing (the fast lane would write index 0) and no relay: every chunk is parsed.
 */
class ChoiceOutput implements StreamOutput {
  constructor(
    private readonly out: StreamOutput,
    private readonly index: number,
    private readonly identity: StreamSummary,
  ) {}

  get opened(): boolean {
    return this.out.opened;
  }

  open(): void {
    this.out.open();
  }

  chunks(chunks: readonly ChatCompletionChunk[]): Promise<void> {
    const { id, model, created } = this.identity;
    const mapped: ChatCompletionChunk[] = [];
    for (const chunk of chunks) {
      // One choice asked: index 0 (askedChoicesOf kept at most the client's n of them).
      const choices = Array.isArray(chunk.choices) ? chunk.choices.filter((c) => (c?.index ?? 0) === 0) : [];
      if (choices.length === 0 && Array.isArray(chunk.choices) && chunk.choices.length > 0) continue;
      mapped.push({
        ...chunk,
        id,
        model,
        created,
        choices: choices.map((c) => ({ ...c, index: this.index })),
      });
    }
    return this.out.chunks(mapped);
  }

  end(): Promise<void> {
    return Promise.resolve(); // the whole answer's driver ends the stream
  }

  fail(err: ToolproofError): Promise<void> {
    return this.out.fail(err);
  }
}

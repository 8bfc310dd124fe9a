/**
 * Remembers, per upstream and model name as sent upstream, that tool_choice "required" was
 * rejected, so later requests of that model go straight to "auto" without paying a failed round
 * trip. Keyed by the upstream's own name for the model, never by its metrics label: an unlisted
 * model's label is "other" until it is listed or answered, so a label would forget a model whose
 * label changed, and would share one memory among all the unlisted models of an upstream.
 * Entries expire after a TTL (the backend may be upgraded or restarted with other flags); the
 * client picks the names, so the memory holds at most MAX_ENTRIES (the oldest go first), and a
 * name longer than LONG_NAME is held by its digest (the same name, the same entry): names sent
 * to the default upstream are whatever clients write, up to the body limit (32 MiB).
 */
import { createHash } from 'node:crypto';

const MAX_ENTRIES = 4096;
const LONG_NAME = 256;

interface Entry {
  until: number;
  /** The model's metrics label, for the toolproof_tool_choice_fallback_active gauge. */
  label: string;
  /** A number the entry holds, where it remembers one (a context window learnt from a refusal). */
  value?: number;
}

/**
 * The memory's name for a request's model (`name`: the model as its upstream knows it, the
 * route's upstream name else the client's) and the asking key's name. What an upstream refused
 * is read from the words of its error, and upstreams echo the client's values in their 400s
 * (vLLM's "(parameter=top_k, value=...)", pydantic's quoted input): what one key's request
 * taught is that key's alone, or a key holder could write another key's refusals (its images as
 * notes, its forced tool use "auto", its tool results cut to a window of 128 tokens). The flat
 * keys share one name (`default`); without keys, one memory.
 */
export function memoryModel(name: string, key: string | undefined): string {
  return key === undefined ? name : `${name}\u0000key\u0000${key}`;
}

export class FallbackMemory {
  private readonly entries = new Map<string, Entry>();
  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxEntries = MAX_ENTRIES,
  ) {}

  /** How many entries it holds (expired ones included until they are looked at). */
  get size(): number {
    return this.entries.size;
  }

  private key(upstream: string, model: string): string {
    const name =
      model.length > LONG_NAME
        ? `\u0000sha256:${createHash('sha256').update(model).digest('base64')}`
        : model;
    return `${upstream}\u0000${name}`;
  }

  /** Characters its keys hold, all entries together (tests: bounded whatever the names). */
  get keyChars(): number {
    let n = 0;
    for (const k of this.entries.keys()) n += k.length;
    return n;
  }

  /** `model` as sent upstream; `label` its metrics label (the model itself by default). */
  remember(upstream: string, model: string, ttlSeconds: number, label = model, value?: number): void {
    const k = this.key(upstream, model);
    this.entries.delete(k); // re-inserted last: the newest
    if (this.entries.size >= this.maxEntries) this.evict();
    this.entries.set(
      k,
      value === undefined
        ? { until: this.now() + ttlSeconds * 1000, label }
        : { until: this.now() + ttlSeconds * 1000, label, value },
    );
  }

  isActive(upstream: string, model: string): boolean {
    return this.live(upstream, model) !== undefined;
  }

  /** The number an unexpired entry holds (remember's `value`), else undefined. */
  valueOf(upstream: string, model: string): number | undefined {
    return this.live(upstream, model)?.value;
  }

  private live(upstream: string, model: string): Entry | undefined {
    const k = this.key(upstream, model);
    const e = this.entries.get(k);
    if (e === undefined) return undefined;
    if (e.until <= this.now()) {
      this.entries.delete(k);
      return undefined;
    }
    return e;
  }

  /** [upstream, model label] pairs currently remembered (for the metrics gauge). */
  active(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    const now = this.now();
    for (const [k, e] of [...this.entries]) {
      if (e.until <= now) this.entries.delete(k);
      else out.push([k.slice(0, k.indexOf('\u0000')), e.label]);
    }
    return out;
  }

  /** Expired entries, then the oldest when none had expired. */
  private evict(): void {
    const now = this.now();
    for (const [k, e] of this.entries) if (e.until <= now) this.entries.delete(k);
    if (this.entries.size < this.maxEntries) return;
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }
}

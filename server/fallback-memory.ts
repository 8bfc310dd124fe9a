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
import { BusiestFirst } from './busiest-first.js';
import { WriteOrder } from './write-order.js';

const MAX_ENTRIES = 4096;
const LONG_NAME = 256;

interface Entry {
  /** Its key in the memory. */
  readonly k: string;
  /** Dropped (expired, evicted or written again): skipped where a write order still holds it. */
  gone: boolean;
  until: number;
  /** The asking key's name as memoryModel wrote it ('' without one): whose entry it is. */
  owner: string;
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
  // Without a key the mark is still the last, its owner none: a client's model name may hold
  // one, and made every fact remembered of it an owner of its own (owners are kept, as many as
  // the keys).
  return `${name}${KEY_MARK}${key ?? ''}`;
}

const KEY_MARK = '\u0000key\u0000';

/** The key a memoryModel name was written for ('' none): the last mark's (a client's name may hold one). */
function ownerOf(model: string): string {
  const at = model.lastIndexOf(KEY_MARK);
  return at < 0 ? '' : model.slice(at + KEY_MARK.length);
}

/** An owner's entries, oldest first, and its place in the owners' heap. */
interface Owned {
  readonly order: WriteOrder<Entry>;
  at: number;
}

export class FallbackMemory {
  private readonly entries = new Map<string, Entry>();
  /**
   * Each owner's entries, oldest first: a full memory gives up the oldest entry of the owner
   * holding the most, found at once (a scan of the whole memory for it, and a sweep of every
   * entry for expired ones on each write, made one refusal naming 40,000 images 1.7 s of CPU).
   */
  private readonly owned = new Map<string, Owned>();
  /**
   * The owners by how many entries they hold, the most first: an eviction finds the owner
   * holding the most in O(log owners), not by a walk of every owner (one refusal naming 20,000
   * images into a full memory: 65 ms with one key holding entries, 822 ms with 4,000).
   */
  private readonly busiest = new BusiestFirst<Owned>((o) => o.order.live);
  /** Every entry, oldest first (when no owner holds more than one). */
  private readonly all = new WriteOrder<Entry>();
  /** No entry expires before this (a lower bound): a full memory sweeps only once one may have. */
  private earliest = Number.POSITIVE_INFINITY;
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
    const owner = ownerOf(model);
    const held = this.entries.get(k);
    if (held !== undefined) this.drop(k, held); // re-inserted last: the newest
    if (this.entries.size >= this.maxEntries) this.evict(owner);
    const until = this.now() + ttlSeconds * 1000;
    const e: Entry =
      value === undefined
        ? { k, gone: false, until, owner, label }
        : { k, gone: false, until, owner, label, value };
    this.entries.set(k, e);
    let own = this.owned.get(owner);
    if (own === undefined) this.owned.set(owner, (own = { order: new WriteOrder<Entry>(), at: -1 }));
    own.order.push(e);
    if (own.at < 0) this.busiest.insert(own);
    else this.busiest.grew(own);
    this.all.push(e);
    if (until < this.earliest) this.earliest = until;
  }

  private drop(k: string, e: Entry): void {
    this.entries.delete(k);
    e.gone = true;
    // An owner left with none stays (out of the heap): deleted and set again at its next write,
    // as a full memory's writer is each write, V8 keeps the deleted entry in its bucket's chain
    // until the map is rehashed, so the chain grew a link a write (20,480 writes beside 16,384
    // owners: ~0.4 s). Owners are the keys' names (and none): as many as the keys.
    const own = this.owned.get(e.owner);
    if (own) {
      own.order.dropped();
      if (own.order.live === 0) this.busiest.remove(own);
      else this.busiest.shrank(own);
    }
    this.all.dropped();
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
      this.drop(k, e);
      return undefined;
    }
    return e;
  }

  /** [upstream, model label] pairs currently remembered (for the metrics gauge). */
  active(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    const now = this.now();
    for (const [k, e] of [...this.entries]) {
      if (e.until <= now) this.drop(k, e);
      else out.push([k.slice(0, k.indexOf('\u0000')), e.label]);
    }
    return out;
  }

  /**
   * Expired entries, then, when none had expired, the oldest entry of the owner holding the most
   * (`arriving` counted with the one it is about to write): the client picks the names, and with
   * the oldest of all going first, one key writing thousands of refusals (a name each) pushed out
   * what every other key's upstream had taught, which each paid for again with a failed round trip.
   */
  private evict(arriving: string): void {
    const now = this.now();
    if (now >= this.earliest) {
      let earliest = Number.POSITIVE_INFINITY;
      for (const [k, e] of this.entries)
        if (e.until <= now) this.drop(k, e);
        else if (e.until < earliest) earliest = e.until;
      this.earliest = earliest;
      if (this.entries.size < this.maxEntries) return;
    }
    // The owner holding the most, unless `arriving` (with the entry it writes) holds as many.
    const top = this.busiest.top();
    const arrivingHolds = (this.owned.get(arriving)?.order.live ?? 0) + 1;
    const most = top !== undefined && top.order.live > arrivingHolds ? top : this.owned.get(arriving);
    // `arriving` holds none yet and no one holds more than one: the oldest of all
    const oldest = most?.order.oldest() ?? this.all.oldest();
    if (oldest !== undefined) this.drop(oldest.k, oldest);
  }
}

/**
 * What one validation may cost, counted as it runs. The compile estimate (validator-cache.ts)
 * bounds a schema's code, not how often that code runs: a client schema runs on model-written
 * arguments, and three shapes made one call cost far more than either side's size.
 * - A `$ref` DAG: `d0 = anyOf[d1, d1]`, `d1 = anyOf[d2, d2]`, ... (20 definitions, 1.3 KB)
 *   applies the last one 2^20 times to one value that fails it: 2.7 s, doubling per definition,
 *   and one error object per failed try (ajv's allErrors).
 * - A list against a list: an `enum` of 4,000 values as the `items` of an array of 100,000
 *   strings (500 KB of arguments): 400M comparisons, 2.8 s.
 * - ajv's allErrors gathers a called validator's errors with `concat` (a copy of all gathered
 *   so far): 2,000 failing items of a recursive `$ref`'d schema took 61 ms, 8,000 2.3 s. They are
 *   appended in place instead (`cat`): the list gathered so far is referenced by nothing else
 *   that is read again (a called validator's `errors` is read only right after the call, and
 *   written anew by its next call), and ajv itself already appends to and truncates it in place.
 *
 * So the generated code is metered (ajv's `code.process` hook: the source of each function
 * before it is built). Each function entry and each loop iteration adds the length of its body
 * in characters of generated code (what running it once can cost at most), a function entry
 * the size of its `data` too (a keyword may read all of it: a string's length, an `enum` or
 * `const` compared deeply; sizes computed once per object); each append of a called
 * validator's errors adds their number; the pattern and format checks add the length of the
 * text they read (times the pattern's RE2 program). The steps are paid from the request's compile budget (server/compile-budget.ts: per
 * request, key and process), so a response of many calls cannot multiply one call's limit.
 * Past what it may have the validation throws MeterSpent and the caller reports the call as not
 * checked ('cost', or 'budget'), as for a schema too costly to compile. One counter for the
 * process: a validation runs to its end on one thread, never inside another.
 *
 * The generated code is read by a scanner that knows what ajv 8 writes (pinned exactly in
 * package.json): double-quoted JSON strings, the two regex literals of its JSON-pointer escape
 * (`/~/g`, `/\//g`), balanced brackets. A source it cannot read this way is refused (the schema
 * goes unchecked, 'schema'), never built unmetered.
 */

/** Steps one validation may take in all (~40-180 ms of the loop, measured on the attacks). */
export const MAX_VALIDATION_STEPS = 32_000_000;
/** Steps a validation buys before it starts (a call of a small tool takes a few thousand). */
export const FIRST_STEPS = 4096;
/** Steps bought from the compile budget at a time past the first. */
export const CHUNK_STEPS = 65_536;
/** Steps per compile-budget unit (a unit is ~1 µs of the loop; a step ~1-4 ns, measured). */
export const STEPS_PER_UNIT = 256;

export class MeterSpent extends Error {
  constructor(
    limit: number,
    /** Spent because the compile budget could pay no more, not at the validation's own limit. */
    readonly byBudget: boolean,
  ) {
    super(
      byBudget
        ? 'the compile budget is spent (checking these arguments takes more)'
        : `checking these arguments against the schema would take more than ${limit} steps`,
    );
    this.name = 'MeterSpent';
  }
}

/** What pays for the steps (the request's compile budget: policies/types.ts). */
interface Payer {
  take(cost: number): boolean;
}

export interface StepMeter {
  /** Steps counted since the validation began. */
  n: number;
  /** Steps paid for so far; Infinity outside a metered validation. */
  max: number;
  /** Buys more steps (CHUNK_STEPS at a time, up to MAX_VALIDATION_STEPS) or throws MeterSpent. */
  over(): void;
  /**
   * ajv's `vErrors.concat(more)`, in place: `more` appended to `list` (counted), `list` handed
   * back. A copy per failing call was the square of the errors (see the module comment).
   */
  cat(list: unknown[], more: unknown[]): unknown[];
  /** A value's size: a string's length, a list's or object's keys and values, 1 else. */
  size(value: unknown): number;
}

/** Sizes of the large objects met, computed once each (a value is read many times by one schema). */
let sizes = new WeakMap<object, number>();
/** Whether `sizes` holds anything (a fresh map per validation cost ~0.3 µs a call). */
let sized = false;

function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 1;
  let size = sizes.get(value);
  if (size !== undefined) return size;
  size = 1;
  if (Array.isArray(value)) for (let i = 0; i < value.length; i++) size += sizeOf(value[i]);
  else {
    const o = value as Record<string, unknown>;
    for (const k of Object.keys(o)) size += k.length + sizeOf(o[k]);
  }
  // Small values are summed again when met again (no dearer than the lookup): only large ones
  // are remembered (a WeakMap entry per object cost 20k small objects +35% of their check).
  if (size >= 64) {
    sizes.set(value, size);
    sized = true;
  }
  return size;
}

let payer: Payer | undefined;

/** The process-wide meter the generated validators count on (reached as `self.tpMeter`). */
export const METER: StepMeter = {
  n: 0,
  max: Number.POSITIVE_INFINITY,
  over(): void {
    while (METER.n > METER.max) {
      if (METER.max >= MAX_VALIDATION_STEPS) throw new MeterSpent(MAX_VALIDATION_STEPS, false);
      if (payer !== undefined && !payer.take(CHUNK_STEPS / STEPS_PER_UNIT))
        throw new MeterSpent(METER.max, true);
      METER.max = Math.min(MAX_VALIDATION_STEPS, METER.max + CHUNK_STEPS);
    }
  },
  cat(list, more) {
    const n = more.length;
    METER.n += n;
    if (METER.n > METER.max) METER.over();
    for (let i = 0; i < n; i++) list.push(more[i]);
    return list;
  },
  size: sizeOf,
};

/** Adds `steps` (text a pattern or format reads, say); buys more or throws past the limit. */
export function charge(steps: number): void {
  METER.n += steps;
  if (METER.n > METER.max) METER.over();
}

/**
 * Runs `fn` (one validation, synchronous) on the meter: FIRST_STEPS bought from `budget` before
 * it starts, more as needed, MAX_VALIDATION_STEPS at most; MeterSpent past what it can have
 * (before it starts when the budget cannot pay the first). Without a budget only the limit holds.
 */
export function withMeter<T>(budget: Payer | undefined, fn: () => T): T {
  if (budget !== undefined && !budget.take(FIRST_STEPS / STEPS_PER_UNIT)) throw new MeterSpent(0, true);
  METER.n = 0;
  METER.max = FIRST_STEPS;
  payer = budget;
  try {
    return fn();
  } finally {
    METER.max = Number.POSITIVE_INFINITY;
    METER.n = 0;
    payer = undefined;
    if (sized) {
      sizes = new WeakMap();
      sized = false;
    }
  }
}

const QUOTE = 34;
const isIdent = (c: number): boolean =>
  (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 36 || c === 95 || c === 46;

/** Index of the closing quote of the string opening at `i`. */
function stringEnd(src: string, i: number): number {
  for (let j = i + 1; j < src.length; j++) {
    const c = src.charCodeAt(j);
    if (c === 92) j++;
    else if (c === QUOTE) return j;
  }
  throw new Error('step meter: unterminated string in generated code');
}

/** For each opening bracket ( or {, the index of the one that closes it (strings skipped). */
function matchBrackets(src: string): Map<number, number> {
  const match = new Map<number, number>();
  const stack: number[] = [];
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(src, i);
    else if (c === 40 || c === 123) stack.push(i);
    else if (c === 41 || c === 125) {
      const open = stack.pop();
      if (open === undefined) throw new Error('step meter: unbalanced generated code');
      match.set(open, i);
    }
  }
  if (stack.length > 0) throw new Error('step meter: unbalanced generated code');
  return match;
}

const FUNCTION = 'return function ';
const CONCAT = 'vErrors.concat(';

/** ajv's generated source with the meter's counting written in (ajv's `code.process`). */
export function meterCode(src: string): string {
  const match = matchBrackets(src);
  const bodyOf = (paren: number): [number, number] => {
    const close = match.get(paren);
    const open = close === undefined ? -1 : close + 1;
    const end = src.charCodeAt(open) === 123 ? match.get(open) : undefined;
    if (end === undefined) throw new Error('step meter: a body it cannot find in generated code');
    return [open, end - open];
  };
  const parts: string[] = ['const tpM=self.tpMeter;'];
  let last = 0;
  let functions = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(src, i);
      continue;
    }
    if (i > 0 && isIdent(src.charCodeAt(i - 1))) continue;
    if (c === 102 && src.startsWith('for(', i)) {
      const [open, length] = bodyOf(i + 3);
      parts.push(src.slice(last, open + 1), `tpM.n+=${length};if(tpM.n>tpM.max)tpM.over();`);
      last = open + 1;
    } else if (c === 114 && src.startsWith(FUNCTION, i)) {
      const paren = src.indexOf('(', i + FUNCTION.length);
      const [open, length] = bodyOf(paren);
      parts.push(src.slice(last, open + 1), `tpM.n+=${length}+tpM.size(data);if(tpM.n>tpM.max)tpM.over();`);
      last = open + 1;
      functions++;
    } else if (c === 118 && src.startsWith(CONCAT, i)) {
      parts.push(src.slice(last, i), 'tpM.cat(vErrors,');
      last = i + CONCAT.length;
      i = last - 1;
    }
  }
  if (functions !== 1) throw new Error('step meter: generated code without its one function');
  parts.push(src.slice(last));
  return parts.join('');
}

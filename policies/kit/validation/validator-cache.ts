/**
 * Compiled argument validators, bounded by what compiling them costs. ajv keeps its own reference
 * to every schema it compiles (and every pattern, in one scope shared by the instance): evicting
 * from a map in front of it freed nothing (+1.3 MB per distinct 23 KB schema, 566 MB after 150).
 * So validators live in generations, each with its own ajv instance: when the current generation
 * has taken half the budget (estimated compile cost, or entries), it becomes the previous one and
 * the generation before it is dropped whole, ajv instance and all. At most two generations live.
 *
 * Keys are a hash of the schema's JSON, so a repeated schema (the same tools on every request)
 * is compiled once. Only a tool that is actually called is compiled (call-checks.ts validates
 * calls, not declarations).
 *
 * What compiling costs is estimated before compiling, from the schema's shape (estimateCompileCost:
 * ajv's code generation grows with subschemas, values and patterns, not with JSON size: 33 KB of
 * schema with 500 patterns took 430-960 ms and 11 MB of heap). The estimate is in COST units,
 * about a microsecond of event loop each on a small shared 2-core box. It decides three things:
 * - a schema estimated above MAX_COMPILE_COST is never compiled (one compile must not stall the
 *   loop);
 * - the caller's CompileBudget (per request, and per process: server/compile-budget.ts) pays for
 *   each compile; a schema it cannot pay for is not compiled now (not cached either: a later
 *   request may), and the call goes unchecked, reported as such;
 * - the cache holds at most CACHE_BUDGET_COST of estimated compile cost (a proxy for heap).
 *
 * Patterns are compiled lazily, on their first test (most properties of a big schema are never
 * present in a call), and shared by every schema through one bounded table (pattern-table in
 * linear-regexp.ts); their RE2 compile is paid from the same budget.
 *
 * What is never compiled: a schema nesting deeper than MAX_SCHEMA_DEPTH (a 100k-level schema
 * would overflow the stack inside ajv, then again inside every validation), a schema whose JSON
 * exceeds MAX_SCHEMA_CHARS; the caller skips validation and reports why.
 *
 * THE ONE GLOBAL of policies/: `VALIDATORS` below (with the pattern table of linear-regexp.ts
 * that it compiles through) is process-wide state, on purpose. Every policy is otherwise a pure
 * function of its arguments; this memo is what makes validation affordable (the same tools come
 * with every request of an agent, and a compile costs up to 60 ms), it is bounded (two
 * generations, CACHE_BUDGET_COST), and it is invisible in results: a validator compiled now or
 * taken from the memo gives the same answer. What compiling may cost a request is not global:
 * the caller's CompileBudget (PolicyContext.compileBudget) pays for it.
 */
import { createHash } from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { JsonObject } from '../../../protocol/openai.js';
import { deeperThan } from '../../../protocol/json-depth.js';
import type { CompileBudget } from '../../types.js';
import { compileLinear, createLinearEngine, type PatternSkip, withPatternBudget } from './linear-regexp.js';
import { charge, METER, meterCode } from './step-meter.js';
import { firstDuplicate } from './unique-items.js';

/** JSON nesting levels a tool schema may have (about half as many schema levels). */
export const MAX_SCHEMA_DEPTH = 64;
/**
 * Largest single schema compiled, in characters of JSON. Compiling is linear but slow (~2 ms per
 * KB unloaded) and blocks the loop: 128 KiB is a few hundred ms once, far above real tools.
 */
export const MAX_SCHEMA_CHARS = 128 * 1024;
/**
 * Estimated compile cost (COST units, ~1 µs of loop each) above which a schema is not compiled:
 * ~60 ms on a small shared box, a third of that on an ordinary server. Real tools cost far less
 * (a typical one: 1-3k; a 22 KB schema of a real agent: ~45k).
 */
export const MAX_COMPILE_COST = 60_000;
/**
 * Estimated compile cost the cache may hold in all (two generations of half each). Measured: a
 * validator weighs ~10-15 bytes of heap per unit, so this is on the order of 50 MB of validators.
 */
export const CACHE_BUDGET_COST = 4_000_000;
/** Compiled schemas the cache may hold in all. */
export const CACHE_MAX_ENTRIES = 256;
/**
 * Strings longer than this fail a format whose built-in expression RE2 cannot run (ajv-formats'
 * `url` backtracks: 1.8 s on 50k characters). No real URL comes near it.
 */
export const MAX_BACKTRACKING_FORMAT_INPUT = 8 * 1024;

export interface CompiledSchema {
  validate: ValidateFunction;
  /** Patterns left unenforced, with the reason. */
  skipped: string[];
}

/** Why a schema was not compiled: its own fault, its estimated cost, or the budget left. */
export type CompileRefusal = 'schema' | 'cost' | 'budget';

export type CompileResult = CompiledSchema | { error: string; refusal: CompileRefusal };

/** Units per schema object (ajv generates a code block per subschema). */
const COST_OBJECT = 150;
/** Units per other value: a keyword's scalar, an enum item, an array. */
const COST_VALUE = 80;
/** Units per item of a long enum or required list (looped over, never written out as code). */
const COST_LISTED = 2;
/** Units added per pattern (`pattern`, or a `patternProperties` key): its code and scope entry. */
const COST_PATTERN = 250;

/**
 * The estimated compile cost of `schema` (one pass over it; stops counting once past `limit`).
 * Calibrated against ajv with this module's options: 500 string properties ~100 ms (est. 115k),
 * with a pattern each ~230 ms (est. 280k), one enum of 5000 values ~320 ms (est. 400k).
 */
export function estimateCompileCost(schema: unknown, limit = Number.POSITIVE_INFINITY): number {
  let cost = 0;
  const stack: unknown[] = [schema];
  while (stack.length > 0 && cost <= limit) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      cost += COST_VALUE;
      for (let i = 0; i < v.length; i++) stack.push(v[i]);
    } else if (v !== null && typeof v === 'object') {
      cost += COST_OBJECT;
      const o = v as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        const child = o[k];
        if ((k === 'enum' || k === 'required') && Array.isArray(child) && child.length > 16) {
          // Checked by a loop (loopEnum, loopRequired): the list is data, not code.
          cost += COST_VALUE + child.length * COST_LISTED;
          continue;
        }
        if (k === 'pattern' && typeof child === 'string') cost += COST_PATTERN;
        if (k === 'patternProperties' && child !== null && typeof child === 'object')
          cost += COST_PATTERN * Object.keys(child).length;
        stack.push(child);
      }
    } else {
      cost += COST_VALUE;
    }
  }
  return cost;
}

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

const engine = createLinearEngine();

/** Format checks built so far, by format name (built on first use, shared by every generation). */
const formatTests = new Map<string, (text: string) => boolean>();

function formatTest(format: RegExp): (text: string) => boolean {
  const compiled = compileLinear(format.source, format.flags.includes('i') ? 2 /* CASE_INSENSITIVE */ : 0);
  if (compiled.ok) {
    const re = compiled.re;
    return (text) => {
      charge(text.length);
      return re.test(text);
    };
  }
  return (text) => {
    charge(text.length);
    return text.length <= MAX_BACKTRACKING_FORMAT_INPUT && format.test(text);
  };
}

/**
 * ajv-formats' expression formats moved onto RE2, or length-capped where RE2 cannot run them.
 * Each is compiled when a schema first uses it, once per process (a new generation is cheap).
 */
function linearFormats(ajv: Ajv): void {
  const formats = ajv.formats as Record<string, unknown>;
  for (const [name, format] of Object.entries(formats)) {
    if (!(format instanceof RegExp)) continue;
    ajv.addFormat(name, (text: string) => {
      let test = formatTests.get(name);
      if (test === undefined) {
        test = formatTest(format);
        formatTests.set(name, test);
      }
      return test(text);
    });
  }
}

function createAjv(): Ajv {
  const ajv = new Ajv({
    strict: false,
    allErrors: true,
    validateFormats: true,
    // ownProperties: a required `constructor` / `toString` / `__proto__` must be an own key of
    // the arguments, not something every object inherits from Object.prototype.
    ownProperties: true,
    // Compile cost, measured on a 22 KB schema: 135-250 ms with ajv's defaults, ~45 ms without
    // error messages (validate-arguments writes its own) and without the optimizing pass.
    messages: false,
    // process: every generated function counts what it runs on the step meter (step-meter.ts).
    code: { regExp: engine, optimize: false, process: meterCode },
    // A `$ref` is a call, never a copy: ajv inlines a referenced schema without refs of its own
    // at every reference, so 160 refs to one 40-property definition (6 KB, estimated ~50 ms)
    // compiled 6,400 property checks in 2 s. A call costs what the estimate counted once.
    inlineRefs: false,
    // A long `enum` or `required` list is checked by a loop over the list, not by code written
    // per value: 5000 enum values cost ~320 ms of code generation inline, next to nothing looped.
    loopEnum: 16,
    loopRequired: 16,
  });
  (ajv as unknown as { tpMeter: typeof METER }).tpMeter = METER;
  addFormats(ajv);
  linearFormats(ajv);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: true,
    validate: function uniqueItems(unique: boolean, data: unknown[]): boolean {
      if (!unique) return true;
      const dup = firstDuplicate(data);
      if (dup === undefined) return true;
      const [i, j] = dup;
      (uniqueItems as { errors?: unknown[] }).errors = [
        {
          keyword: 'uniqueItems',
          params: { i: j, j: i },
          message: `must NOT have duplicate items (items ## ${i} and ${j} are identical)`,
        },
      ];
      return false;
    },
  });
  return ajv;
}

interface Generation {
  ajv: Ajv;
  entries: Map<string, CompileResult>;
  /** Estimated compile cost of the entries. */
  cost: number;
}

const newGeneration = (): Generation => ({ ajv: createAjv(), entries: new Map(), cost: 0 });

/** The process-wide memo of compiled validators: policies/' one global (see the module comment). */
const VALIDATORS: { current: Generation; previous: Generation | undefined } = {
  current: newGeneration(),
  previous: undefined,
};

function rotate(): void {
  VALIDATORS.previous = VALIDATORS.current;
  VALIDATORS.current = newGeneration();
}

function compileIn(gen: Generation, schema: JsonObject): CompileResult {
  try {
    // $id would register in the instance and clash on the next compile; $schema naming a draft
    // ajv was not set up for (2020-12 from pydantic) would make the whole schema unusable.
    const { $id: _id, $schema: _draft, ...rest } = schema;
    const validate = gen.ajv.compile(rest);
    return { validate, skipped: [] };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err), refusal: 'schema' };
  }
}

const refuse = (error: string, refusal: CompileRefusal): CompileResult => ({ error, refusal });

/**
 * Cache keys (or the refusal of a schema too deep or too long) by schema object. Finding the key
 * walks, serializes and hashes the whole schema: done per call, a 1M-value enum cost 50 ms per
 * call, 400 calls 25 s of loop (issue 27). A request's tools are parsed once, so the same schema
 * object comes with every call of the request and its retries: the work is done once per tool
 * per request. Weak: it goes with the request. (A schema object is never changed once parsed:
 * policies copy what they rewrite.)
 */
const KEYS = new WeakMap<JsonObject, string | CompileResult>();

function keyOf(schema: JsonObject): string | CompileResult {
  const known = KEYS.get(schema);
  if (known !== undefined) return known;
  let key: string | CompileResult;
  if (deeperThan(schema, MAX_SCHEMA_DEPTH))
    key = refuse(`the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`, 'schema');
  else {
    const json = JSON.stringify(schema);
    key =
      json.length > MAX_SCHEMA_CHARS
        ? refuse(`the schema is ${json.length} characters of JSON (limit ${MAX_SCHEMA_CHARS})`, 'schema')
        : createHash('sha256').update(json).digest('base64');
  }
  KEYS.set(schema, key);
  return key;
}

/**
 * The validator for `schema`, compiled at most once while it stays cached, and only when its
 * estimated cost is under MAX_COMPILE_COST and `budget` (when given) can pay for it.
 */
export function compileSchema(schema: JsonObject, budget?: CompileBudget): CompileResult {
  const key = keyOf(schema);
  if (typeof key !== 'string') return key;
  const { current, previous } = VALIDATORS;
  const hit = current.entries.get(key) ?? previous?.entries.get(key);
  if (hit !== undefined) return hit;
  const cost = estimateCompileCost(schema, MAX_COMPILE_COST);
  let result: CompileResult | undefined;
  if (cost > MAX_COMPILE_COST) {
    // Cached: the same schema is refused at once next time (its cost: one small entry).
    result = refuse(`the schema is too costly to compile (estimated over ${MAX_COMPILE_COST} units)`, 'cost');
  } else if (budget && !budget.take(cost)) {
    // Not cached: a request with budget left may compile it.
    return refuse(`the compile budget is spent (this schema: ~${cost} units)`, 'budget');
  }
  const charged = cost > MAX_COMPILE_COST ? COST_OBJECT : cost;
  if (current.entries.size >= CACHE_MAX_ENTRIES / 2 || current.cost + charged > CACHE_BUDGET_COST / 2)
    rotate();
  const gen = VALIDATORS.current;
  result ??= compileIn(gen, schema);
  gen.entries.set(key, result);
  gen.cost += charged;
  return result;
}

/**
 * Runs `validate` with `budget` paying for the patterns it compiles (lazily, on first test);
 * returns its result and the patterns it left unenforced, each with its reason.
 */
export function runValidator<T>(
  budget: CompileBudget | undefined,
  validate: () => T,
): { value: T; skipped: PatternSkip[] } {
  return withPatternBudget(budget, validate);
}

export interface ValidatorCacheStats {
  entries: number;
  /** Estimated compile cost held. */
  cost: number;
  /** Schemas held by the live ajv instances themselves (what used to leak). */
  ajvSchemas: number;
}

export function validatorCacheStats(): ValidatorCacheStats {
  const { current, previous } = VALIDATORS;
  const gens = previous ? [current, previous] : [current];
  let ajvSchemas = 0;
  // ajv's private _cache (no public count): ajv is pinned exactly in package.json and
  // tests/server/library-internals.test.ts asserts it is a Map with one entry per compiled schema.
  for (const g of gens) ajvSchemas += (g.ajv as unknown as { _cache: Map<unknown, unknown> })._cache.size;
  return {
    entries: gens.reduce((n, g) => n + g.entries.size, 0),
    cost: gens.reduce((n, g) => n + g.cost, 0),
    ajvSchemas,
  };
}

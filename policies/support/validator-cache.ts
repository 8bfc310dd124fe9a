/**
 * Compiled argument validators, bounded by the memory they hold. ajv keeps its own reference
 * to every schema it compiles (and every pattern, in one scope shared by the instance): evicting
 * from a map in front of it freed nothing (+1.3 MB per distinct 23 KB schema, 566 MB after 150).
 * So validators live in generations, each with its own ajv instance: when the current generation
 * has taken half the budget (schema JSON characters, or entries), it becomes the previous one and
 * the generation before it is dropped whole, ajv instance and all. At most two generations live.
 *
 * Keys are a hash of the schema's JSON, so a repeated schema (the same tools on every request)
 * is compiled once (compiling is the expensive part: tens of ms for a 23 KB schema).
 *
 * What is never compiled: a schema nesting deeper than MAX_SCHEMA_DEPTH (a 100k-level schema
 * would overflow the stack inside ajv, then again inside every validation), a schema whose JSON
 * exceeds MAX_SCHEMA_CHARS; the caller skips validation and reports why.
 */
import { createHash } from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { JsonObject } from '../../protocol/openai.js';
import { deeperThan } from '../../protocol/json-depth.js';
import { compileLinear, createLinearEngine } from './linear-regexp.js';
import { firstDuplicate } from './unique-items.js';

/** JSON nesting levels a tool schema may have (about half as many schema levels). */
export const MAX_SCHEMA_DEPTH = 64;
/**
 * Largest single schema compiled, in characters of JSON. Compiling is linear but slow (~2 ms per
 * KB unloaded) and blocks the loop: 128 KiB is a few hundred ms once, far above real tools.
 */
export const MAX_SCHEMA_CHARS = 128 * 1024;
/**
 * Schema JSON characters the cache may hold in all (two generations of half each). A compiled
 * validator weighs up to ~20x its schema's JSON (a 22 KB schema: ~0.45 MB of heap), so 4 MiB of
 * schemas is on the order of 100 MB of validators at most.
 */
export const CACHE_BUDGET_CHARS = 4 * 1024 * 1024;
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

export type CompileResult = CompiledSchema | { error: string };

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

/** Patterns skipped by the compile in progress (ajv compiles synchronously: one at a time). */
let skipping: string[] = [];
const engine = createLinearEngine((pattern, reason) => {
  skipping.push(
    `pattern ${JSON.stringify(pattern.length > 60 ? `${pattern.slice(0, 57)}...` : pattern)} is not enforced (${reason})`,
  );
});

/** Format checks built so far, by format name (built on first use, shared by every generation). */
const formatTests = new Map<string, (text: string) => boolean>();

function formatTest(format: RegExp): (text: string) => boolean {
  const compiled = compileLinear(format.source, format.flags.includes('i') ? 2 /* CASE_INSENSITIVE */ : 0);
  if (compiled.ok) {
    const re = compiled.re;
    return (text) => re.test(text);
  }
  return (text) => text.length <= MAX_BACKTRACKING_FORMAT_INPUT && format.test(text);
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
    // Compile cost, measured on a 22 KB schema: 135-250 ms with ajv's defaults, ~45 ms without
    // error messages (validate-arguments writes its own) and without the optimizing pass.
    messages: false,
    code: { regExp: engine, optimize: false },
  });
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
  chars: number;
}

const newGeneration = (): Generation => ({ ajv: createAjv(), entries: new Map(), chars: 0 });
let current = newGeneration();
let previous: Generation | undefined;

function rotate(): void {
  previous = current;
  current = newGeneration();
}

function compileIn(gen: Generation, schema: JsonObject): CompileResult {
  skipping = [];
  try {
    // $id would register in the instance and clash on the next compile; $schema naming a draft
    // ajv was not set up for (2020-12 from pydantic) would make the whole schema unusable.
    const { $id: _id, $schema: _draft, ...rest } = schema;
    const validate = gen.ajv.compile(rest);
    return { validate, skipped: skipping };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  } finally {
    skipping = [];
  }
}

/** The validator for `schema`, compiled at most once while it stays cached. */
export function compileSchema(schema: JsonObject): CompileResult {
  if (deeperThan(schema, MAX_SCHEMA_DEPTH))
    return { error: `the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels` };
  const json = JSON.stringify(schema);
  if (json.length > MAX_SCHEMA_CHARS)
    return { error: `the schema is ${json.length} characters of JSON (limit ${MAX_SCHEMA_CHARS})` };
  const key = createHash('sha256').update(json).digest('base64');
  const hit = current.entries.get(key) ?? previous?.entries.get(key);
  if (hit !== undefined) return hit;
  if (current.entries.size >= CACHE_MAX_ENTRIES / 2 || current.chars + json.length > CACHE_BUDGET_CHARS / 2) {
    rotate();
  }
  const result = compileIn(current, schema);
  current.entries.set(key, result);
  current.chars += json.length;
  return result;
}

export interface ValidatorCacheStats {
  entries: number;
  chars: number;
  /** Schemas held by the live ajv instances themselves (what used to leak). */
  ajvSchemas: number;
}

export function validatorCacheStats(): ValidatorCacheStats {
  const gens = previous ? [current, previous] : [current];
  let ajvSchemas = 0;
  for (const g of gens) ajvSchemas += (g.ajv as unknown as { _cache: Map<unknown, unknown> })._cache.size;
  return {
    entries: gens.reduce((n, g) => n + g.entries.size, 0),
    chars: gens.reduce((n, g) => n + g.chars, 0),
    ajvSchemas,
  };
}

/**
 * What toolproof says about its models (GET /v1/models, OpenAI- and Anthropic-shaped): the names
 * it serves, and each one's context window and output limit, read from whichever field carries
 * them (pure).
 */

export interface ModelInfo {
  id: string;
  window?: number;
  /** Where the window came from (a field name), for the launcher's message. */
  windowFrom?: string;
  maxOutput?: number;
  /** Whether the model reads images, where toolproof says (`input_modalities`). */
  vision?: boolean;
}

type Entry = Record<string, unknown>;

function positiveInt(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function field(entry: Entry, path: string): unknown {
  let value: unknown = entry;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Entry)[part];
  }
  return value;
}

/**
 * The window's fields, first match wins: toolproof's own (`context_window`), vLLM's
 * `max_model_len`, Anthropic's `max_input_tokens`, the common `context_length`, llama-server's
 * `meta.n_ctx` (its serving context, not `n_ctx_train`).
 */
export const WINDOW_FIELDS = [
  'context_window',
  'max_model_len',
  'max_input_tokens',
  'context_length',
  'meta.n_ctx',
] as const;

export const OUTPUT_FIELDS = ['max_output_tokens', 'max_completion_tokens', 'max_tokens'] as const;

function first(entry: Entry, paths: readonly string[]): { value: number; from: string } | undefined {
  for (const path of paths) {
    const value = positiveInt(field(entry, path));
    if (value !== undefined) return { value, from: path };
  }
  return undefined;
}

/**
 * One entry per model name. A name toolproof maps onto an upstream model (`upstream_model`)
 * takes that model's window when it has none of its own.
 */
export function readModels(pages: readonly unknown[]): ModelInfo[] {
  const byId = new Map<string, Entry[]>();
  for (const page of pages) {
    const data = (page as { data?: unknown } | undefined)?.data;
    if (!Array.isArray(data)) continue;
    for (const entry of data) {
      if (typeof entry !== 'object' || entry === null) continue;
      const id = (entry as Entry).id;
      if (typeof id !== 'string' || !id) continue;
      // Pushed onto the id's list: a copy per entry was quadratic in a page repeating one id
      // (40,000 entries, 440 KB from whatever answered --url, held the launcher 64 s of CPU).
      const list = byId.get(id);
      if (list === undefined) byId.set(id, [entry as Entry]);
      else list.push(entry as Entry);
    }
  }
  // Once per id: a page of many names mapped onto one model with many entries read that
  // model's entries again for each name.
  const owned = new Map<string, ReturnType<typeof ownOf>>();
  const own = (id: string) => {
    let o = owned.get(id);
    if (o === undefined) owned.set(id, (o = ownOf(id)));
    return o;
  };
  const ownOf = (id: string) => {
    const entries = byId.get(id) ?? [];
    const window = entries.map((e) => first(e, WINDOW_FIELDS)).find(Boolean);
    const output = entries.map((e) => first(e, OUTPUT_FIELDS)).find(Boolean);
    const upstream = entries.map((e) => e.upstream_model).find((u) => typeof u === 'string' && u !== id);
    const modalities = entries.map((e) => e.input_modalities).find(Array.isArray) as unknown[] | undefined;
    const vision = modalities ? modalities.includes('image') : undefined;
    return { window, output, upstream: upstream as string | undefined, vision };
  };
  return [...byId.keys()].map((id) => {
    let { window, output } = own(id);
    const { upstream, vision } = own(id);
    if (upstream && byId.has(upstream)) {
      const mapped = own(upstream);
      window ??= mapped.window ? { ...mapped.window, from: `${upstream}: ${mapped.window.from}` } : undefined;
      output ??= mapped.output;
    }
    return {
      id,
      ...(window ? { window: window.value, windowFrom: window.from } : {}),
      ...(output ? { maxOutput: output.value } : {}),
      ...(vision !== undefined ? { vision } : {}),
    };
  });
}

/**
 * The output limit an agent asks for when toolproof names none: a quarter of the window (so a
 * long answer still fits beside the prompt), at most 32k, at least 1k; 8k without a window.
 */
export function defaultMaxOutput(window: number | undefined): number {
  if (!window) return 8192;
  return Math.max(1024, Math.min(32_768, Math.floor(window / 4)));
}

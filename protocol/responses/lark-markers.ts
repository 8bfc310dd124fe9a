/**
 * What toolproof checks of a custom tool's Lark grammar: the literal text every valid input must
 * start and end with, read from the grammar's `start` rule. No maintained Lark parser runs in
 * JavaScript (Lark's own JS target generates a standalone parser from Python), so the full
 * grammar is not enforced: the input must begin with the start rule's leading literals and end
 * with its trailing ones (trailing whitespace allowed). For Codex's apply_patch grammar that is
 * "*** Begin Patch\n" ... "*** End Patch". Pure.
 *
 * Bounded whatever the grammar: a rule that refers to the next one k times spells k^depth
 * characters (a 175-byte grammar: a 1 MB regex; 8 KB: a 524 MB request upstream, issue 27).
 * So each rule's edge is read once (memoized, unless a cycle or the depth cut it, which makes it
 * depend on the path), a marker keeps at most MAX_MARKER_CHARS (the start its first ones, the end
 * its last ones: a weaker check, still one every valid input passes), and reading a grammar
 * takes at most MAX_STEPS tokens: past that it checks no markers at all.
 */

/** Longer grammars are not read (no markers are checked). */
const MAX_GRAMMAR_CHARS = 64 * 1024;
const MAX_DEPTH = 16;
/** Characters a marker keeps (the pattern sent upstream holds two): real ones are a line. */
export const MAX_MARKER_CHARS = 1024;
/** Tokens read for one grammar's markers, over all rules: past it, no markers are checked. */
export const MAX_STEPS = 50_000;

type Token =
  | { kind: 'lit'; text: string }
  | { kind: 'name'; name: string }
  | { kind: 'other' }
  | { kind: 'op'; op: '?' | '*' | '+' | '|' | '(' | ')' | '[' | ']' };

/** Terminals %import common.X brings in whose text is fixed. */
const COMMON: Record<string, string> = { LF: '\n', CR: '\r', CRLF: '\r\n', WS_INLINE: ' ' };

function tokenize(expr: string): Token[] | undefined {
  const out: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < expr.length && expr[j] !== '"') j += expr[j] === '\\' ? 2 : 1;
      if (j >= expr.length) return undefined;
      const raw = expr.slice(i, j + 1);
      i = j + 1;
      if (expr[i] === 'i') return undefined; // case-insensitive literal: no fixed text
      try {
        out.push({ kind: 'lit', text: JSON.parse(raw) as string });
      } catch {
        return undefined;
      }
    } else if (c === '/') {
      let j = i + 1;
      while (j < expr.length && expr[j] !== '/') j += expr[j] === '\\' ? 2 : 1;
      i = j + 1;
      while (i < expr.length && /[a-z]/.test(expr[i]!)) i++;
      out.push({ kind: 'other' });
    } else if ('?*+|()[]'.includes(c)) {
      out.push({ kind: 'op', op: c as '?' });
      i++;
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i;
      while (j < expr.length && /[A-Za-z0-9_.]/.test(expr[j]!)) j++;
      out.push({ kind: 'name', name: expr.slice(i, j) });
      i = j;
    } else if (c === '-' && expr[i + 1] === '>') {
      break; // an alias: the rest names the tree node
    } else {
      out.push({ kind: 'other' });
      i++;
    }
  }
  return out;
}

/** Rule and terminal definitions by name (`?name:` and `!name:` too), continuation lines joined. */
function definitions(grammar: string): Map<string, string> {
  const defs = new Map<string, string>();
  let current: string | undefined;
  for (const raw of grammar.split('\n')) {
    const line = raw.replace(/(^|\s)\/\/.*$|^\s*#.*$/, '').trimEnd();
    if (line.trim() === '') continue;
    const m = /^[?!]?([A-Za-z_][A-Za-z0-9_]*)(?:\.\d+)?\s*:(.*)$/.exec(line);
    if (m) {
      current = m[1]!;
      defs.set(current, m[2]!);
    } else if (/^\s+\|/.test(line) && current) {
      defs.set(current, `${defs.get(current)} ${line.trim()}`);
    } else {
      const imp = /^%import\s+common\.([A-Z_]+)\s*$/.exec(line.trim());
      if (imp && COMMON[imp[1]!] !== undefined) defs.set(imp[1]!, JSON.stringify(COMMON[imp[1]!]));
      current = undefined;
    }
  }
  return defs;
}

type Edge = { text: string; whole: boolean };

/** What one larkMarkers call shares across its rules: tokens and edges read once, the step count. */
interface Shared {
  defs: Map<string, string>;
  tokens: Map<string, Token[] | undefined>;
  /** Edges by side and rule name, read without a cut (see `cuts`). */
  edges: Map<string, Edge>;
  steps: number;
  /** Times a cycle or the depth limit cut a reading: an edge read meanwhile depends on its path. */
  cuts: number;
}

interface Reader {
  shared: Shared;
  defs: Map<string, string>;
  depth: number;
  /** Rules being read: a rule that refers back to one of them has no fixed text there. */
  path: ReadonlySet<string>;
}

/** Reading stops: too many steps. */
class OverBudget extends Error {}

function enter(r: Reader, name: string): Reader | undefined {
  if (r.path.has(name) || r.depth >= MAX_DEPTH) {
    r.shared.cuts++;
    return undefined;
  }
  return { shared: r.shared, defs: r.defs, depth: r.depth + 1, path: new Set([...r.path, name]) };
}

function tokensOf(r: Reader, name: string, expr: string): Token[] | undefined {
  const known = r.shared.tokens;
  if (known.has(name)) return known.get(name);
  const t = tokenize(expr);
  known.set(name, t);
  return t;
}

/** The edge of rule `name` (definition `def`) read inside `inner`, memoized when no cut shaped it. */
function ruleEdge(name: string, def: string, side: 'start' | 'end', inner: Reader): Edge {
  const key = `${side}\u0000${name}`;
  const shared = inner.shared;
  const memo = shared.edges.get(key);
  if (memo !== undefined) return memo;
  const cuts = shared.cuts;
  const e = edge(def, side, inner, name);
  if (shared.cuts === cuts) shared.edges.set(key, e);
  return e;
}

/** `text` with `part` added on `side`, cut to MAX_MARKER_CHARS (then no longer whole). */
function grow(text: string, part: string, side: 'start' | 'end'): { text: string; cut: boolean } {
  const t = side === 'start' ? text + part : part + text;
  if (t.length <= MAX_MARKER_CHARS) return { text: t, cut: false };
  return { text: side === 'start' ? t.slice(0, MAX_MARKER_CHARS) : t.slice(-MAX_MARKER_CHARS), cut: true };
}

/** The whole fixed text of a literal or a name defined as one, else undefined. */
function literalOf(t: Token, r: Reader): string | undefined {
  if (t.kind === 'lit') return t.text;
  if (t.kind !== 'name') return undefined;
  const def = r.defs.get(t.name);
  const inner = enter(r, t.name);
  if (def === undefined || inner === undefined) return undefined;
  const e = ruleEdge(t.name, def, 'start', inner);
  return e.whole ? e.text : undefined;
}

/** The fixed text at one end of an expression, and whether the whole expression is that text. */
function edge(expr: string, side: 'start' | 'end', r: Reader, name: string): Edge {
  const none = { text: '', whole: false };
  const tokens = tokensOf(r, name, expr);
  if (!tokens || tokens.some((t) => t.kind === 'op' && t.op === '|')) return none;
  const seq = side === 'start' ? tokens : [...tokens].reverse();
  let text = '';
  for (let k = 0; k < seq.length; k++) {
    if (++r.shared.steps > MAX_STEPS) throw new OverBudget();
    const t = seq[k]!;
    // The quantifier that applies to t: after it in the grammar.
    const q = side === 'start' ? seq[k + 1] : seq[k - 1];
    const quant = q?.kind === 'op' && (q.op === '?' || q.op === '*' || q.op === '+') ? q.op : undefined;
    if (side === 'end' && t.kind === 'op' && (t.op === '?' || t.op === '*' || t.op === '+')) {
      // Reading backwards a quantifier comes first. An optional tail ends the fixed text, unless
      // it is only whitespace (the pattern allows trailing whitespace): `"*** End Patch" LF?`.
      if (t.op === '+') continue;
      const item = seq[k + 1];
      const whole = item ? literalOf(item, r) : undefined;
      if (whole === undefined || whole.trim() !== '') return { text, whole: false };
      k++;
      continue;
    }
    if (quant === '?' || quant === '*') return { text, whole: false };
    let part: Edge;
    if (t.kind === 'lit') part = { text: t.text, whole: true };
    else if (t.kind === 'name') {
      const def = r.defs.get(t.name);
      const inner = enter(r, t.name);
      if (def === undefined || inner === undefined) return { text, whole: false };
      part = ruleEdge(t.name, def, side, inner);
    } else return { text, whole: false };
    const grown = grow(text, part.text, side);
    text = grown.text;
    if (grown.cut || !part.whole || quant === '+') return { text, whole: false };
  }
  return { text, whole: true };
}

export interface LarkMarkers {
  start: string;
  end: string;
}

/** The start rule's leading and trailing literal text ('' where there is none). */
export function larkMarkers(grammar: string): LarkMarkers {
  if (grammar.length > MAX_GRAMMAR_CHARS) return { start: '', end: '' };
  const defs = definitions(grammar);
  const start = defs.get('start');
  if (start === undefined) return { start: '', end: '' };
  const shared: Shared = { defs, tokens: new Map(), edges: new Map(), steps: 0, cuts: 0 };
  const root: Reader = { shared, defs, depth: 0, path: new Set(['start']) };
  try {
    const head = edge(start, 'start', root, 'start');
    if (head.whole) return { start: head.text, end: '' };
    return { start: head.text, end: edge(start, 'end', root, 'start').text };
  } catch (err) {
    if (err instanceof OverBudget) return { start: '', end: '' };
    throw err;
  }
}

/** RE2 syntax for literal text. */
function escapeRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

/** A JSON-schema pattern the markers give: whole-input, trailing whitespace allowed. */
export function markerPattern(m: LarkMarkers): string | undefined {
  if (m.start === '' && m.end === '') return undefined;
  return `^${escapeRegex(m.start)}[\\s\\S]*${escapeRegex(m.end.trimEnd())}\\s*$`;
}

/**
 * Metric names a PromQL expression (or a Grafana query) reads, for the deploy tests.
 *
 * A small tokenizer, not a full parser: it only has to tell metric names apart from functions,
 * keywords, label names and Grafana variables. The rules:
 * - an identifier followed by `(` is a function or an aggregation (rate, sum, histogram_quantile);
 * - identifiers inside `{...}` are label names, inside `[...]` durations or Grafana variables;
 * - the parenthesised list after by / without / on / ignoring / group_left / group_right holds labels;
 * - `$var`, `${var}` and `[[var]]` are Grafana variables; strings and numbers are skipped.
 * Whatever identifier is left is a metric (or recording rule) name.
 */

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'start', 'end', 'atan2']);
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

type Token = { kind: 'ident' | 'punct' | 'other'; text: string };

function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      // PromQL comment to end of line.
      while (i < expr.length && expr[i] !== '\n') i++;
    } else if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < expr.length && expr[j] !== c) j += expr[j] === '\\' && c !== '`' ? 2 : 1;
      tokens.push({ kind: 'other', text: expr.slice(i, j + 1) });
      i = j + 1;
    } else if (c === '$') {
      // Grafana variable: $name, ${name[:format]}.
      let j = i + 1;
      if (expr[j] === '{') {
        while (j < expr.length && expr[j] !== '}') j++;
        j++;
      } else {
        while (j < expr.length && /[A-Za-z0-9_]/.test(expr[j]!)) j++;
      }
      tokens.push({ kind: 'other', text: expr.slice(i, j) });
      i = j;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(expr[i + 1] ?? ''))) {
      // Numbers, hex, exponents and durations (5m, 1h30m) in one token.
      const m = /^(0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?(?:(?:ms|[smhdwy])[0-9]*)*)/.exec(
        expr.slice(i),
      );
      const text = m?.[0] || c;
      tokens.push({ kind: 'other', text });
      i += text.length;
    } else if (/[A-Za-z_:]/.test(c)) {
      let j = i + 1;
      while (j < expr.length && /[A-Za-z0-9_:]/.test(expr[j]!)) j++;
      tokens.push({ kind: 'ident', text: expr.slice(i, j) });
      i = j;
    } else {
      tokens.push({ kind: 'punct', text: c });
      i++;
    }
  }
  return tokens;
}

/** Metric names read by one PromQL expression. */
export function metricNamesIn(expr: string): Set<string> {
  const names = new Set<string>();
  const tokens = tokenize(expr.replace(/\[\[[A-Za-z0-9_:.]+\]\]/g, ' '));
  let braces = 0;
  let brackets = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === 'punct') {
      if (t.text === '{') braces++;
      else if (t.text === '}') braces--;
      else if (t.text === '[') brackets++;
      else if (t.text === ']') brackets--;
      continue;
    }
    if (t.kind !== 'ident' || braces > 0 || brackets > 0) continue;
    const next = tokens[i + 1];
    const word = t.text.toLowerCase();
    if (LABEL_LIST_KEYWORDS.has(word)) {
      if (next?.text === '(') {
        // Skip the label list.
        let j = i + 2;
        while (j < tokens.length && tokens[j]!.text !== ')') j++;
        i = j;
      }
      continue;
    }
    if (next?.text === '(') continue; // function or aggregation
    if (next?.kind === 'ident' && /^(by|without)$/i.test(next.text)) continue; // sum by (...) (...)
    if (KEYWORDS.has(word)) continue;
    names.add(t.text);
  }
  return names;
}

/**
 * Metric names read by a Grafana template-variable query: label_values(metric, label),
 * label_values(label), metrics(regex), query_result(promql), or plain PromQL.
 */
export function metricNamesInVariableQuery(query: string): Set<string> {
  const q = query.trim();
  const labelValues = /^label_values\((.*)\)$/s.exec(q);
  if (labelValues) {
    const args = labelValues[1]!;
    const comma = args.lastIndexOf(',');
    // label_values(label) reads no metric; label_values(selector, label) reads the selector's.
    return comma === -1 ? new Set() : metricNamesIn(args.slice(0, comma));
  }
  const queryResult = /^query_result\((.*)\)$/s.exec(q);
  if (queryResult) return metricNamesIn(queryResult[1]!);
  if (/^(label_names|metrics)\(/.test(q)) return new Set();
  return metricNamesIn(q);
}

/**
 * Model-name patterns (keys' allow-lists, routes): `*` any run of characters, `?` one, anything
 * else itself. The classic two-pointer wildcard match, no regex: at most O(name × pattern) steps
 * whatever the pattern (a regex from `a*b*c*` backtracks polynomially on a long client name).
 */
export function globMatch(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let mark = 0;
  while (n < name.length) {
    const c = pattern.charCodeAt(p);
    if (p < pattern.length && (c === 63 /* ? */ || c === name.charCodeAt(n))) {
      p++;
      n++;
    } else if (p < pattern.length && c === 42 /* * */) {
      star = p++;
      mark = n;
    } else if (star >= 0) {
      p = star + 1;
      n = ++mark;
    } else return false;
  }
  while (p < pattern.length && pattern.charCodeAt(p) === 42) p++;
  return p === pattern.length;
}

export function isGlob(pattern: string): boolean {
  return pattern.includes('*') || pattern.includes('?');
}

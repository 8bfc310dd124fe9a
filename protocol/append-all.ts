/**
 * `into.push(...items)` passes every item as an argument on the stack: past about 120k items
 * it throws a RangeError (a history turn with that many tool calls, a Messages turn with that
 * many tool_result blocks). Every list built from client or upstream data is appended with
 * this loop instead; it costs the same for a short list.
 */
export function pushAll<T>(into: T[], items: readonly T[]): T[] {
  for (let i = 0; i < items.length; i++) into.push(items[i]!);
  return into;
}

/**
 * `a` then `b` in a new array of exactly their length, for lists that live as long as a request
 * (an open stream's effects): push() onto [] reserves 17 slots for one or two items. Not
 * `a.concat(b)`: its exact size is a fast path V8 leaves for good, process-wide, once any object
 * anywhere sets Symbol.isConcatSpreadable (a library, a test); concat then grows as push does.
 */
export function joined<T>(a: readonly T[], b: readonly T[]): T[] {
  const out = new Array<T>(a.length + b.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]!;
  for (let i = 0; i < b.length; i++) out[a.length + i] = b[i]!;
  return out;
}

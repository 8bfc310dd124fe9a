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

/** A JSON object (not null, not an array): the check every reader of untrusted bodies makes. */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

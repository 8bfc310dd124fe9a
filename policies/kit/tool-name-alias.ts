/**
 * A tool name every backend takes. mistral_common (vLLM with `--tokenizer-mode mistral`, and the
 * servers built on it) refuses a function name outside `^[a-zA-Z0-9_-]{1,64}$`, in the tools and
 * in the history's calls alike ("Function name was … but must be a-z, A-Z, 0-9, or contain
 * underscores and dashes, with a maximum length of 64."): MCP tool names past 64 characters
 * (Claude Code's `mcp__plugin_<server>__<tool>`), or with dots. Pure and deterministic, so a name
 * goes upstream as the same alias every turn (docs/prefix.md). Shared by tool-names (which sends
 * the aliases and maps calls back) and corrective-retry (whose retry replays a call under the
 * name the upstream knows it by).
 */
import { base62Hash } from './short-hash.js';

export const PORTABLE_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** `name` itself when portable; else its portable characters (others as `_`), cut, and a hash of the whole name. */
export function toolNameAlias(name: string): string {
  if (PORTABLE_TOOL_NAME.test(name)) return name;
  const clean = name.slice(0, 55).replace(/[^a-zA-Z0-9_-]/g, '_');
  return `${clean}_${base62Hash(name, 8)}`;
}

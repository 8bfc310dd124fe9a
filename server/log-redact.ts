/**
 * Error messages on their way into a log line. An upstream's message is whatever it wrote, and
 * validation errors from Python backends (pydantic, through FastAPI or vLLM) echo the offending
 * input: `'input': '<the user's prompt>'` in a list of errors, `input_value='...'` in pydantic's
 * own wording, `"input": ...` as JSON. Prompts do not belong in logs: those values are replaced,
 * and the message is cut to a bounded length. Linear in the message (a scan with no regex
 * backtracking over the value), so a hostile message costs no more than its length.
 */

/** Longest message a log line keeps. */
export const LOG_MESSAGE_MAX = 300;

/** `'input':`, `"input":`, `input_value=` (pydantic's words for the value it rejected). */
const MARKER = /(['"]input['"]\s*:\s*|\binput_value\s*=\s*)/g;

const CLOSE: Record<string, string> = { '[': ']', '{': '}', '(': ')' };

/** Where the value starting at `i` ends: a quoted string, a bracketed group, or a bare token. */
function valueEnd(s: string, i: number): number {
  const first = s[i];
  if (first === "'" || first === '"') return quotedEnd(s, i);
  if (first !== undefined && first in CLOSE) {
    const stack: string[] = [];
    for (let j = i; j < s.length; j++) {
      const c = s[j]!;
      if (c === "'" || c === '"') {
        j = quotedEnd(s, j) - 1;
        continue;
      }
      if (c in CLOSE) stack.push(CLOSE[c]!);
      else if (c === stack[stack.length - 1]) {
        stack.pop();
        if (stack.length === 0) return j + 1;
      }
    }
    return s.length;
  }
  let j = i;
  while (j < s.length && s[j] !== ',' && s[j] !== '}' && s[j] !== ']' && s[j] !== ')') j++;
  return j;
}

/** The index after the closing quote of the string opening at `i` (backslash escapes honoured). */
function quotedEnd(s: string, i: number): number {
  const q = s[i];
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === '\\') j++;
    else if (s[j] === q) return j + 1;
  }
  return s.length;
}

/**
 * llama-server's "Failed to parse input at pos N: <the model's output from pos N>": the output
 * (a leaked call's arguments: an address, a mail body) is the user's, not the log's. Kept: the
 * prefix and the output's length.
 */
const PARSE_FAILURE = /Failed to parse input at pos \d{1,12}: /;

/** `message` fit for a log line: echoed input values replaced, then cut to LOG_MESSAGE_MAX. */
export function redactForLog(message: string): string {
  const failure = PARSE_FAILURE.exec(message.length > 64 * 1024 ? message.slice(0, 64 * 1024) : message);
  if (failure) {
    const head = message.slice(0, failure.index + failure[0].length);
    const rest = message.length - head.length;
    return `${redactForLog(head.slice(0, -2))}: [model output redacted: ${rest} characters]`;
  }
  // Only the head can reach the line: redact a bounded prefix (plus room for the values cut).
  const s = message.length > 64 * 1024 ? message.slice(0, 64 * 1024) : message;
  let out = '';
  let from = 0;
  MARKER.lastIndex = 0;
  for (let m = MARKER.exec(s); m !== null; m = MARKER.exec(s)) {
    const start = m.index + m[0].length;
    if (start < from) continue;
    const end = valueEnd(s, start);
    out += `${s.slice(from, start)}[redacted]`;
    from = end;
    MARKER.lastIndex = end;
    if (out.length > LOG_MESSAGE_MAX) break;
  }
  out += s.slice(from);
  return out.length > LOG_MESSAGE_MAX ? `${out.slice(0, LOG_MESSAGE_MAX)}…` : out;
}

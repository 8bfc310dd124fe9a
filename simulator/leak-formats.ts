/**
 * Tool calls written as TEXT, the way each model family writes them. This is what reaches
 * `message.content` when the backend's tool-call parser does not match the model.
 */
import type { LeakFormat } from './types.js';

export interface LeakCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** JSON with Python json.dumps spacing (`", "` and `": "`), the way most models write it. */
function json(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(json).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${json(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Python literal syntax (repr-like): single-quoted strings, True/False/None. */
export function pyLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (Array.isArray(value)) return `[${value.map(pyLiteral).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>);
  return `{${entries.map(([k, v]) => `${pyLiteral(k)}: ${pyLiteral(v)}`).join(', ')}}`;
}

function xmlValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const RENDERERS: Record<LeakFormat, (calls: LeakCall[]) => string> = {
  hermes: (calls) =>
    calls
      .map((c) => `<tool_call>\n${json({ name: c.name, arguments: c.arguments })}\n</tool_call>`)
      .join('\n'),
  'qwen3-coder': (calls) =>
    calls
      .map((c) => {
        const params = Object.entries(c.arguments)
          .map(([k, v]) => `<parameter=${k}>\n${xmlValue(v)}\n</parameter>\n`)
          .join('');
        return `<tool_call>\n<function=${c.name}>\n${params}</function>\n</tool_call>`;
      })
      .join('\n'),
  'llama3-json': (calls) => calls.map((c) => json({ name: c.name, parameters: c.arguments })).join('; '),
  mistral: (calls) => `[TOOL_CALLS]${json(calls.map((c) => ({ name: c.name, arguments: c.arguments })))}`,
  'bare-json': (calls) => {
    const objs = calls.map((c) => ({ name: c.name, arguments: c.arguments }));
    return json(objs.length === 1 ? objs[0] : objs);
  },
  pythonic: (calls) =>
    `[${calls
      .map(
        (c) =>
          `${c.name}(${Object.entries(c.arguments)
            .map(([k, v]) => `${k}=${pyLiteral(v)}`)
            .join(', ')})`,
      )
      .join(', ')}]`,
  deepseek: (calls) =>
    `<｜tool▁calls▁begin｜>${calls
      .map(
        (c) =>
          `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${c.name}\n\`\`\`json\n${json(c.arguments)}\n\`\`\`<｜tool▁call▁end｜>`,
      )
      .join('')}<｜tool▁calls▁end｜>`,
  glm: (calls) =>
    calls
      .map((c) => {
        const args = Object.entries(c.arguments)
          .map(([k, v]) => `<arg_key>${k}</arg_key>\n<arg_value>${xmlValue(v)}</arg_value>\n`)
          .join('');
        return `<tool_call>${c.name}\n${args}</tool_call>`;
      })
      .join('\n'),
  'kimi-k2': (calls) =>
    `<|tool_calls_section_begin|>${calls
      .map(
        (c, i) =>
          `<|tool_call_begin|>functions.${c.name}:${i}<|tool_call_argument_begin|>${JSON.stringify(c.arguments)}<|tool_call_end|>`,
      )
      .join('')}<|tool_calls_section_end|>`,
  'gpt-oss': (calls) =>
    calls
      .map(
        (c, i) =>
          `${i > 0 ? '<|start|>assistant' : ''}<|channel|>commentary to=functions.${c.name} <|constrain|>json<|message|>${JSON.stringify(c.arguments)}<|call|>`,
      )
      .join(''),
};

export function renderLeak(format: LeakFormat, calls: LeakCall[]): string {
  return RENDERERS[format](calls);
}

/**
 * recall18: the readings the held-out set wild15 (tests/fixtures/recall/wild15.json) changed,
 * each written for the generator's four tools; beside them the look-alikes that must stay text.
 * Written after the wild15 changes and measured on the code before and after them
 * (docs/recall.md "recall18").
 *
 * - Doubao Seed's attribute spelling inside `<seed:tool_call>`: `<function name="NAME">` with
 *   `<parameter name="KEY" string="true">value</parameter>` (sipeed/picoclaw#3153); a value that
 *   is no string written `string="false"` as JSON. Read only when every call fits its schema.
 * - A call fused into another call's arguments as a key, `"read_file(path": "…"`
 *   (cactus-compute/cactus#316, LFM2): text whatever the envelope around it.
 */
import type { JsonObject } from '../../protocol/openai.js';
import type { PerturbCase } from './perturb-cases.js';

type Call = { name: string; arguments: JsonObject };

const ARGS18: Record<string, JsonObject> = {
  read_file: { path: 'src/app.ts' },
  get_weather: { city: 'Paris', unit: 'celsius' },
  search: { query: 'tool calling', limit: 5, exact: true },
  write_file: { path: 'notes.md', content: 'line one\nsay "hi" <b>twice</b>' },
};

/** Seed's attribute spelling; `indent` as Doubao wrote it (two spaces a level), else flat. */
function seedNamed(calls: Call[], opts: { indent?: boolean; attrs?: boolean } = {}): string {
  const sp = (n: number) => (opts.indent ? ' '.repeat(n) : '');
  const fn = (c: Call) =>
    `${sp(2)}<function name="${c.name}">\n${Object.entries(c.arguments)
      .map(([k, v]) => {
        const str = typeof v === 'string';
        const attr = opts.attrs === false ? '' : ` string="${str}"`;
        return `${sp(4)}<parameter name="${k}"${attr}>${str ? v : JSON.stringify(v)}</parameter>\n`;
      })
      .join('')}${sp(2)}</function>\n`;
  return `<seed:tool_call>\n${calls.map(fn).join('')}</seed:tool_call>`;
}

export function recall18Cases(): PerturbCase[] {
  const out: PerturbCase[] = [];
  const add = (c: Omit<PerturbCase, 'id' | 'set' | 'cut' | 'prose'> & { cut?: boolean; prose?: string }) => {
    out.push({
      ...c,
      id: `recall18/${c.format}/${c.perturbation}/${c.calls[0]?.name ?? 'none'}`,
      format: `${c.format}+`,
      cut: c.cut ?? false,
      prose: c.prose ?? '',
      set: 'recall18',
    });
  };
  for (const [tool, args] of Object.entries(ARGS18)) {
    const call = { name: tool, arguments: args };
    const two = tool === 'read_file' || tool === 'write_file';
    for (const indent of [true, false]) {
      const format = `seed-named-${indent ? 'indented' : 'flat'}`;
      const one = seedNamed([call], { indent });
      add({ format, perturbation: 'plain', text: one, truth: 'call', calls: [call] });
      add({
        format,
        perturbation: 'undeclared',
        text: seedNamed([{ name: 'fetch_page', arguments: args }], { indent }),
        truth: 'content',
        calls: [],
      });
      add({
        format,
        perturbation: 'cut',
        text: one.slice(0, Math.floor(one.length * 0.7)),
        truth: 'content',
        calls: [],
        cut: true,
      });
      // a key the tool does not declare: the attribute spelling is read only when it fits
      add({
        format,
        perturbation: 'undeclared-key',
        text: seedNamed([{ name: tool, arguments: { ...args, mode: 'fast' } }], { indent }),
        truth: 'content',
        calls: [],
      });
      if (!two) continue;
      add({
        format,
        perturbation: 'no-string-attrs',
        text: seedNamed([call], { indent, attrs: false }),
        truth: 'call',
        calls: [call],
      });
      add({
        format,
        perturbation: 'lead-in',
        text: `I'll run it now.\n\n${one}`,
        truth: 'call',
        calls: [call],
        prose: "I'll run it now.",
      });
      add({
        format,
        perturbation: 'missing-required',
        text: seedNamed([{ name: tool, arguments: { note: 'x' } }], { indent }),
        truth: 'content',
        calls: [],
      });
      add({
        format,
        perturbation: 'inline-code',
        text: `Write it as \`${one.replace(/\n/g, ' ')}\` and PicoClaw runs it.`,
        truth: 'content',
        calls: [],
      });
    }
    // two calls in one block, as the template allows
    if (tool === 'write_file') {
      const calls = [{ name: 'read_file', arguments: ARGS18['read_file']! }, call];
      add({
        format: 'seed-named-flat',
        perturbation: 'two-calls',
        text: seedNamed(calls),
        truth: 'call',
        calls,
      });
      // one of the two undeclared: the block is text
      add({
        format: 'seed-named-flat',
        perturbation: 'one-undeclared',
        text: seedNamed([{ name: 'fetch_page', arguments: { url: 'x' } }, call]),
        truth: 'content',
        calls: [],
      });
    }
    // a call fused into another's arguments as a key: text in every envelope
    const other = tool === 'read_file' ? 'get_weather' : 'read_file';
    const fused = { ...args, [`${other}(${other === 'read_file' ? 'path' : 'city'}`]: 'x' };
    const bodies = [
      ['fused-json-list', `[${JSON.stringify({ name: tool, arguments: fused })}]`],
      ['fused-json', JSON.stringify({ name: tool, arguments: fused })],
      ['fused-hermes', `<tool_call>\n${JSON.stringify({ name: tool, arguments: fused })}\n</tool_call>`],
    ] as const;
    for (const [format, text] of bodies)
      add({ format, perturbation: 'fused-call-key', text, truth: 'content', calls: [] });
  }
  return out;
}

/**
 * Issue 27 items 1-7: one request whose cost was a product of two sizes it controls. For each,
 * in a fresh process: wall time, the loop's longest delay, /health's longest wait, the process's
 * peak RSS, and the bytes the upstream received. The real app (buildApp) on loopback in front of
 * a scripted upstream; only public entry points (buildApp, loadConfig), so the same script
 * measures an older checkout for the before column (bench/README.md, "One request, two sizes").
 *
 *   node --import tsx bench/products.ts <item>     (one item per process: its peak RSS is its own)
 *   items: lark, starts-prefix, starts-memory, starts-oom, system, system-merge, attributes, schema,
 *   root-numbers, root-integers, held
 */
import { completion, during, scriptedApp, type UpstreamHandler } from './lib/scripted-app.js';

const item = process.argv[2] ?? 'lark';
const pair = await scriptedApp(
  {},
  item === 'system-merge' ? { defaults: { historyRepair: { mergeSameRole: true } } } : {},
);
const { origin } = pair;

const chunk = (delta: unknown, extra: Record<string, unknown> = {}, index = 0) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index, delta, finish_reason: null }], ...extra })}\n\n`;
const text =
  (content: string): UpstreamHandler =>
  (_b, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(completion({ role: 'assistant', content }));
  };
const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

async function post(path: string, body: unknown): Promise<number> {
  const r = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  await r.arrayBuffer();
  return r.status;
}

const requests: Record<string, () => Promise<number>> = {
  // item 1: rules that each refer to the next three times, 12 deep, a 16-character literal at
  // the bottom (a 252-byte grammar; 3^12 x 16 characters per marker spelled out)
  lark: () => {
    const rules = ['start: r0'];
    for (let d = 0; d < 12; d++) rules.push(`r${d}: r${d + 1} r${d + 1} r${d + 1}`);
    rules.push('r12: "0123456789abcdef"');
    pair.handler = text('done');
    const tools = [
      {
        type: 'custom',
        name: 'patch',
        format: { type: 'grammar', syntax: 'lark', definition: rules.join('\n') },
      },
    ];
    return post('/v1/responses', { model: 'm1', input: 'x', tools });
  },
  // item 2: 4,096 tools named 512 x "a" + i, an answer of 512 "a" in 4-character chunks
  'starts-prefix': () => {
    const prefix = 'a'.repeat(512);
    pair.handler = (_b, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let out = chunk({ role: 'assistant', content: '' });
      for (let i = 0; i < prefix.length; i += 4) out += chunk({ content: prefix.slice(i, i + 4) });
      res.end(`${out}data: [DONE]\n\n`);
    };
    const tools = Array.from({ length: 4096 }, (_, i) => ({
      type: 'function',
      function: { name: `${prefix}${i}` },
    }));
    return post('/v1/chat/completions', {
      model: 'm1',
      stream: true,
      tool_choice: 'auto',
      messages: [{ role: 'user', content: 'x' }],
      tools,
    });
  },
  // item 2: 2,048 tools with 2,000-character names, n: 8, each choice's first content "<x"
  'starts-memory': () => {
    pair.handler = (_b, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let out = '';
      for (let c = 0; c < 8; c++) out += chunk({ role: 'assistant', content: '<x' }, {}, c);
      res.end(`${out}data: [DONE]\n\n`);
    };
    const tools = Array.from({ length: 2048 }, (_, i) => ({
      type: 'function',
      function: { name: `${'n'.repeat(1995)}${String(i).padStart(5, '0')}` },
    }));
    return post('/v1/chat/completions', {
      model: 'm1',
      n: 8,
      stream: true,
      tool_choice: 'auto',
      messages: [{ role: 'user', content: 'x' }],
      tools,
    });
  },
  // item 2 as the issue measured it: 4,096 tools with 4,000-character names (16.6 MB), n: 32
  // (before: out of heap, SIGABRT after 25 s at 4.2 GB; not run against the old code here)
  'starts-oom': () => {
    pair.handler = (_b, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let out = '';
      for (let c = 0; c < 32; c++) out += chunk({ role: 'assistant', content: '<x' }, {}, c);
      res.end(`${out}data: [DONE]\n\n`);
    };
    const tools = Array.from({ length: 4096 }, (_, i) => ({
      type: 'function',
      function: { name: `${'n'.repeat(3995)}${String(i).padStart(5, '0')}` },
    }));
    return post('/v1/chat/completions', {
      model: 'm1',
      n: 32,
      stream: true,
      tool_choice: 'auto',
      messages: [{ role: 'user', content: 'x' }],
      tools,
    });
  },
  // item 3: 20k system messages with content parts before the first assistant turn
  system: () => {
    pair.handler = text('done');
    const messages = [
      { role: 'user', content: 'hi' },
      ...Array.from({ length: 20_000 }, (_, i) => ({
        role: 'system',
        content: [{ type: 'text', text: `rule ${i}` }],
      })),
    ];
    return post('/v1/chat/completions', { model: 'm1', messages });
  },
  // item 3: mergeSameRole, 20k user messages with parts
  'system-merge': () => {
    pair.handler = text('done');
    const messages = Array.from({ length: 20_000 }, (_, i) => ({
      role: 'user',
      content: [{ type: 'text', text: `p${i}` }],
    }));
    return post('/v1/chat/completions', { model: 'm1', messages });
  },
  // item 4: 64 KB of attributes naming the tool, non-streamed
  attributes: () => {
    let attrs = '';
    for (let i = 0; attrs.length < 64 * 1024; i++) attrs += ` a${i}="get_weather"`;
    pair.handler = text(`<x${attrs}/>`);
    return post('/v1/chat/completions', {
      model: 'm1',
      tool_choice: 'auto',
      messages: [{ role: 'user', content: 'x' }],
      tools: [weather],
    });
  },
  // item 5: one tool with a 1M-value enum, 100 structured calls
  schema: () => {
    const values = Array.from({ length: 1_000_000 }, (_, i) => `v${i}`);
    const tools = [
      {
        type: 'function',
        function: {
          name: 'pick',
          parameters: { type: 'object', properties: { v: { type: 'string', enum: values } } },
        },
      },
    ];
    pair.handler = (_b, res) => {
      const calls = Array.from({ length: 100 }, (_, i) => ({
        id: `c${i}`,
        type: 'function',
        function: { name: 'pick', arguments: `{"v":"v${i}"}` },
      }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(completion({ role: 'assistant', content: null, tool_calls: calls }));
    };
    return post('/v1/chat/completions', { model: 'm1', messages: [{ role: 'user', content: 'x' }], tools });
  },
  // item 6: 1M top-level members spelled 1.0 (13.9 MB), the request rewritten (a tool declared);
  // since protocol/json-keys.ts both rows measure the 400 given before the parse
  'root-numbers': () => {
    pair.handler = text('done');
    const members: string[] = [];
    for (let i = 0; i < 1_000_000; i++) members.push(`"k${i}":1.0`);
    return post(
      '/v1/chat/completions',
      `{"model":"m1","messages":[{"role":"user","content":"x"}],"tools":[${JSON.stringify(weather)}],${members.join(',')}}`,
    );
  },
  // item 6's baseline: the same members spelled as integers (nothing to keep)
  'root-integers': () => {
    pair.handler = text('done');
    const members: string[] = [];
    for (let i = 0; i < 1_000_000; i++) members.push(`"k${i}":1`);
    return post(
      '/v1/chat/completions',
      `{"model":"m1","messages":[{"role":"user","content":"x"}],"tools":[${JSON.stringify(weather)}],${members.join(',')}}`,
    );
  },
  // item 7: a held streamed turn, 200 chunks each with a 1 MB extra field
  held: () => {
    const extra = 'x'.repeat(1024 * 1024);
    pair.handler = (_b, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const next = () => {
        if (i === 200) {
          res.end('data: [DONE]\n\n');
          return;
        }
        res.write(chunk({ content: `part ${i++} ` }, { extra }), next);
      };
      res.write(chunk({ role: 'assistant', content: '' }), next);
    };
    return post('/v1/chat/completions', {
      model: 'm1',
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
      tools: [weather],
    });
  },
};

const { wallMs, loopMs, healthMs, result: status } = await during(origin, requests[item]!);
process.stdout.write(
  `${JSON.stringify({
    item,
    status,
    wallMs: Math.round(wallMs),
    loopMs: Math.round(loopMs),
    healthMs: Math.round(Math.max(healthMs, loopMs)),
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    upstreamBytes: pair.upstreamBytes(),
  })}\n`,
);
await pair.close();
process.exit(0);

/**
 * Issue 26: content a model cannot take is degraded, never refused, on every front door,
 * streamed and not, through the real server against the simulator: a PDF (in a Messages
 * tool_result, a Responses input_file, a chat file part) reaches the upstream as its text; an
 * image reaches a text-only llama-server as a note and a vision one unchanged; a 2 MB tool
 * result is cut under maxToolResultTokens; the same bytes go upstream turn over turn.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveCapabilities } from '../../server/capability-probe.js';
import { encryptedPdf, textPdf } from '../support/pdf.js';
import { startStack, type Stack } from '../server/stack.js';

const PDF = textPdf(['The answer is 734921.', 'Second page.']).toString('base64');
const IMG = `data:image/png;base64,${Buffer.alloc(300).toString('base64')}`;

function upstreamText(stack: Stack): string {
  return stack.sim.requests.at(-1)!.rawBody;
}

describe('degraded content: text-only llama-server, cap on', () => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'llama-server', scenario: 'demo' },
      file: { defaults: { maxToolResultTokens: 2000, vision: false } },
    });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => stack.close());

  for (const stream of [false, true]) {
    it(`messages${stream ? ' (streamed)' : ''}: a PDF in a tool_result becomes its text, an encrypted one a note`, async () => {
      const params = {
        model: 'sim',
        max_tokens: 100,
        messages: [
          { role: 'user' as const, content: 'Read it.' },
          {
            role: 'assistant' as const,
            content: [
              { type: 'tool_use' as const, id: 'toolu_1', name: 'Read', input: { file_path: 'a.pdf' } },
            ],
          },
          {
            role: 'user' as const,
            content: [
              {
                type: 'tool_result' as const,
                tool_use_id: 'toolu_1',
                content: [
                  { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
                  {
                    type: 'document',
                    title: 'locked.pdf',
                    source: {
                      type: 'base64',
                      media_type: 'application/pdf',
                      data: encryptedPdf().toString('base64'),
                    },
                  },
                ] as never,
              },
            ],
          },
        ],
        tools: [
          {
            name: 'Read',
            input_schema: { type: 'object' as const, properties: { file_path: { type: 'string' } } },
          },
        ],
      };
      const msg = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      expect(msg.type).toBe('message');
      const sent = upstreamText(stack);
      expect(sent).toContain('The answer is 734921.');
      expect(sent).toContain('text extracted by the proxy');
      expect(sent).toContain('[document not read: locked.pdf (application/pdf');
      expect(sent).not.toContain('"type":"file"');
    });

    it(`responses${stream ? ' (streamed)' : ''}: input_file and input_image degrade; the image as a note`, async () => {
      const params = {
        model: 'sim',
        input: [
          {
            role: 'user' as const,
            content: [
              { type: 'input_text' as const, text: 'What is in these?' },
              {
                type: 'input_file' as const,
                filename: 'r.pdf',
                file_data: `data:application/pdf;base64,${PDF}`,
              },
              { type: 'input_image' as const, image_url: IMG, detail: 'auto' as const },
            ],
          },
        ],
      };
      const res = stream
        ? await stack.client.responses.stream(params).finalResponse()
        : await stack.client.responses.create(params);
      expect(res.status).toBe('completed');
      const sent = upstreamText(stack);
      expect(sent).toContain('The answer is 734921.');
      expect(sent).toContain('[image omitted: image/png, 300 B; this model cannot read images]');
    });

    it(`chat${stream ? ' (streamed)' : ''}: a file part and an image in a tool result; a 2 MB tool result is cut`, async () => {
      const big = Array.from({ length: 40_000 }, (_, i) => `log line ${i} ${'y'.repeat(40)}`).join('\n');
      const messages = [
        {
          role: 'user',
          content: [
            { type: 'file', file: { filename: 'r.pdf', file_data: `data:application/pdf;base64,${PDF}` } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: big },
        { role: 'user', content: [{ type: 'image_url', image_url: { url: IMG } }] },
      ];
      const body = {
        model: 'sim',
        messages,
        tools: [{ type: 'function', function: { name: 'run', parameters: { type: 'object' } } }],
        stream,
      };
      const res = await fetch(`${stack.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      await res.text();
      const sent = upstreamText(stack);
      expect(sent.length).toBeLessThan(20_000);
      expect(sent).toContain('re-run with a narrower command');
      expect(sent).toContain('The answer is 734921.');
      expect(sent).toContain('[image omitted');
      // Turn over turn: the same request gives the same bytes upstream.
      const again = await fetch(`${stack.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await again.text();
      expect(upstreamText(stack)).toBe(sent);
    });
    it(`messages${stream ? ' (streamed)' : ''}: a binary dump and a result of many text blocks are cut to the cap as a whole`, async () => {
      // 2 MB of NULs (a binary file printed by a shell) and five text blocks of ~1,700 tokens each.
      const dump = `${'\0'.repeat(100)}\n`.repeat(20_000);
      const block = Array.from({ length: 100 }, (_, i) => `line ${i} ${'z'.repeat(40)}`).join('\n');
      const use = (id: string) => ({
        type: 'tool_use' as const,
        id,
        name: 'Bash',
        input: { command: 'cat' },
      });
      const params = {
        model: 'sim',
        max_tokens: 100,
        messages: [
          { role: 'user' as const, content: 'Dump them.' },
          { role: 'assistant' as const, content: [use('toolu_a'), use('toolu_b')] },
          {
            role: 'user' as const,
            content: [
              { type: 'tool_result' as const, tool_use_id: 'toolu_a', content: dump },
              {
                type: 'tool_result' as const,
                tool_use_id: 'toolu_b',
                content: Array.from({ length: 5 }, () => ({ type: 'text' as const, text: block })),
              },
            ],
          },
        ],
        tools: [{ name: 'Bash', input_schema: { type: 'object' as const, properties: {} } }],
      };
      const msg = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      expect(msg.type).toBe('message');
      const sent = JSON.parse(upstreamText(stack)) as { messages: Array<{ role: string; content: unknown }> };
      const results = sent.messages.filter((m) => m.role === 'tool');
      expect(results).toHaveLength(2);
      for (const r of results) {
        const text = typeof r.content === 'string' ? r.content : JSON.stringify(r.content);
        expect(text).toContain('re-run with a narrower command');
        // At least a token per NUL, a third per ASCII character: under the cap (2000) and its markers.
        let tokens = 0;
        for (const ch of typeof r.content === 'string'
          ? r.content
          : (r.content as Array<{ text?: string }>).map((p) => p.text ?? '').join(''))
          tokens += /[\x20-\x7e\n\t]/.test(ch) ? 1 / 3 : 1;
        expect(tokens).toBeLessThan(2000 + 5 * 100);
        expect(tokens).toBeGreaterThan(1000);
      }
    });
  }

  it('counts what it degraded by model, api and kind', async () => {
    const text = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(text).toMatch(
      /toolproof_degraded_content_total\{model="sim",api="messages",kind="document-text"\} [1-9]/,
    );
    expect(text).toMatch(
      /toolproof_degraded_content_total\{model="sim",api="messages",kind="document-note"\} [1-9]/,
    );
    expect(text).toMatch(
      /toolproof_degraded_content_total\{model="sim",api="responses",kind="image-note"\} [1-9]/,
    );
    expect(text).toMatch(
      /toolproof_degraded_content_total\{model="sim",api="chat",kind="tool-result-cut"\} [1-9]/,
    );
  });
});

describe('content toolproof cannot fetch or that chat has no block for: a note or its text, never a 400', () => {
  // Each was a 400 that the agent's history sent again on every later turn.
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({ sim: { scenario: 'demo' } });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => stack.close());

  for (const stream of [false, true]) {
    it(`responses${stream ? ' (streamed)' : ''}: an input_image by file_id becomes a note`, async () => {
      const params = {
        model: 'sim',
        input: [
          {
            role: 'user' as const,
            content: [
              { type: 'input_text' as const, text: 'What is in it?' },
              { type: 'input_image' as const, file_id: 'file-img1', detail: 'auto' as const },
            ],
          },
        ],
      };
      const res = stream
        ? await stack.client.responses.stream(params).finalResponse()
        : await stack.client.responses.create(params);
      expect(res.status).toBe('completed');
      expect(upstreamText(stack)).toContain(
        '[document not read: image: it is a file_id, and the proxy has no file store]',
      );
    });

    it(`messages${stream ? ' (streamed)' : ''}: an image by file_id becomes a note; search results their text, in user content and in a tool_result`, async () => {
      const params = {
        model: 'sim',
        max_tokens: 100,
        messages: [
          { role: 'user' as const, content: 'Search it.' },
          {
            role: 'assistant' as const,
            content: [{ type: 'tool_use' as const, id: 'toolu_1', name: 'search', input: { q: 'x' } }],
          },
          {
            role: 'user' as const,
            content: [
              {
                type: 'tool_result' as const,
                tool_use_id: 'toolu_1',
                content: [
                  {
                    type: 'search_result' as const,
                    source: 'https://wiki.example/answer',
                    title: 'The answer',
                    content: [{ type: 'text' as const, text: 'The answer is 5150.' }],
                  },
                ],
              },
              {
                type: 'search_result' as const,
                source: 'kb://notes/7',
                title: 'Notes',
                content: [
                  { type: 'text' as const, text: 'First line.' },
                  { type: 'text' as const, text: 'Second line.' },
                ],
                citations: { enabled: true },
              },
              { type: 'image' as const, source: { type: 'file' as const, file_id: 'file_011' } },
              { type: 'text' as const, text: 'And this?' },
            ],
          },
        ],
        tools: [{ name: 'search', input_schema: { type: 'object' as const, properties: {} } }],
      };
      const msg = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      expect(msg.type).toBe('message');
      const sent = JSON.parse(upstreamText(stack)) as { messages: Array<{ role: string; content: unknown }> };
      const tool = sent.messages.find((m) => m.role === 'tool');
      expect(tool?.content).toBe(
        '[search result: The answer (https://wiki.example/answer)]\nThe answer is 5150.',
      );
      const user = JSON.stringify(sent.messages.at(-1));
      expect(user).toContain('[search result: Notes (kb://notes/7)]\\nFirst line.\\n\\nSecond line.');
      expect(user).toContain('[document not read: image: it is a file_id, and the proxy has no file store]');
    });
  }
});

describe('a session begun on the vendor API, resumed through toolproof: its hosted tools become notes', () => {
  // Claude Code's WebSearch and Codex's web_search run on Anthropic's and OpenAI's servers; a
  // session resumed against toolproof carries their blocks and items, which were a 400 on every turn.
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({ sim: { scenario: 'demo' } });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => stack.close());

  for (const stream of [false, true]) {
    it(`messages${stream ? ' (streamed)' : ''}: server_tool_use and web_search_tool_result`, async () => {
      const params = {
        model: 'sim',
        max_tokens: 100,
        messages: [
          { role: 'user' as const, content: 'Who won?' },
          {
            role: 'assistant' as const,
            content: [
              { type: 'text', text: 'Let me search.' },
              {
                type: 'server_tool_use',
                id: 'srvtoolu_1',
                name: 'web_search',
                input: { query: 'final score' },
              },
              {
                type: 'web_search_tool_result',
                tool_use_id: 'srvtoolu_1',
                content: [
                  {
                    type: 'web_search_result',
                    url: 'https://news.example/final',
                    title: 'The final',
                    encrypted_content: 'EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5',
                    page_age: null,
                  },
                ],
              },
              { type: 'text', text: 'Team A won.' },
            ] as never,
          },
          { role: 'user' as const, content: 'And the score?' },
        ],
      };
      const msg = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      expect(msg.type).toBe('message');
      const sent = JSON.parse(upstreamText(stack)) as { messages: Array<{ role: string; content: string }> };
      const assistant = sent.messages.find((m) => m.role === 'assistant')!;
      expect(assistant.content).toBe(
        'Let me search.\n[web_search ran on the API this conversation began on, with {"query":"final score"}]' +
          '\n[web_search result from the API this conversation began on gave: The final (https://news.example/final)]' +
          '\nTeam A won.',
      );
      expect(upstreamText(stack)).not.toContain('EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5');
    });

    it(`responses${stream ? ' (streamed)' : ''}: a web_search_call item`, async () => {
      const params = {
        model: 'sim',
        input: [
          { role: 'user' as const, content: 'Who won?' },
          {
            type: 'web_search_call' as const,
            id: 'ws_1',
            status: 'completed' as const,
            action: { type: 'search' as const, query: 'final score' },
          },
          {
            type: 'message' as const,
            id: 'msg_1',
            role: 'assistant' as const,
            status: 'completed' as const,
            content: [{ type: 'output_text' as const, text: 'Team A won.', annotations: [] }],
          },
          { role: 'user' as const, content: 'And the score?' },
        ],
      };
      const res = stream
        ? await stack.client.responses.stream(params as never).finalResponse()
        : await stack.client.responses.create(params as never);
      expect(res.status).toBe('completed');
      const sent = JSON.parse(upstreamText(stack)) as { messages: Array<{ role: string; content: string }> };
      expect(sent.messages.find((m) => m.role === 'assistant')!.content).toBe(
        '[web_search_call ran on the API this conversation began on, with {"query":"final score"}; its result is not available here]\nTeam A won.',
      );
    });

    // Compacted on the vendor's API (Anthropic's server-side compaction, OpenAI's
    // /v1/responses/compact, which Codex uses there): the compaction opens every later request.
    it(`messages${stream ? ' (streamed)' : ''}: a compaction block opens the conversation, three turns`, async () => {
      const messages: Anthropic.MessageParam[] = [
        {
          role: 'assistant',
          content: [
            {
              type: 'compaction',
              content: 'The user asked for the audit number; it is 58213.',
              encrypted_content: 'EqQBCkYICxgCKkDcompact',
              signature: 'EuYBCkQYsig',
            },
          ] as never,
        },
        { role: 'user', content: 'Go on.' },
      ];
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const params = { model: 'sim', max_tokens: 100, messages };
        const msg = stream
          ? await anthropic.messages.stream(params).finalMessage()
          : await anthropic.messages.create(params);
        expect(msg.type).toBe('message');
        const sent = JSON.parse(upstreamText(stack)) as {
          messages: Array<{ role: string; content: string }>;
        };
        seen.push(JSON.stringify(sent.messages[0]));
        messages.push({ role: 'assistant', content: msg.content }, { role: 'user', content: `and ${i}?` });
      }
      expect(JSON.parse(seen[0]!)).toEqual({
        role: 'assistant',
        content:
          '[summary of the earlier conversation, written when the API this conversation began on compacted it]\n' +
          'The user asked for the audit number; it is 58213.\n',
      });
      expect(new Set(seen).size).toBe(1);
      expect(upstreamText(stack)).not.toContain('EqQBCkYICxgCKkDcompact');
    });

    it(`messages${stream ? ' (streamed)' : ''}: a container_upload block becomes a note`, async () => {
      const params = {
        model: 'sim',
        max_tokens: 100,
        messages: [
          {
            role: 'user' as const,
            content: [
              { type: 'text', text: 'Plot this.' },
              { type: 'container_upload', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' },
            ] as never,
          },
        ],
      };
      const msg = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      expect(msg.type).toBe('message');
      const sent = JSON.parse(upstreamText(stack)) as { messages: Array<{ role: string; content: string }> };
      expect(sent.messages.find((m) => m.role === 'user')!.content).toBe(
        'Plot this.\n\n[file file_011CNha8iCJcU1wXNR6q4V8w was uploaded to the code-execution container of the API this conversation began on; it is not available here]',
      );
    });

    // Anthropic's server-side fallback block: its API accepts it back and renders nothing of it.
    it(`messages${stream ? ' (streamed)' : ''}: a fallback block is left out, as Anthropic's API leaves it out`, async () => {
      const params = {
        model: 'sim',
        max_tokens: 100,
        messages: [
          { role: 'user' as const, content: 'Explain the exploit.' },
          {
            role: 'assistant' as const,
            content: [
              { type: 'text', text: 'I will not.' },
              {
                type: 'fallback',
                from: { model: 'claude-opus-5' },
                to: { model: 'claude-sonnet-5' },
                trigger: { type: 'refusal', category: 'cyber' },
              },
              { type: 'text', text: ' Here is a safer overview.' },
            ] as never,
          },
          { role: 'user' as const, content: 'Go on.' },
        ],
      };
      const msg = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      expect(msg.type).toBe('message');
      const sent = JSON.parse(upstreamText(stack)) as { messages: Array<{ role: string; content: string }> };
      expect(sent.messages.find((m) => m.role === 'assistant')!.content).toBe(
        'I will not. Here is a safer overview.',
      );
    });

    it(`responses${stream ? ' (streamed)' : ''}: a compaction item and a tool search's items`, async () => {
      const params = {
        model: 'sim',
        input: [
          { role: 'user' as const, content: 'Fix the bug.' },
          { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAAABpCompacted' },
          {
            type: 'tool_search_call',
            id: 'tsc_1',
            call_id: 'call_ts',
            execution: 'client',
            arguments: { query: 'git' },
            status: 'completed',
          },
          {
            type: 'tool_search_output',
            id: 'tso_1',
            call_id: 'call_ts',
            execution: 'client',
            status: 'completed',
            tools: [{ type: 'function', name: 'git_log', parameters: { type: 'object', properties: {} } }],
          },
          { role: 'user' as const, content: 'Go on.' },
        ],
      };
      const res = stream
        ? await stack.client.responses.stream(params as never).finalResponse()
        : await stack.client.responses.create(params as never);
      expect(res.status).toBe('completed');
      const sent = JSON.parse(upstreamText(stack)) as { messages: Array<{ role: string; content: string }> };
      expect(sent.messages.find((m) => m.role === 'assistant')!.content).toBe(
        '[the earlier conversation was compacted on the API this conversation began on; that summary is encrypted or empty and cannot be read here]\n\n' +
          '[tool_search_call ran on the API this conversation began on, with {"execution":"client","arguments":{"query":"git"}}; its result is not available here]\n\n' +
          '[tool_search_output ran on the API this conversation began on, with {"execution":"client"}; it gave: git_log]\n',
      );
      expect(upstreamText(stack)).not.toContain('gAAAAABpCompacted');
    });
  }
});

describe('capabilities asked of the backend', () => {
  it('llama-server with --mmproj: vision resolved true, images pass unchanged; n_ctx shown in both model lists', async () => {
    const stack = await startStack({ sim: { personality: 'llama-server', vision: true, nCtx: 32768 } });
    try {
      const config = await resolveCapabilities(stack.app.toolproof.config);
      expect(config.defaults.vision).toBe(true);
      expect(config.defaults.contextWindow).toBe(32768);
      const text = await resolveCapabilities(
        await startStack({ sim: { personality: 'llama-server' } }).then(async (s) => {
          const c = s.app.toolproof.config;
          await s.close();
          return c;
        }),
      );
      expect(text.defaults.vision).toBe('auto'); // that upstream is gone: unknown stays auto
      const res = await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: IMG } }] }],
      });
      expect(res.choices[0]).toBeDefined();
      expect(stack.sim.requests.at(-1)!.rawBody).toContain(IMG);
      const list = (await (await fetch(`${stack.url}/models`)).json()) as {
        data: Array<Record<string, unknown>>;
      };
      expect(list.data[0]).toMatchObject({ context_window: 32768, max_model_len: 32768 });
      const anth = (await (
        await fetch(`${stack.url}/models`, { headers: { 'anthropic-version': '2023-06-01' } })
      ).json()) as {
        data: Array<Record<string, unknown>>;
      };
      expect(anth.data[0]).toMatchObject({ max_input_tokens: 32768 });
    } finally {
      await stack.close();
    }
  });

  it('a text-only llama-server says so in /props; vLLM gives its max_model_len', async () => {
    const llama = await startStack({ sim: { personality: 'llama-server' } });
    const vllm = await startStack({ sim: { personality: 'vllm', maxModelLen: 8192 } });
    try {
      expect((await resolveCapabilities(llama.app.toolproof.config)).defaults.vision).toBe(false);
      const v = await resolveCapabilities(vllm.app.toolproof.config);
      expect(v.defaults).toMatchObject({ vision: 'auto', contextWindow: 8192 });
    } finally {
      await llama.close();
      await vllm.close();
    }
  });

  it('a configured contextWindow is what the model list says, over the backend max_model_len', async () => {
    // the proxy's own cap and overflow mapping use the configured window: the list must agree
    const vllm = await startStack({
      sim: { personality: 'vllm', maxModelLen: 131072 },
      file: { defaults: { contextWindow: 32768 } },
    });
    try {
      const list = (await (await fetch(`${vllm.url}/models`)).json()) as {
        data: Array<Record<string, unknown>>;
      };
      expect(list.data[0]).toMatchObject({ context_window: 32768, max_model_len: 32768 });
    } finally {
      await vllm.close();
    }
  });

  it('the simulator refuses an image like a text-only vLLM does', async () => {
    const vllm = await startStack({ sim: { personality: 'vllm', vision: false } });
    try {
      const res = await fetch(`${vllm.sim.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'x',
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: IMG } }] }],
        }),
      });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('is not a multimodal model');
    } finally {
      await vllm.close();
    }
  });
});

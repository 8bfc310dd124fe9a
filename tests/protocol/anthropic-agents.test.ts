/**
 * The request shapes Claude Code sends on /v1/messages, translated to chat: mid-conversation
 * system turns, Anthropic-defined tools, server tools, deferred tools with tool_reference,
 * thinking / output_config / context_management. The recorded requests are Claude Code
 * 2.1.332's own (tests/fixtures/agents/, see their _source).
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { repairHistory, SYSTEM_TURN_CLOSE, SYSTEM_TURN_OPEN } from '../../policies/history-repair/repair.js';
import { toChatRequest, translateRequest } from '../../protocol/anthropic/request.js';
import type { MessagesRequest } from '../../protocol/anthropic/types.js';
import type { ChatMessage, ToolDef } from '../../protocol/openai.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';

const recorded = (name: string): MessagesRequest =>
  (
    JSON.parse(readFileSync(new URL(`../fixtures/agents/${name}`, import.meta.url), 'utf8')) as {
      body: MessagesRequest;
    }
  ).body;

const repair = (messages: ChatMessage[], systemMessages: 'merge' | 'keep' = 'merge') =>
  repairHistory(messages, { ...DEFAULT_MODEL_SETTINGS.historyRepair, systemMessages });

const req = (extra: Partial<MessagesRequest> = {}): MessagesRequest => ({
  model: 'm',
  max_tokens: 10,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

const fn = (chat: { tools?: ToolDef[] }, name: string) => chat.tools?.find((t) => t.function.name === name);

describe('system turns inside messages', () => {
  it('a system turn is a system message where it stands (text blocks joined)', () => {
    const chat = toChatRequest(
      req({
        messages: [
          { role: 'user', content: 'task' },
          {
            role: 'system',
            content: [
              { type: 'text', text: '# Env' },
              { type: 'text', text: 'cwd: /w' },
            ],
          },
        ],
      }),
    );
    expect(chat.messages).toEqual([
      { role: 'user', content: 'task' },
      { role: 'system', content: '# Env\n\ncwd: /w' },
    ]);
  });

  it('history repair folds opening system turns into the leading one and sends later ones as user turns', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'task' },
      { role: 'system', content: 'env' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'more' },
      { role: 'system', content: 'reminder' },
    ];
    const { messages: out, effects } = repair(messages);
    expect(out).toEqual([
      { role: 'system', content: 'S\n\nenv' },
      { role: 'user', content: 'task' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'more' },
      { role: 'user', content: `${SYSTEM_TURN_OPEN}reminder${SYSTEM_TURN_CLOSE}` },
    ]);
    expect(effects.map((e) => e.kind).sort()).toEqual(['merged-system', 'system-as-user']);
    // Idempotent: the repaired history is left as it is.
    expect(repair(out).effects).toEqual([]);
    // 'keep' sends them as the client wrote them.
    expect(repair(messages, 'keep').messages).toEqual(messages);
  });

  it('an opening system turn with no system prompt becomes the leading system message', () => {
    const { messages } = repair([
      { role: 'user', content: 'task' },
      { role: 'system', content: 'env' },
    ]);
    expect(messages).toEqual([
      { role: 'system', content: 'env' },
      { role: 'user', content: 'task' },
    ]);
  });

  it("Claude Code's recorded turns 1 and 4: turn 1's upstream messages are a byte prefix of turn 4's", () => {
    const upstream = (r: MessagesRequest) => repair(toChatRequest(r).messages).messages;
    const one = upstream(recorded('claude-code-2.1.332-turn1.json'));
    const four = upstream(recorded('claude-code-2.1.332-turn4.json'));
    expect(one.map((m) => m.role)).toEqual(['system', 'user']);
    expect(four.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
    expect(String(one[0]!.content)).toContain('# Environment');
    const a = JSON.stringify(one);
    const b = JSON.stringify(four);
    expect(b.startsWith(a.slice(0, -1))).toBe(true);
  });
});

describe("Claude Code's tools", () => {
  const turn1 = recorded('claude-code-2.1.332-turn1.json');
  const turn4 = recorded('claude-code-2.1.332-turn4.json');

  it('deferred tools are declared once a tool_reference loads them; the placeholder never', () => {
    const one = toChatRequest(turn1);
    const four = toChatRequest(turn4);
    expect(fn(one, 'DeferredToolPlaceholder')).toBeUndefined();
    expect(fn(four, 'DeferredToolPlaceholder')).toBeUndefined();
    expect(fn(four, 'WebFetch')?.function.parameters).toMatchObject({
      properties: { url: { type: 'string' } },
    });
    expect(fn(one, 'ToolSearch')).toBeDefined();
    // Every other client tool, in the client's order.
    const names = (turn4.tools ?? [])
      .filter((t) => t.defer_loading !== true || t.name === 'WebFetch')
      .map((t) => t.name);
    expect(four.tools?.map((t) => t.function.name)).toEqual(names);
    // The tool_reference answer is text the model can read, paired with its call.
    const result = four.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'toolu_1');
    expect(result?.content).toBe('Tool WebFetch loaded: it can be called now.');
  });

  it('thinking adaptive turns thinking on; output_config.effort becomes reasoning_effort; the rest is accepted', () => {
    const chat = toChatRequest(turn1);
    expect(turn1.thinking).toEqual({ type: 'adaptive', display: 'omitted' });
    expect(chat.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(chat.reasoning_effort).toBe('high');
    expect(chat).not.toHaveProperty('context_management');
    expect(chat).not.toHaveProperty('metadata');
    expect(chat).not.toHaveProperty('output_config');
  });

  it('output_config.format, and the older output_format of its side queries, are a response_format', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const chat = toChatRequest(req({ output_config: { format: { type: 'json_schema', schema } } }));
    expect(chat.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'output', schema } });
    // Claude Code's memory selection asks so (schema as in its binary's side query).
    const memory = {
      type: 'object',
      properties: { selected_memories: { type: 'array', items: { type: 'string' } } },
      required: ['selected_memories'],
      additionalProperties: false,
    };
    const side = toChatRequest(req({ output_format: { type: 'json_schema', schema: memory } }));
    expect(side.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'output', schema: memory },
    });
  });
});

describe('Anthropic-defined and server tools', () => {
  it('bash and text editor become functions with their documented input', () => {
    const chat = toChatRequest(
      req({
        tools: [
          { type: 'bash_20250124', name: 'bash' },
          { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool', max_characters: 10000 },
          { type: 'text_editor_20250124', name: 'str_replace_editor' },
          { type: 'computer_20250124', name: 'computer', display_width_px: 1024, display_height_px: 768 },
          { type: 'memory_20250818', name: 'memory' },
        ] as never,
      }),
    );
    expect(chat.tools?.map((t) => t.function.name)).toEqual([
      'bash',
      'str_replace_based_edit_tool',
      'str_replace_editor',
      'computer',
      'memory',
    ]);
    expect(fn(chat, 'bash')?.function.parameters).toMatchObject({
      properties: { command: { type: 'string' } },
    });
    const editor = fn(chat, 'str_replace_based_edit_tool')?.function.parameters as {
      properties: { command: { enum: string[] } };
      required: string[];
    };
    expect(editor.properties.command.enum).toEqual(['view', 'create', 'str_replace', 'insert']);
    expect(editor.required).toEqual(['command', 'path']);
    const old = fn(chat, 'str_replace_editor')?.function.parameters as {
      properties: { command: { enum: string[] } };
    };
    expect(old.properties.command.enum).toContain('undo_edit');
    expect(fn(chat, 'computer')?.function.description).toContain('1024x768');
  });

  it('server tools are left out and reported; the rest of the request is kept', () => {
    const { chat, dropped } = translateRequest(
      req({
        tools: [
          { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
          { name: 'Read', input_schema: { type: 'object' } },
          { type: 'web_fetch_20250910', name: 'web_fetch' },
          { type: 'code_execution_20250825', name: 'code_execution' },
        ] as never,
      }),
    );
    expect(dropped).toEqual(['web_search_20250305', 'web_fetch_20250910', 'code_execution_20250825']);
    expect(chat.tools?.map((t) => t.function.name)).toEqual(['Read']);
    // Only server tools: no tools at all go upstream.
    const only = translateRequest(
      req({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] as never }),
    );
    expect(only.chat.tools).toBeUndefined();
    expect(only.dropped).toEqual(['web_search_20250305']);
  });
});

describe('system placement keeps the prefix (issue 22)', () => {
  it('random appending conversations: each turn repaired begins with the previous turn repaired, byte for byte', () => {
    const roles = fc.constantFrom('system', 'user', 'user', 'tool-turn', 'assistant');
    fc.assert(
      fc.property(fc.array(roles, { minLength: 1, maxLength: 14 }), fc.boolean(), (plan, lead) => {
        // The whole conversation; the requests are its prefixes that end before an assistant turn.
        const all: ChatMessage[] = lead ? [{ role: 'system', content: 'S' }] : [];
        let n = 0;
        for (const r of plan) {
          n++;
          if (r === 'tool-turn') {
            all.push({
              role: 'assistant',
              content: null,
              tool_calls: [{ id: `c${n}`, type: 'function', function: { name: 'f', arguments: '{}' } }],
            });
            all.push({ role: 'tool', tool_call_id: `c${n}`, content: `r${n}` });
          } else all.push({ role: r, content: `${r}${n}` });
        }
        const cuts = all.flatMap((m, i) => (m.role === 'assistant' ? [i] : [])).concat(all.length);
        let previous = '';
        for (const cut of cuts) {
          const turn = JSON.stringify(repair(all.slice(0, cut)).messages);
          expect(turn.startsWith(previous.slice(0, -1))).toBe(true);
          previous = turn;
        }
      }),
      { numRuns: 300 },
    );
  });
});

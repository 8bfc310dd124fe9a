/**
 * The request shapes Codex sends on /v1/responses, translated to chat and back: namespace tools,
 * custom (freeform) tools with a Lark or regex format, client-executed typed tools, hosted tools
 * left out, reasoning kept through encrypted_content. The recorded requests are Codex 0.171.0's
 * own (tests/fixtures/agents/, see their _source); the apply_patch grammar is the one in
 * openai/codex codex-rs/core/src/tools/handlers/tool_apply_patch.lark.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { repairHistory } from '../../policies/history-repair/repair.js';
import type { ChatCompletion, ToolDef } from '../../protocol/openai.js';
import { larkMarkers, markerPattern } from '../../protocol/responses/lark-markers.js';
import { decodeReasoning, encodeReasoning } from '../../protocol/responses/reasoning-token.js';
import { translateRequest } from '../../protocol/responses/request.js';
import {
  completionToResponse,
  ResponsesTranslator,
  type TranslatorContext,
} from '../../protocol/responses/stream.js';
import type { ResponsesRequest } from '../../protocol/responses/types.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';

const recorded = (name: string): ResponsesRequest =>
  (
    JSON.parse(readFileSync(new URL(`../fixtures/agents/${name}`, import.meta.url), 'utf8')) as {
      body: ResponsesRequest;
    }
  ).body;

const { _source, ...applyPatchTool } = JSON.parse(
  readFileSync(new URL('../fixtures/agents/codex-apply-patch-tool.json', import.meta.url), 'utf8'),
) as { _source: string; format: { definition: string } };
const APPLY_PATCH_LARK = applyPatchTool.format.definition;

const fn = (tools: ToolDef[] | undefined, name: string) => tools?.find((t) => t.function.name === name);

function respond(request: ResponsesRequest, message: ChatCompletion['choices'][number]['message']) {
  const { catalog } = translateRequest(request);
  let n = 0;
  const ctx: TranslatorContext = { request, newId: (p) => `${p}_${n++}`, createdAt: 0, catalog };
  const completion: ChatCompletion = {
    id: 'c',
    object: 'chat.completion',
    created: 0,
    model: 'm',
    choices: [{ index: 0, message, finish_reason: 'tool_calls' }],
  };
  return completionToResponse(completion, ctx);
}

const call = (name: string, args: unknown) => ({
  role: 'assistant' as const,
  content: null,
  tool_calls: [
    { id: 'call_9', type: 'function' as const, function: { name, arguments: JSON.stringify(args) } },
  ],
});

describe("Codex's recorded requests", () => {
  const one = recorded('codex-0.171.0-turn1.json');
  const two = recorded('codex-0.171.0-turn2.json');

  it('namespace tools are flattened, web_search is left out and reported, the rest kept in order', () => {
    const { chat, dropped } = translateRequest(one);
    expect(dropped).toEqual(['web_search']);
    const names = chat.tools!.map((t) => t.function.name);
    expect(names).toContain('spawn_agent');
    expect(names).toContain('exec_command');
    expect(names.indexOf('view_image')).toBeLessThan(names.indexOf('close_agent'));
    expect(names.indexOf('wait_agent')).toBeLessThan(names.indexOf('get_goal'));
    expect(chat.tools!.length).toBe(one.tools!.length - 2 + 5);
  });

  it("turn 1's upstream messages are a byte prefix of turn 2's (developer turns folded into one system message)", () => {
    const upstream = (r: ResponsesRequest) =>
      repairHistory(translateRequest(r).chat.messages, DEFAULT_MODEL_SETTINGS.historyRepair).messages;
    const a = upstream(one);
    const b = upstream(two);
    expect(a.map((m) => m.role)).toEqual(['system', 'user', 'user']);
    expect(b.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'tool']);
    expect(JSON.stringify(b).startsWith(JSON.stringify(a).slice(0, -1))).toBe(true);
  });

  it('a call of a namespaced tool comes back with its namespace', () => {
    const r = respond(one, call('spawn_agent', { message: 'go' }));
    expect(r.output).toEqual([
      expect.objectContaining({
        type: 'function_call',
        name: 'spawn_agent',
        namespace: 'multi_agent_v1',
        call_id: 'call_9',
      }),
    ]);
    const plain = respond(one, call('exec_command', { cmd: 'ls' }));
    expect(plain.output[0]).not.toHaveProperty('namespace');
  });

  it('a namespaced function_call sent back maps to the same chat name', () => {
    const { chat } = translateRequest({
      ...one,
      input: [
        ...(one.input as never[]),
        {
          type: 'function_call',
          call_id: 'c1',
          name: 'wait_agent',
          namespace: 'multi_agent_v1',
          arguments: '{}',
        },
        { type: 'function_call_output', call_id: 'c1', output: 'done' },
      ],
    });
    const assistant = chat.messages.at(-2)!;
    expect(assistant.tool_calls?.[0]?.function.name).toBe('wait_agent');
  });
});

describe('custom (freeform) tools', () => {
  const base: ResponsesRequest = { model: 'm', input: 'patch it', tools: [applyPatchTool as never] };

  it('the Lark grammar gives the markers the input must start and end with', () => {
    expect(larkMarkers(APPLY_PATCH_LARK)).toEqual({ start: '*** Begin Patch\n', end: '*** End Patch' });
    expect(larkMarkers('start: "a" x\nx: /b/')).toEqual({ start: 'a', end: '' });
    expect(larkMarkers('start: a | b')).toEqual({ start: '', end: '' });
    expect(larkMarkers('nothing: "x"')).toEqual({ start: '', end: '' });
    // Self-reference terminates.
    expect(larkMarkers('start: start "x"')).toEqual({ start: '', end: 'x' });
  });

  it('becomes a function with one string input whose pattern checks the markers', () => {
    const { chat } = translateRequest(base);
    const params = fn(chat.tools, 'apply_patch')!.function.parameters as {
      properties: { input: { type: string; pattern: string; description: string } };
      required: string[];
      additionalProperties: boolean;
    };
    expect(params.required).toEqual(['input']);
    expect(params.additionalProperties).toBe(false);
    expect(params.properties.input.description).toContain('*** Begin Patch');
    const re = new RegExp(params.properties.input.pattern);
    expect(re.test('*** Begin Patch\n*** Add File: a.txt\n+1\n*** End Patch\n')).toBe(true);
    expect(re.test('*** Begin Patch\n*** Add File: a.txt\n+1\n*** End Patch')).toBe(true);
    expect(re.test('{"patch": "*** Begin Patch"}')).toBe(false);
    expect(re.test('*** Begin Patch\n+1\n')).toBe(false);
    expect(markerPattern({ start: '', end: '' })).toBeUndefined();
  });

  it('a regex format is checked on the whole input', () => {
    const { chat } = translateRequest({
      ...base,
      tools: [
        {
          type: 'custom',
          name: 'digits',
          format: { type: 'grammar', syntax: 'regex', definition: '\\d+' },
        } as never,
      ],
    });
    const pattern = (
      fn(chat.tools, 'digits')!.function.parameters as { properties: { input: { pattern: string } } }
    ).properties.input.pattern;
    expect(pattern).toBe('^(?:\\d+)$');
  });

  it('a call comes back as a custom_tool_call with the raw input, streamed as input events', () => {
    const patch = '*** Begin Patch\n*** Add File: proof.txt\n+7391\n*** End Patch\n';
    const r = respond(base, call('apply_patch', { input: patch }));
    expect(r.output).toEqual([
      {
        type: 'custom_tool_call',
        id: 'ctc_1',
        call_id: 'call_9',
        name: 'apply_patch',
        input: patch,
        status: 'completed',
      },
    ]);
  });

  it('custom_tool_call and its output sent back become a chat call and a tool message', () => {
    const { chat } = translateRequest({
      ...base,
      input: [
        { role: 'user', content: 'patch it' },
        {
          type: 'custom_tool_call',
          call_id: 'c1',
          name: 'apply_patch',
          input: '*** Begin Patch\n*** End Patch',
        },
        { type: 'custom_tool_call_output', call_id: 'c1', output: 'Done!' },
      ],
    });
    expect(chat.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: {
              name: 'apply_patch',
              arguments: JSON.stringify({ input: '*** Begin Patch\n*** End Patch' }),
            },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'Done!' },
    ]);
  });

  it('two namespaces declaring the same name are qualified', () => {
    const { chat, catalog } = translateRequest({
      model: 'm',
      input: 'x',
      tools: [
        {
          type: 'namespace',
          name: 'a',
          description: '',
          tools: [{ type: 'function', name: 'run', parameters: {} }],
        },
        { type: 'namespace', name: 'b', description: '', tools: [{ type: 'custom', name: 'run' }] },
      ] as never,
    });
    expect(chat.tools!.map((t) => t.function.name)).toEqual(['a__run', 'b__run']);
    expect(catalog.byChatName.get('b__run')).toEqual({ kind: 'custom', name: 'run', namespace: 'b' });
  });
});

describe('client-executed typed tools', () => {
  const base: ResponsesRequest = {
    model: 'm',
    input: 'ls',
    tools: [{ type: 'local_shell' }, { type: 'shell' }, { type: 'apply_patch' }] as never,
  };

  it('local_shell, shell and apply_patch are functions returned as their own call items', () => {
    const { chat } = translateRequest(base);
    expect(chat.tools!.map((t) => t.function.name)).toEqual(['local_shell', 'shell', 'apply_patch']);
    const shell = respond(
      base,
      call('local_shell', { command: ['bash', '-lc', 'ls'], working_directory: '/w' }),
    );
    expect(shell.output[0]).toEqual({
      type: 'local_shell_call',
      id: 'lsh_1',
      call_id: 'call_9',
      status: 'completed',
      action: {
        type: 'exec',
        command: ['bash', '-lc', 'ls'],
        timeout_ms: null,
        working_directory: '/w',
        env: null,
        user: null,
      },
    });
    const patch = respond(base, call('apply_patch', { operation: { type: 'delete_file', path: 'a' } }));
    expect(patch.output[0]).toMatchObject({
      type: 'apply_patch_call',
      operation: { type: 'delete_file', path: 'a' },
    });
  });

  it('their calls and outputs sent back become chat calls and tool messages', () => {
    const { chat } = translateRequest({
      ...base,
      input: [
        { role: 'user', content: 'ls' },
        {
          type: 'local_shell_call',
          id: 'lsh_1',
          call_id: 'c1',
          status: 'completed',
          action: {
            type: 'exec',
            command: ['ls'],
            timeout_ms: null,
            working_directory: null,
            env: null,
            user: null,
          },
        },
        { type: 'local_shell_call_output', id: 'c1', output: 'a.txt' },
      ],
    });
    expect(chat.messages[1]!.tool_calls![0]!.function).toEqual({
      name: 'local_shell',
      arguments: '{"command":["ls"]}',
    });
    expect(chat.messages[2]).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'a.txt' });
  });
});

describe('reasoning with store: false', () => {
  it('include reasoning.encrypted_content hands out a token that brings the reasoning back next turn', () => {
    const request: ResponsesRequest = {
      model: 'm',
      input: 'x',
      include: ['reasoning.encrypted_content'],
      store: false,
    };
    const r = respond(request, {
      role: 'assistant',
      content: 'hi',
      reasoning_content: 'I think so. ünïcode',
    });
    const item = r.output[0] as { type: string; encrypted_content: string };
    expect(item.type).toBe('reasoning');
    expect(decodeReasoning(item.encrypted_content)).toBe('I think so. ünïcode');
    // Codex sends it back without its content.
    const { chat } = translateRequest({
      model: 'm',
      input: [
        { role: 'user', content: 'x' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: item.encrypted_content },
        { role: 'assistant', content: 'hi' },
      ] as never,
    });
    expect(chat.messages[1]).toEqual({
      role: 'assistant',
      content: 'hi',
      reasoning_content: 'I think so. ünïcode',
    });
    // Another server's encrypted content is opaque: nothing is read from it.
    expect(decodeReasoning('gAAAAB-opaque')).toBeUndefined();
    expect(decodeReasoning(encodeReasoning(''))).toBe('');
    const without = respond(
      { model: 'm', input: 'x' },
      { role: 'assistant', content: 'hi', reasoning_content: 'r' },
    );
    expect(without.output[0]).not.toHaveProperty('encrypted_content');
  });
});

describe('streamed and non-streamed custom and namespaced calls agree', () => {
  it('whatever the split of the arguments, the streamed items equal the non-streamed ones', () => {
    const request: ResponsesRequest = {
      model: 'm',
      input: 'x',
      tools: [
        applyPatchTool as never,
        {
          type: 'namespace',
          name: 'ns',
          description: '',
          tools: [{ type: 'function', name: 'go', parameters: {} }],
        },
        { type: 'local_shell' },
      ] as never,
    };
    const calls = [
      { id: 'c1', name: 'apply_patch', args: JSON.stringify({ input: '*** Begin Patch\n*** End Patch\n' }) },
      { id: 'c2', name: 'go', args: '{"a":1}' },
      { id: 'c3', name: 'local_shell', args: '{"command":["ls"]}' },
    ];
    const whole = respond(request, {
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: c.args },
      })),
    });
    for (const size of [1, 3, 7]) {
      const { catalog } = translateRequest(request);
      let n = 0;
      const t = new ResponsesTranslator({ request, newId: (p) => `${p}_${n++}`, createdAt: 0, catalog });
      const events = [...t.start()];
      calls.forEach((c, index) => {
        for (let i = 0; i < c.args.length; i += size) {
          const first = i === 0;
          events.push(
            ...t.push({
              id: 'c',
              object: 'chat.completion.chunk',
              created: 0,
              model: 'm',
              choices: [
                {
                  index: 0,
                  delta: {
                    tool_calls: [
                      {
                        index,
                        ...(first ? { id: c.id, type: 'function' as const } : {}),
                        function: {
                          ...(first ? { name: c.name } : {}),
                          arguments: c.args.slice(i, i + size),
                        },
                      },
                    ],
                  },
                  finish_reason: null,
                },
              ],
            }),
          );
        }
      });
      events.push(...t.end());
      const done = events.at(-1) as unknown as { response: { output: unknown[] } };
      const strip = (items: unknown[]) => items.map((i) => ({ ...(i as object), id: undefined }));
      expect(strip(done.response.output), `split ${size}`).toEqual(strip(whole.output));
      // A custom call's input goes out once, whole; a function's arguments stream.
      expect(events.filter((e) => e.type === 'response.custom_tool_call_input.delta')).toHaveLength(1);
      const argDeltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
      expect(argDeltas.map((e) => e.delta).join('')).toBe('{"a":1}');
    }
  });
});

/**
 * Sessions that must not die on their content: a sweep of the shapes real agent sessions carry
 * (the APIs' content blocks, items and parts of every type: images by data, URL and file id,
 * documents of every source, audio, refusals, reasoning with signatures and encrypted content,
 * hosted and client-run tools' items, citations, cache_control, a JSON schema beside tools,
 * megabyte tool results), each in an early turn of its own session, then two more turns that
 * re-send the whole history, through the real server and SDKs, on every door, against the
 * simulator as llama-server and as vLLM (text-only and with vision and audio; one with an 8k
 * window; one whose template renders no image of a tool message, vLLM's 500 for one). Each turn must be answered (200); the body the backend answered must be one it takes
 * (llama-server's parser refuses any content part but text, image_url and input_audio, and
 * templates render only system, user, assistant and tool messages); and turns 2-3 must send
 * upstream messages that begin with turn 1's, and the same tools, byte for byte (docs/prefix.md).
 * Then a compaction request (a last user turn forbidding tools, with the tools declared or none)
 * carrying every shape of its door at once (CJK text past an 8k window among them: the compaction
 * is cut as truncation "auto" would, policies/truncation), and a session over an 8k window with an image and a
 * PDF in the user turn and in each of its six tool results (the cut part), the window known or
 * learnt from the backend's refusal; a PDF larger than that window, and three that each fit it
 * and together overflow it.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { textPdf } from '../support/pdf.js';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';

type Obj = Record<string, unknown>;
type DoorName = 'chat' | 'responses' | 'messages';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const PNG_URL = `data:image/png;base64,${PNG}`;
const PDF = textPdf(['The audit number is 58213.']).toString('base64');
const PDF_URL = `data:application/pdf;base64,${PDF}`;
const WAV = Buffer.alloc(800, 7).toString('base64');
/** A megabyte tool output, as an SDK loop sends one (1 MB of log lines). */
const MEGA = Array.from({ length: 20_000 }, (_, k) => `line ${k} ${'x'.repeat(44)}`).join('\n');
const SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'string' } },
  required: ['answer'],
  additionalProperties: false,
};

/** A shape: the history up to the early turn (the door's own wire items) and the request's fields. */
interface Shape {
  door: DoorName;
  name: string;
  history: Obj[];
  fields?: Obj;
  /** Text turn 1's upstream prompt must contain (the shape's note or its text). */
  expect?: string[];
  /** Run only against the backends whose name starts with this (the megabyte results: one is enough). */
  only?: string;
}

// ---------------------------------------------------------------- chat completions
const chatTools = [
  {
    type: 'function',
    function: { name: 'Read', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
  },
];
const chatCall = (id: string) => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'Read', arguments: '{"path":"a"}' } }],
});
const chatUser = (content: unknown): Obj => ({ role: 'user', content });
const CHAT: Shape[] = [
  {
    door: 'chat',
    name: 'image_url with detail (data URL)',
    history: [
      chatUser([
        { type: 'text', text: 'Look.' },
        { type: 'image_url', image_url: { url: PNG_URL, detail: 'high' } },
      ]),
    ],
  },
  {
    door: 'chat',
    name: 'image_url by https URL',
    history: [
      chatUser([
        { type: 'text', text: 'Look.' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
      ]),
    ],
  },
  {
    // older LangChain and hand-rolled clients: the URL as a bare string, not {url}
    door: 'chat',
    name: 'image_url as a bare string (data URL and https URL)',
    history: [
      chatUser([
        { type: 'text', text: 'Look.' },
        { type: 'image_url', image_url: PNG_URL },
        { type: 'image_url', image_url: 'https://example.com/dog.png' },
      ]),
    ],
  },
  {
    door: 'chat',
    name: 'image_url by file: URL',
    history: [
      chatUser([
        { type: 'text', text: 'Look.' },
        { type: 'image_url', image_url: { url: 'file:///home/me/shot.png' } },
      ]),
    ],
  },
  {
    door: 'chat',
    name: 'input_audio',
    history: [
      chatUser([
        { type: 'text', text: 'Listen.' },
        { type: 'input_audio', input_audio: { data: WAV, format: 'wav' } },
      ]),
    ],
  },
  {
    door: 'chat',
    name: 'file by file_data (PDF)',
    history: [
      chatUser([
        { type: 'text', text: 'Read.' },
        { type: 'file', file: { filename: 'r.pdf', file_data: PDF_URL } },
      ]),
    ],
    expect: ['The audit number is 58213.'],
  },
  {
    door: 'chat',
    name: 'file by file_id',
    history: [
      chatUser([
        { type: 'text', text: 'Read.' },
        { type: 'file', file: { file_id: 'file-abc123' } },
      ]),
    ],
  },
  {
    door: 'chat',
    name: 'assistant refusal part and refusal field',
    history: [
      chatUser('Do the bad thing.'),
      { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
      chatUser('Fine, something else.'),
    ],
  },
  {
    door: 'chat',
    name: 'assistant text parts, audio reference, refusal null',
    history: [
      chatUser('Hi.'),
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Hello.' }],
        refusal: null,
        audio: { id: 'audio_abc123' },
      },
      chatUser('Again.'),
    ],
  },
  {
    door: 'chat',
    name: 'tool result with image and file parts',
    history: [
      chatUser('Read a.'),
      chatCall('call_1'),
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: [
          { type: 'text', text: 'here' },
          { type: 'image_url', image_url: { url: PNG_URL } },
          { type: 'file', file: { filename: 'r.pdf', file_data: PDF_URL } },
        ],
      },
    ],
    fields: { tools: chatTools },
  },
  {
    door: 'chat',
    name: 'a megabyte tool result',
    only: 'vLLM text-only',
    history: [
      chatUser('Read a.'),
      chatCall('call_1'),
      { role: 'tool', tool_call_id: 'call_1', content: MEGA },
    ],
    fields: { tools: chatTools },
  },
  {
    door: 'chat',
    name: 'response_format json_schema beside tools',
    history: [chatUser('Answer in JSON.')],
    fields: {
      tools: chatTools,
      response_format: { type: 'json_schema', json_schema: { name: 'a', strict: true, schema: SCHEMA } },
    },
  },
  {
    door: 'chat',
    name: 'cache_control on system, user and tool parts',
    history: [
      {
        role: 'system',
        content: [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }],
      },
      chatUser([{ type: 'text', text: 'Read a.', cache_control: { type: 'ephemeral' } }]),
      chatCall('call_1'),
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' } }],
      },
    ],
    fields: { tools: chatTools },
  },
  {
    door: 'chat',
    name: 'file by bare base64 file_data, input_audio mp3, a named user',
    history: [
      {
        role: 'user',
        name: 'ann',
        content: [
          { type: 'text', text: 'Read and listen.' },
          { type: 'file', file: { filename: 'r.pdf', file_data: PDF } },
          { type: 'input_audio', input_audio: { data: WAV, format: 'mp3' } },
        ],
      },
    ],
    expect: ['The audit number is 58213.'],
  },
  {
    door: 'chat',
    name: 'a call in history whose arguments are cut-off JSON',
    history: [
      chatUser('Read a.'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{"path": "a' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'error: bad arguments' },
    ],
    fields: { tools: chatTools },
  },
  {
    // the deprecated function-calling shape: before, a role templates do not render
    door: 'chat',
    name: 'function_call and the function role',
    history: [
      chatUser('Read a.'),
      { role: 'assistant', content: null, function_call: { name: 'Read', arguments: '{"path":"a"}' } },
      { role: 'function', name: 'Read', content: 'the file says 31337' },
    ],
    fields: { tools: chatTools },
    expect: ['the file says 31337'],
  },
  {
    // the deprecated request fields too (older clients and frameworks): before, sent upstream
    // untouched, which the backends ignore (the model never told of the function)
    door: 'chat',
    name: 'functions and function_call request fields, the function role',
    history: [
      chatUser('Read a.'),
      { role: 'assistant', content: null, function_call: { name: 'Read', arguments: '{"path":"a"}' } },
      { role: 'function', name: 'Read', content: 'the file says 31337' },
    ],
    fields: {
      functions: [chatTools[0]!.function],
      function_call: 'auto',
    },
    expect: ['the file says 31337', '"tools":[{"type":"function","function":{"name":"Read"'],
  },
  {
    // a stop string the calls hold: upstream it cut a forced call's JSON (client-stop.ts)
    door: 'chat',
    name: 'stop beside tools, a call in history holding the stop string',
    history: [
      chatUser('Write a.'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{"path":"```a```"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '```\nfenced\n```' },
    ],
    fields: { tools: chatTools, stop: ['```', '\n\n'] },
  },
  {
    door: 'chat',
    name: 'developer role',
    history: [{ role: 'developer', content: 'Be brief.' }, chatUser('Hi.')],
  },
];

// ---------------------------------------------------------------- Responses
const respTools = [
  {
    type: 'function',
    name: 'Read',
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
    strict: false,
  },
];
const respUser = (content: unknown): Obj => ({ role: 'user', content });
const respCall = (id: string): Obj => ({
  type: 'function_call',
  call_id: id,
  name: 'Read',
  arguments: '{"path":"a"}',
});
const RESP: Shape[] = [
  {
    // about a token a character: past an 8k window at a third of the bytes of English text, which
    // was the backend's refusal every turn though the client asked for truncation (policies/truncation)
    door: 'responses',
    name: 'truncation auto, CJK text past an 8k window',
    history: [
      respUser('中文长文本'.repeat(1000)),
      { role: 'assistant', content: '好的。' },
      respUser('继续说明'.repeat(1250)),
      { role: 'assistant', content: '明白。' },
      respUser('总结一下。'),
    ],
    fields: { truncation: 'auto' },
  },
  {
    door: 'responses',
    name: 'reasoning with encrypted_content',
    history: [
      respUser('Hi.'),
      {
        type: 'reasoning',
        id: 'rs_1',
        summary: [{ type: 'summary_text', text: 'Greeting.' }],
        encrypted_content: 'gAAAAABoPENAIencrypted',
      },
      {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Hi.', annotations: [] }],
      },
      respUser('Again.'),
    ],
  },
  {
    door: 'responses',
    name: 'web_search_call',
    history: [
      respUser('Search.'),
      {
        type: 'web_search_call',
        id: 'ws_1',
        status: 'completed',
        action: { type: 'search', query: 'cats', sources: [{ type: 'url', url: 'https://a.example' }] },
      },
      {
        type: 'message',
        role: 'assistant',
        content: [
          {
            type: 'output_text',
            text: 'Cats.',
            annotations: [
              { type: 'url_citation', start_index: 0, end_index: 4, url: 'https://a.example', title: 'A' },
            ],
          },
        ],
      },
      respUser('More.'),
    ],
  },
  {
    door: 'responses',
    name: 'file_search_call',
    history: [
      respUser('Search files.'),
      {
        type: 'file_search_call',
        id: 'fs_1',
        status: 'completed',
        queries: ['cats'],
        results: [{ file_id: 'file-1', filename: 'cats.txt', score: 0.9, text: 'Cats purr.' }],
      },
      {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Purr.', annotations: [] }],
      },
      respUser('More.'),
    ],
  },
  {
    door: 'responses',
    name: 'computer_call and its screenshot output',
    history: [
      respUser('Click.'),
      {
        type: 'computer_call',
        id: 'cu_1',
        call_id: 'call_cu',
        status: 'completed',
        action: { type: 'click', button: 'left', x: 10, y: 20 },
        pending_safety_checks: [],
      },
      {
        type: 'computer_call_output',
        call_id: 'call_cu',
        output: { type: 'computer_screenshot', image_url: PNG_URL },
        acknowledged_safety_checks: [],
      },
    ],
  },
  {
    door: 'responses',
    name: 'custom tool call and output',
    history: [
      respUser('Patch.'),
      { type: 'custom_tool_call', call_id: 'call_c', name: 'apply', input: '*** Begin Patch\n*** End Patch' },
      { type: 'custom_tool_call_output', call_id: 'call_c', output: 'Done.' },
    ],
    fields: {
      tools: [...respTools, { type: 'custom', name: 'apply', description: 'Apply a patch' }],
    },
  },
  {
    door: 'responses',
    name: 'local_shell_call and output',
    history: [
      respUser('Run ls.'),
      {
        type: 'local_shell_call',
        id: 'ls_1',
        call_id: 'call_ls',
        status: 'completed',
        action: { type: 'exec', command: ['ls'], env: {} },
      },
      { type: 'local_shell_call_output', id: 'call_ls', output: 'a.txt\n' },
    ],
    fields: { tools: [...respTools, { type: 'local_shell' }] },
  },
  {
    door: 'responses',
    name: 'mcp items',
    history: [
      respUser('Use MCP.'),
      {
        type: 'mcp_list_tools',
        id: 'ml_1',
        server_label: 'deepwiki',
        tools: [{ name: 'ask', input_schema: { type: 'object' } }],
      },
      {
        type: 'mcp_approval_request',
        id: 'mr_1',
        server_label: 'deepwiki',
        name: 'ask',
        arguments: '{"q":"x"}',
      },
      { type: 'mcp_approval_response', approval_request_id: 'mr_1', approve: true },
      {
        type: 'mcp_call',
        id: 'mc_1',
        server_label: 'deepwiki',
        name: 'ask',
        arguments: '{"q":"x"}',
        output: 'answer',
      },
      respUser('More.'),
    ],
  },
  {
    door: 'responses',
    name: 'input_file by file_data (data URL and bare base64), file_url, file_id',
    history: [
      respUser([
        { type: 'input_text', text: 'Read.' },
        { type: 'input_file', filename: 'a.pdf', file_data: PDF_URL },
        { type: 'input_file', filename: 'b.pdf', file_data: PDF },
        { type: 'input_file', file_url: 'https://example.com/c.pdf' },
        { type: 'input_file', file_id: 'file-xyz' },
      ]),
    ],
    expect: ['The audit number is 58213.'],
  },
  {
    door: 'responses',
    name: 'input_image by data URL, https URL, file_id',
    history: [
      respUser([
        { type: 'input_text', text: 'Look.' },
        { type: 'input_image', image_url: PNG_URL, detail: 'high' },
        { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'auto' },
        { type: 'input_image', file_id: 'file-img', detail: 'low' },
      ]),
    ],
  },
  {
    // a local agent's screenshot by path: neither backend reads file: URLs unless started to
    door: 'responses',
    name: 'input_image by file: URL',
    history: [
      respUser([
        { type: 'input_text', text: 'Look.' },
        { type: 'input_image', image_url: 'file:///tmp/shots/screen%201.png', detail: 'auto' },
      ]),
    ],
  },
  {
    door: 'responses',
    name: 'input_audio',
    history: [
      respUser([
        { type: 'input_text', text: 'Listen.' },
        { type: 'input_audio', input_audio: { data: WAV, format: 'wav' } },
      ]),
    ],
  },
  {
    door: 'responses',
    name: 'function_call_output of image and file parts',
    history: [
      respUser('Read a.'),
      respCall('call_1'),
      {
        type: 'function_call_output',
        call_id: 'call_1',
        output: [
          { type: 'input_text', text: 'here' },
          { type: 'input_image', image_url: PNG_URL, detail: 'auto' },
          { type: 'input_file', filename: 'r.pdf', file_data: PDF_URL },
        ],
      },
    ],
    fields: { tools: respTools },
  },
  {
    door: 'responses',
    name: 'a function_call in history whose arguments are cut-off JSON',
    history: [
      respUser('Read a.'),
      { type: 'function_call', call_id: 'call_1', name: 'Read', arguments: '{"path": "a' },
      { type: 'function_call_output', call_id: 'call_1', output: 'error: bad arguments' },
    ],
    fields: { tools: respTools },
  },
  {
    door: 'responses',
    name: 'a megabyte function_call_output',
    only: 'vLLM text-only',
    history: [
      respUser('Read a.'),
      respCall('call_1'),
      { type: 'function_call_output', call_id: 'call_1', output: MEGA },
    ],
    fields: { tools: respTools },
  },
  {
    door: 'responses',
    name: 'text.format json_schema beside tools',
    history: [respUser('Answer in JSON.')],
    fields: {
      tools: respTools,
      text: { format: { type: 'json_schema', name: 'a', strict: true, schema: SCHEMA } },
    },
  },
  {
    door: 'responses',
    name: 'assistant refusal part, developer message',
    history: [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
      respUser('Bad thing.'),
      { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] },
      respUser('Something else.'),
    ],
  },
  {
    door: 'responses',
    name: 'computer_call with a file_id screenshot, pending safety checks',
    history: [
      respUser('Click.'),
      {
        type: 'computer_call',
        id: 'cu_1',
        call_id: 'call_cu',
        status: 'completed',
        action: { type: 'screenshot' },
        pending_safety_checks: [{ id: 'sc_1', code: 'malicious_instructions', message: 'careful' }],
      },
      {
        type: 'computer_call_output',
        call_id: 'call_cu',
        output: { type: 'computer_screenshot', file_id: 'file-shot' },
        acknowledged_safety_checks: [{ id: 'sc_1', code: 'malicious_instructions', message: 'careful' }],
      },
      respUser('Now what?'),
    ],
  },
  {
    door: 'responses',
    name: 'compaction item, tool_search call and output',
    history: [
      { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAAABcompacted' },
      respUser('Find a tool.'),
      {
        type: 'tool_search_call',
        id: 'ts_1',
        call_id: 'call_ts',
        status: 'completed',
        arguments: { query: 'read' },
      },
      {
        type: 'tool_search_output',
        id: 'tso_1',
        call_id: 'call_ts',
        status: 'completed',
        tools: [{ type: 'function', name: 'Read', parameters: { type: 'object' } }],
      },
      respUser('Go.'),
    ],
  },
  // sessions19: items of openai 7.59's ResponseInputItem union that were a 400 on every later turn
  // (the Agents SDK round-trips program and program_output ids: openaiConversationsSession.ts)
  {
    door: 'responses',
    name: 'program and program_output (programmatic tool calling), configuration_update',
    history: [
      respUser('Add them up.'),
      { type: 'configuration_update', id: 'cfg_1', reasoning: { effort: 'low' } },
      {
        type: 'program',
        id: 'prog_1',
        call_id: 'call_prog',
        code: 'return 2 + 40;',
        fingerprint: 'opaque-fingerprint',
      },
      { type: 'program_output', id: 'progo_1', call_id: 'call_prog', result: '42', status: 'completed' },
      respUser('Go on.'),
    ],
    expect: ['return 2 + 40;', 'it gave: 42'],
  },
  {
    door: 'responses',
    name: 'additional_tools mid-conversation',
    history: [
      respUser('Look around.'),
      {
        type: 'additional_tools',
        role: 'developer',
        tools: [
          {
            type: 'function',
            name: 'Glob',
            parameters: { type: 'object', properties: { pattern: { type: 'string' } } },
          },
        ],
      },
      respUser('Now use Glob.'),
    ],
    expect: ['[tools Glob can be called from here on]', '"name":"Glob"'],
  },
  {
    door: 'responses',
    name: 'shell_call and apply_patch_call with outputs',
    history: [
      respUser('Fix it.'),
      {
        type: 'shell_call',
        call_id: 'call_sh',
        status: 'completed',
        action: { commands: ['ls'], timeout_ms: 1000 },
      },
      {
        type: 'shell_call_output',
        call_id: 'call_sh',
        output: [{ stdout: 'a.txt\n', stderr: '', outcome: { type: 'exit', exit_code: 0 } }],
      },
      {
        type: 'apply_patch_call',
        call_id: 'call_ap',
        status: 'completed',
        operation: { type: 'update_file', path: 'a.txt', diff: '@@\n-a\n+b\n' },
      },
      { type: 'apply_patch_call_output', call_id: 'call_ap', status: 'completed', output: 'ok' },
    ],
    fields: { tools: [...respTools, { type: 'shell' }, { type: 'apply_patch' }] },
  },
  {
    door: 'responses',
    name: 'reasoning with reasoning_text content, output_text with logprobs, text file by bare base64',
    history: [
      respUser([
        { type: 'input_text', text: 'Read.' },
        {
          type: 'input_file',
          filename: 'notes.txt',
          file_data: Buffer.from('Plain notes.').toString('base64'),
        },
      ]),
      {
        type: 'reasoning',
        id: 'rs_1',
        summary: [],
        content: [{ type: 'reasoning_text', text: 'Reading the notes.' }],
      },
      {
        type: 'message',
        id: 'msg_1',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Done.', annotations: [], logprobs: [] }],
      },
      respUser('And?'),
    ],
    expect: ['Plain notes.'],
  },
  {
    // an earlier output item no longer held (evicted, another replica): before, a 400 every turn
    door: 'responses',
    name: 'item_reference toolproof no longer holds',
    history: [respUser('Hi.'), { type: 'item_reference', id: 'msg_gone' }, respUser('Again.')],
    expect: ['earlier output item msg_gone left out'],
  },
  {
    door: 'responses',
    name: 'image_generation_call and code_interpreter_call',
    history: [
      respUser('Draw and compute.'),
      { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: PNG },
      {
        type: 'code_interpreter_call',
        id: 'ci_1',
        status: 'completed',
        code: 'print(1)',
        container_id: 'cntr_1',
        outputs: [
          { type: 'logs', logs: '1' },
          { type: 'image', url: 'https://example.com/plot.png' },
        ],
      },
      respUser('More.'),
    ],
  },
];

// ---------------------------------------------------------------- Messages
const msgTools = [
  {
    name: 'Read',
    description: 'Read a file',
    input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  },
];
const msgUser = (content: unknown): Obj => ({ role: 'user', content });
const msgCall = (id: string): Obj => ({
  role: 'assistant',
  content: [{ type: 'tool_use', id, name: 'Read', input: { path: 'a' } }],
});
const result = (id: string, content: unknown, extra: Obj = {}): Obj =>
  msgUser([{ type: 'tool_result', tool_use_id: id, content, ...extra }]);
const MSG: Shape[] = [
  {
    door: 'messages',
    name: 'stop_sequences beside tools, a call in history holding one',
    history: [
      msgUser('Read a.'),
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_s', name: 'Read', input: { path: '```a' } }],
      },
      result('toolu_s', '```\nfenced\n```'),
    ],
    fields: { tools: msgTools, stop_sequences: ['```'] },
  },
  {
    door: 'messages',
    name: 'image base64, url and file sources',
    history: [
      msgUser([
        { type: 'text', text: 'Look.' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
        { type: 'image', source: { type: 'file', file_id: 'file_011' } },
      ]),
    ],
  },
  {
    door: 'messages',
    name: 'documents: base64, text, url, file, content; citations on',
    history: [
      msgUser([
        { type: 'text', text: 'Read.' },
        {
          type: 'document',
          source: { type: 'base64', media_type: 'application/pdf', data: PDF },
          title: 'r.pdf',
          context: 'an audit',
          citations: { enabled: true },
        },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Plain words.' } },
        { type: 'document', source: { type: 'url', url: 'https://example.com/d.pdf' } },
        { type: 'document', source: { type: 'file', file_id: 'file_012' } },
        {
          type: 'document',
          source: {
            type: 'content',
            content: [
              { type: 'text', text: 'Chunk one.' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            ],
          },
          citations: { enabled: true },
        },
      ]),
    ],
    expect: ['The audit number is 58213.', 'Plain words.', 'Chunk one.'],
  },
  {
    door: 'messages',
    name: 'assistant text with citations',
    history: [
      msgUser([
        {
          type: 'document',
          source: { type: 'text', media_type: 'text/plain', data: 'The sky is blue.' },
          citations: { enabled: true },
        },
        { type: 'text', text: 'What colour?' },
      ]),
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'Blue.',
            citations: [
              {
                type: 'char_location',
                cited_text: 'The sky is blue.',
                document_index: 0,
                document_title: null,
                start_char_index: 0,
                end_char_index: 16,
              },
            ],
          },
        ],
      },
      msgUser('Thanks.'),
    ],
  },
  {
    door: 'messages',
    name: 'search_result blocks, with citations',
    history: [
      msgUser([
        {
          type: 'search_result',
          source: 'https://a.example',
          title: 'A',
          content: [{ type: 'text', text: 'Cats purr.' }],
          citations: { enabled: true },
        },
        { type: 'text', text: 'Why?' },
      ]),
    ],
    expect: ['Cats purr.'],
  },
  {
    door: 'messages',
    name: 'container_upload',
    history: [
      msgUser([
        { type: 'text', text: 'Analyse.' },
        { type: 'container_upload', file_id: 'file_013' },
      ]),
    ],
  },
  {
    door: 'messages',
    name: 'tool_result with image, document and search_result, is_error',
    history: [
      msgUser('Read a.'),
      msgCall('toolu_1'),
      result(
        'toolu_1',
        [
          { type: 'text', text: 'here' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
          {
            type: 'search_result',
            source: 'https://a.example',
            title: 'A',
            content: [{ type: 'text', text: 'Cats.' }],
          },
        ],
        { is_error: true },
      ),
    ],
    fields: { tools: msgTools },
    expect: ['The audit number is 58213.'],
  },
  {
    door: 'messages',
    name: 'tool_result with image only',
    history: [
      msgUser('Screenshot.'),
      msgCall('toolu_1'),
      result('toolu_1', [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }]),
    ],
    fields: { tools: msgTools },
  },
  {
    door: 'messages',
    name: 'thinking with signature and redacted_thinking beside tool_use',
    history: [
      msgUser('Read a.'),
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'I should read a.', signature: 'EqQBCkYIBxgCKkDsig' },
          { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a' } },
        ],
      },
      result('toolu_1', 'contents'),
    ],
    fields: { tools: msgTools, thinking: { type: 'enabled', budget_tokens: 1024 } },
  },
  // sessions19: the MCP connector's tool listing, which its SDK (@anthropic-ai/sdk 1.14's
  // BetaMCPToolListingBlock) says to send back unchanged on every later turn
  {
    door: 'messages',
    name: 'mcp_tool_listing in an assistant turn',
    history: [
      msgUser('What can the wiki do?'),
      {
        role: 'assistant',
        content: [
          {
            type: 'mcp_tool_listing',
            mcp_server_name: 'wiki',
            tools: [{ name: 'search_pages', input_schema: { type: 'object' } }],
          },
          { type: 'text', text: 'It can search pages.' },
        ],
      },
      msgUser('Go on.'),
    ],
    expect: ['[MCP server wiki listed its tools on the API this conversation began on: search_pages]'],
  },
  {
    door: 'messages',
    name: 'server tools and their results (web search, web fetch, code execution, MCP)',
    history: [
      msgUser('Search.'),
      {
        role: 'assistant',
        content: [
          { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'cats' } },
          {
            type: 'web_search_tool_result',
            tool_use_id: 'srvtoolu_1',
            content: [
              {
                type: 'web_search_result',
                url: 'https://a.example',
                title: 'A',
                encrypted_content: 'Eqg',
                page_age: null,
              },
            ],
          },
          {
            type: 'server_tool_use',
            id: 'srvtoolu_2',
            name: 'web_fetch',
            input: { url: 'https://a.example' },
          },
          {
            type: 'web_fetch_tool_result',
            tool_use_id: 'srvtoolu_2',
            content: {
              type: 'web_fetch_result',
              url: 'https://a.example',
              content: {
                type: 'document',
                source: { type: 'text', media_type: 'text/plain', data: 'page' },
              },
            },
          },
          { type: 'server_tool_use', id: 'srvtoolu_3', name: 'code_execution', input: { code: 'print(1)' } },
          {
            type: 'code_execution_tool_result',
            tool_use_id: 'srvtoolu_3',
            content: { type: 'code_execution_result', stdout: '1', stderr: '', return_code: 0, content: [] },
          },
          { type: 'mcp_tool_use', id: 'mcptoolu_1', name: 'ask', server_name: 'wiki', input: { q: 'x' } },
          {
            type: 'mcp_tool_result',
            tool_use_id: 'mcptoolu_1',
            is_error: false,
            content: [{ type: 'text', text: 'answer' }],
          },
          { type: 'text', text: 'Cats.' },
        ],
      },
      msgUser('More.'),
    ],
  },
  {
    door: 'messages',
    name: 'compaction block, fallback block, tool_reference result',
    history: [
      { role: 'assistant', content: [{ type: 'compaction', content: 'We read a.txt; the number is 7.' }] },
      msgUser('Load the tool.'),
      {
        role: 'assistant',
        content: [
          { type: 'fallback' },
          { type: 'tool_use', id: 'toolu_s', name: 'Read', input: { path: 'b' } },
        ],
      },
      result('toolu_s', [{ type: 'tool_reference', tool_name: 'Read' }]),
    ],
    fields: { tools: msgTools },
    expect: ['the number is 7.'],
  },
  {
    door: 'messages',
    name: 'document of base64 plain text, image jpeg in a tool result',
    history: [
      msgUser([
        {
          type: 'document',
          source: {
            type: 'base64',
            media_type: 'text/plain',
            data: Buffer.from('Base64 words.').toString('base64'),
          },
        },
        { type: 'text', text: 'Read.' },
      ]),
      msgCall('toolu_1'),
      result('toolu_1', [
        {
          type: 'image',
          source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQSkZJRgABAQ==' },
        },
      ]),
    ],
    fields: { tools: msgTools },
    expect: ['Base64 words.'],
  },
  {
    door: 'messages',
    name: 'a megabyte tool_result',
    only: 'vLLM text-only',
    history: [msgUser('Read a.'), msgCall('toolu_1'), result('toolu_1', MEGA)],
    fields: { tools: msgTools },
  },
  {
    door: 'messages',
    name: 'output_config.format beside tools, cache_control everywhere',
    history: [
      msgUser([{ type: 'text', text: 'Answer in JSON.', cache_control: { type: 'ephemeral', ttl: '1h' } }]),
    ],
    fields: {
      system: [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }],
      tools: msgTools.map((t) => ({ ...t, cache_control: { type: 'ephemeral' } })),
      output_config: { format: { type: 'json_schema', schema: SCHEMA } },
    },
  },
  {
    // Anthropic's MCP connector and code-execution container: before, a 400 on every turn
    door: 'messages',
    name: 'mcp_servers, container and an mcp_toolset tool',
    history: [msgUser('Ask the wiki.')],
    fields: {
      tools: [...msgTools, { type: 'mcp_toolset', mcp_server_name: 'wiki' }],
      mcp_servers: [{ type: 'url', url: 'https://mcp.example/sse', name: 'wiki' }],
      container: 'container_011',
    },
  },
  {
    door: 'messages',
    name: 'output_format (older field) beside tools',
    history: [msgUser('Answer in JSON.')],
    fields: { tools: msgTools, output_format: { type: 'json_schema', schema: SCHEMA } },
  },
];

const SHAPES = [...CHAT, ...RESP, ...MSG];

// ---------------------------------------------------------------- backends
interface Backend {
  name: string;
  sim: Obj;
  file: Obj;
  vision: boolean;
  audio: boolean;
  /** The config's defaults as main.ts resolves them (with what the backend said), where not from `file`. */
  defaults?: Obj;
  /** Only the shapes this says (a backend for one kind of content). */
  shapes?: (shape: Shape) => boolean;
  /** Turns 2-3 must go upstream in one attempt: what turn 1's refusal taught is remembered. */
  learns?: boolean;
  /** Its template renders no image of a tool message (vLLM's 500 for one): none may go there. */
  noToolImages?: boolean;
}
const BACKENDS: Backend[] = [
  {
    name: 'llama-server text-only',
    sim: { personality: 'llama-server', nCtx: 32768, enforceWindow: true, strictHistory: true },
    // what /props says, as main.ts reads it at start-up (the stack does not probe)
    file: { defaults: { vision: false, audio: false, contextWindow: 32768 } },
    vision: false,
    audio: false,
  },
  {
    name: 'llama-server with vision and audio',
    sim: {
      personality: 'llama-server',
      nCtx: 32768,
      enforceWindow: true,
      strictHistory: true,
      vision: true,
      audio: true,
    },
    file: { defaults: { vision: true, audio: true, contextWindow: 32768 } },
    vision: true,
    audio: true,
  },
  {
    // /props saying vision and audio (a gateway's, for another model; a projector that failed to
    // load) while the chat parser answers llama-server's 500 "image input is not supported"
    name: 'llama-server whose /props says vision and audio, no projector',
    sim: { personality: 'llama-server', nCtx: 32768, enforceWindow: true, strictHistory: true },
    file: {},
    defaults: {
      ...DEFAULT_MODEL_SETTINGS,
      vision: true,
      audio: true,
      contextWindow: 32768,
      fromBackend: ['vision', 'audio'],
    },
    vision: false,
    audio: false,
    shapes: (shape) => /"(image_url|input_image|image|input_audio)"/.test(JSON.stringify(shape.history)),
    learns: true,
  },
  {
    name: 'vLLM text-only, 8k window, vision and audio auto',
    sim: { personality: 'vllm', maxModelLen: 8192, enforceWindow: true, strictHistory: true, vision: false },
    file: { defaults: { contextWindow: 8192 } },
    vision: false,
    audio: false,
  },
  {
    // vLLM before its fetch errors became a 422: the image's host gone (an expired signed URL),
    // the fetch's exception uncaught, a bare 500 "Internal Server Error" (text/plain)
    name: 'old vLLM multimodal, its image URLs gone (a bare 500)',
    sim: {
      personality: 'vllm',
      maxModelLen: 32768,
      enforceWindow: true,
      strictHistory: true,
      vision: true,
      unreachableImageHosts: ['example.com'],
      bareImageFetchError: true,
    },
    file: { defaults: { contextWindow: 32768 } },
    vision: true,
    audio: true,
    shapes: (shape) => JSON.stringify(shape.history).includes('https://example.com/'),
    learns: true,
  },
  {
    name: 'vLLM multimodal',
    sim: { personality: 'vllm', maxModelLen: 32768, enforceWindow: true, strictHistory: true, vision: true },
    file: { defaults: { contextWindow: 32768 } },
    vision: true,
    audio: true,
  },
  {
    // a chat template that renders no image of a tool message (Gemma 4's before its tool template,
    // vllm-project/vllm#41452): vLLM's 500 "Failed to apply prompt replacement for mm_items['image'][N]"
    name: 'vLLM multimodal, a template rendering no image of a tool message',
    sim: {
      personality: 'vllm',
      maxModelLen: 32768,
      enforceWindow: true,
      strictHistory: true,
      vision: true,
      toolMessageImages: false,
    },
    file: { defaults: { contextWindow: 32768 } },
    vision: true,
    audio: true,
    shapes: (shape) =>
      /"(image_url|input_image|image|computer_screenshot)"/.test(JSON.stringify(shape.history)),
    learns: true,
    noToolImages: true,
  },
];

/** What the backend would refuse in a chat body's content parts (llama-server's and vLLM's parsers). */
function partProblems(body: Obj, b: Backend): string[] {
  const out: string[] = [];
  (body.messages as Obj[]).forEach((m, i) => {
    // the roles chat templates render (a "function" or "developer" message raises in most)
    if (!['system', 'user', 'assistant', 'tool'].includes(String(m.role)))
      out.push(`${i}: role ${String(m.role)}`);
    const c = m.content;
    if (!Array.isArray(c)) {
      if (c !== null && c !== undefined && typeof c !== 'string') out.push(`${i}: content ${typeof c}`);
      return;
    }
    for (const p of c as Obj[]) {
      const t = p.type;
      if (t === 'text' && typeof p.text === 'string') continue;
      if (t === 'image_url' && b.noToolImages && m.role === 'tool') {
        out.push(`${i} (tool): an image in a tool message`);
        continue;
      }
      if (t === 'image_url' && b.vision) {
        const url = (p.image_url as Obj | undefined)?.url;
        if (typeof url === 'string' && /^(data:image\/|https?:)/.test(url)) continue;
      }
      if (t === 'input_audio' && b.audio) continue;
      out.push(`${i} (${String(m.role)}): part ${String(t)}`);
    }
  });
  return out;
}

function errText(err: unknown): string {
  const e = err as { status?: number; message?: string };
  return `${e.status ?? '?'} ${String(e.message).slice(0, 300)}`;
}

/** One turn on a door; returns the history items to append (the answer). */
async function send(
  stack: Stack,
  anthropic: Anthropic,
  shape: Shape,
  history: Obj[],
  stream: boolean,
): Promise<Obj[]> {
  if (shape.door === 'chat') {
    const params = { model: 'sim', messages: history, ...shape.fields };
    const c = stream
      ? await stack.client.chat.completions.stream(params as never).finalChatCompletion()
      : await stack.client.chat.completions.create(params as never);
    const { parsed: _p, ...msg } = c.choices[0]!.message as unknown as Obj;
    return [msg];
  }
  if (shape.door === 'responses') {
    const params = { model: 'sim', input: history, store: false, ...shape.fields };
    const r = stream
      ? await stack.client.responses.stream(params as never).finalResponse()
      : await stack.client.responses.create(params as never);
    return r.output.map((item) => {
      const { parsed_arguments: _p, ...rest } = item as unknown as Obj;
      return rest;
    });
  }
  const params = { model: 'sim', max_tokens: 200, messages: history, ...shape.fields };
  const m = stream
    ? await anthropic.messages.stream(params as never).finalMessage()
    : await anthropic.messages.create(params as never);
  return [{ role: 'assistant', content: m.content }];
}

/** A session: the shape's turn, then two more, each re-sending the whole history. Returns the failures. */
async function session(
  stack: Stack,
  anthropic: Anthropic,
  backend: Backend,
  shape: Shape,
  stream: boolean,
): Promise<string[]> {
  const fails: string[] = [];
  const history = [...shape.history];
  const firsts: string[] = [];
  stack.sim.setScenario(() => ({ say: '{"answer":"ok"}' }));
  for (let turn = 1; turn <= 3; turn++) {
    const before = stack.sim.requests.length;
    let answer: Obj[];
    try {
      answer = await send(stack, anthropic, shape, history, stream);
    } catch (err) {
      fails.push(`turn ${turn}: ${errText(err)}`);
      return fails;
    }
    const sent = stack.sim.requests.slice(before).filter((r) => r.path.endsWith('/chat/completions'));
    if (sent.length === 0) fails.push(`turn ${turn}: nothing went upstream`);
    if (backend.learns && turn > 1 && sent.length > 1)
      fails.push(`turn ${turn}: ${sent.length} attempts upstream (turn 1's refusal not remembered)`);
    // the request the backend answered (the last attempt; an earlier one it refused) is the one
    // later turns must extend
    const last = sent.at(-1);
    const p = last ? partProblems(last.body as Obj, backend) : [];
    if (p.length > 0) fails.push(`turn ${turn}: upstream would refuse ${p.join('; ')}`);
    if (last) firsts.push(last.rawBody);
    if (turn === 1 && last)
      for (const e of shape.expect ?? [])
        if (!last.rawBody.includes(e)) fails.push(`turn 1: no "${e}" upstream`);
    history.push(...answer);
    history.push({ role: 'user', content: `go on ${turn}` });
  }
  for (let k = 1; k < firsts.length; k++) {
    const b = prefixBreak(firsts[0]!, firsts[k]!);
    if (b) fails.push(`turn ${k + 1}: ${b}`);
  }
  return fails;
}

describe.each(BACKENDS)('sessions survive their content: $name', (backend) => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({
      sim: backend.sim as never,
      file: backend.file as never,
      ...(backend.defaults ? { config: { defaults: backend.defaults as never } } : {}),
    });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 60_000 });
  });
  afterAll(() => stack.close());

  // Each shape streamed on two of the backends and not on the other two (about half the sessions
  // each way on every backend; the degradations are made before the attempt, the same for both).
  it('every shape, every door, streamed or not', async () => {
    const fails: string[] = [];
    const b = BACKENDS.indexOf(backend);
    const shapes = SHAPES.filter(
      (sh) => backend.name.startsWith(sh.only ?? '') && (backend.shapes?.(sh) ?? true),
    );
    for (const [k, shape] of shapes.entries()) {
      // the shapes of one backend only go both ways there
      for (const mode of shape.only !== undefined ? [false, true] : [(k + b) % 2 === 1]) {
        const f = await session(stack, anthropic, backend, shape, mode);
        for (const x of f) fails.push(`${shape.door} ${mode ? 'streamed' : 'plain'} | ${shape.name} | ${x}`);
      }
    }
    expect(fails).toEqual([]);
  }, 300_000);
});

const shapesOfDoor = new Map<DoorName, Obj[]>();

/**
 * Each door's shapes in one history (call ids made unique), an answer and a user turn after each.
 * Built once per door (the SDKs only serialize it; ~0.85 s of CPU a file when built per request).
 */
function allShapes(door: DoorName): Obj[] {
  const built = shapesOfDoor.get(door);
  if (built) return built;
  const out: Obj[] = [];
  SHAPES.filter((sh) => sh.door === door).forEach((sh, k) => {
    const items = JSON.parse(
      JSON.stringify(sh.history).replace(/:"(call_|toolu_|srvtoolu_|mcptoolu_)(\w+)"/g, `:"$1$2_${k}"`),
    ) as Obj[];
    out.push(...items);
    if (door === 'responses')
      out.push({
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: `ok ${k}`, annotations: [] }],
      });
    else out.push({ role: 'assistant', content: `ok ${k}` });
    out.push({ role: 'user', content: `next ${k}` });
  });
  shapesOfDoor.set(door, out);
  return out;
}

const COMPACT =
  'Your task is to create a detailed summary of the conversation so far. Do not call any tools; answer in text only.';
const DOOR_TOOLS: Record<DoorName, Obj> = {
  chat: { tools: chatTools },
  responses: {
    tools: [
      ...respTools,
      { type: 'custom', name: 'apply' },
      { type: 'local_shell' },
      { type: 'shell' },
      { type: 'apply_patch' },
    ],
  },
  messages: { tools: msgTools },
};

describe.each(BACKENDS.filter((b) => b.shapes === undefined))(
  'a compaction request carrying every shape: $name',
  (backend) => {
    let stack: Stack;
    let anthropic: Anthropic;
    beforeAll(async () => {
      stack = await startStack({ sim: backend.sim as never, file: backend.file as never });
      anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 60_000 });
    });
    afterAll(() => stack.close());

    it('is answered on every door, streamed and not, with tools declared or none', async () => {
      const fails: string[] = [];
      stack.sim.setScenario(() => ({ say: 'Summary.' }));
      for (const door of ['chat', 'responses', 'messages'] as const)
        for (const tools of [true, false])
          for (const stream of [false, true]) {
            const history = [...allShapes(door), { role: 'user', content: COMPACT }];
            const shape: Shape = {
              door,
              name: 'compaction',
              history: [],
              fields: tools ? DOOR_TOOLS[door] : {},
            };
            const before = stack.sim.requests.length;
            try {
              await send(stack, anthropic, shape, history, stream);
            } catch (err) {
              fails.push(`${door} ${stream ? 'streamed' : 'plain'} tools=${tools}: ${errText(err)}`);
              continue;
            }
            const last = stack.sim.requests
              .slice(before)
              .filter((r) => r.path.endsWith('/chat/completions'))
              .at(-1);
            const p = last ? partProblems(last.body as Obj, backend) : ['nothing upstream'];
            if (p.length > 0)
              fails.push(`${door} ${stream ? 'streamed' : 'plain'} tools=${tools}: ${p.join('; ')}`);
          }
      expect(fails).toEqual([]);
    }, 300_000);
  },
);

/** About 2,300 tokens of one tool result's text (7 KB of lines, distinct per result). */
const block = (k: number) =>
  Array.from({ length: 140 }, (_, j) => `r${k} line ${j} ${'y'.repeat(36)}`).join('\n');

/** A session over an 8k window: a user turn and six tool results, each with an image and a PDF. */
function overflowing(door: DoorName): Obj[] {
  const out: Obj[] = [];
  if (door === 'chat') {
    out.push(
      chatUser([
        { type: 'text', text: 'Start.' },
        { type: 'image_url', image_url: { url: PNG_URL } },
        { type: 'file', file: { filename: 'r.pdf', file_data: PDF_URL } },
      ]),
    );
    for (let k = 0; k < 6; k++)
      out.push(chatCall(`call_${k}`), {
        role: 'tool',
        tool_call_id: `call_${k}`,
        content: [
          { type: 'text', text: block(k) },
          { type: 'image_url', image_url: { url: PNG_URL } },
          { type: 'file', file: { filename: 'r.pdf', file_data: PDF_URL } },
        ],
      });
  } else if (door === 'responses') {
    out.push(
      respUser([
        { type: 'input_text', text: 'Start.' },
        { type: 'input_image', image_url: PNG_URL, detail: 'auto' },
        { type: 'input_file', filename: 'r.pdf', file_data: PDF_URL },
      ]),
    );
    for (let k = 0; k < 6; k++)
      out.push(respCall(`call_${k}`), {
        type: 'function_call_output',
        call_id: `call_${k}`,
        output: [
          { type: 'input_text', text: block(k) },
          { type: 'input_image', image_url: PNG_URL, detail: 'auto' },
          { type: 'input_file', filename: 'r.pdf', file_data: PDF_URL },
        ],
      });
  } else {
    const img = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } };
    const doc = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } };
    out.push(msgUser([{ type: 'text', text: 'Start.' }, img, doc]));
    for (let k = 0; k < 6; k++)
      out.push(msgCall(`toolu_${k}`), result(`toolu_${k}`, [{ type: 'text', text: block(k) }, img, doc]));
  }
  return out;
}

const SMALL: Backend[] = [
  {
    name: 'llama-server text-only, 8k window known',
    sim: { personality: 'llama-server', nCtx: 8192, enforceWindow: true, strictHistory: true },
    file: { defaults: { vision: false, audio: false, contextWindow: 8192 } },
    vision: false,
    audio: false,
  },
  {
    name: 'vLLM multimodal, 8k window learnt from its refusal',
    sim: { personality: 'vllm', maxModelLen: 8192, enforceWindow: true, strictHistory: true, vision: true },
    file: {},
    vision: true,
    audio: true,
  },
];

// The window was over: something was cut (a note in the first turn's prompt).
overflowingSessions(
  'a session over its window, images and PDFs in the cut part',
  'overflow',
  overflowing,
  ['toolproof left out'],
  true,
);

/** 40 pages of 40 lines: ~13,000 tokens of text, more than an 8k window holds. */
const BIG_PDF = textPdf(
  Array.from({ length: 40 }, (_, p) =>
    Array.from({ length: 40 }, (_, l) => `page ${p} line ${l} of the annual report`).join('\n'),
  ),
).toString('base64');

/** A first user turn carrying `docs` (name, base64 PDF) and a question, in `door`'s shapes. */
function documentsTurn(door: DoorName, docs: ReadonlyArray<[string, string]>, question: string): Obj {
  if (door === 'chat')
    return chatUser([
      ...docs.map(([name, data]) => ({
        type: 'file',
        file: { filename: name, file_data: `data:application/pdf;base64,${data}` },
      })),
      { type: 'text', text: question },
    ]);
  if (door === 'responses')
    return respUser([
      ...docs.map(([name, data]) => ({
        type: 'input_file',
        filename: name,
        file_data: `data:application/pdf;base64,${data}`,
      })),
      { type: 'input_text', text: question },
    ]);
  return msgUser([
    ...docs.map(([name, data]) => ({
      type: 'document',
      title: name,
      source: { type: 'base64', media_type: 'application/pdf', data },
    })),
    { type: 'text', text: question },
  ]);
}

/** Three reports of 12 pages of 25 lines: ~2,800 tokens each (the window holds one), 8,514 together with the turn. */
const REPORTS = [0, 1, 2].map((r) =>
  textPdf(
    Array.from({ length: 12 }, (_, p) =>
      Array.from({ length: 25 }, (_, l) => `report ${r} page ${p} line ${l}: figures up`).join('\n'),
    ),
  ).toString('base64'),
);

const bigDocument = (door: DoorName) => documentsTurn(door, [['annual.pdf', BIG_PDF]], 'Summarize.');
const threeDocuments = (door: DoorName) =>
  documentsTurn(
    door,
    REPORTS.map((d, r) => [`report${r}.pdf`, d]),
    'Compare them.',
  );

/** Each door's function tools, for sessions whose history calls them. */
const CALLED_TOOLS: Record<DoorName, Obj> = {
  chat: { tools: chatTools },
  responses: { tools: respTools },
  messages: { tools: msgTools },
};

/**
 * Three turns of a session whose history is `history(door)`, on every door, streamed and not:
 * what failed, each line naming its door and mode. `expected`: texts the upstream must be sent;
 * `tools`: the history calls tools (each door's are declared).
 */
async function doorSessions(
  stack: Stack,
  anthropic: Anthropic,
  backend: Backend,
  name: string,
  history: (door: DoorName) => Obj[],
  expected?: string[],
  tools = false,
): Promise<string[]> {
  const fails: string[] = [];
  for (const door of ['chat', 'responses', 'messages'] as const)
    for (const stream of [false, true]) {
      const shape: Shape = {
        door,
        name,
        history: history(door),
        ...(tools ? { fields: CALLED_TOOLS[door] } : {}),
        ...(expected ? { expect: expected } : {}),
      };
      for (const f of await session(stack, anthropic, backend, shape, stream))
        fails.push(`${door} ${stream ? 'streamed' : 'plain'} | ${f}`);
    }
  return fails;
}

// Documents the window cannot hold, alone or together: before, every turn was refused for its
// length (Messages: "prompt is too long: 13208 tokens > 8192 maximum" for the one PDF, "8514
// tokens" for the three), the agent's compaction request too.
describe.each(SMALL)('PDFs over the window in the first turn: $name', (backend) => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({ sim: backend.sim as never, file: backend.file as never });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 60_000 });
  });
  afterAll(() => stack.close());

  it('one PDF larger than the window: three turns on every door, streamed and not, each extending the first', async () => {
    const expected = [
      '[document: annual.pdf (PDF, 40 pages',
      "of this document's",
      '[end of document: annual.pdf]',
    ];
    expect(
      await doorSessions(stack, anthropic, backend, 'big PDF', (d) => [bigDocument(d)], expected),
    ).toEqual([]);
  }, 300_000);

  it('three PDFs that together overflow it: the same, and the compaction request', async () => {
    const expected = [
      '[document: report0.pdf (PDF, 12 pages',
      "of this document's",
      '[end of document: report2.pdf]',
    ];
    expect(
      await doorSessions(stack, anthropic, backend, 'three PDFs', (d) => [threeDocuments(d)], expected),
    ).toEqual([]);
    // The agent's compaction request carries the same documents: answered too.
    const summary = await stack.client.chat.completions.create({
      model: 'sim',
      messages: [
        threeDocuments('chat'),
        { role: 'user', content: 'Summarize the conversation so far.' },
      ] as never,
    });
    expect(summary.choices[0]?.message.content).toBeTruthy();
  }, 300_000);
});

/** Seven user turns, each with one report (~2,800 tokens: over the quarter window a single document keeps), an answer after each. */
function documentsAcrossMessages(door: DoorName): Obj[] {
  const out: Obj[] = [];
  for (let k = 0; k < 7; k++) {
    const doc = REPORTS[k % 3]!;
    out.push(documentsTurn(door, [[`week${k}.pdf`, doc]], `Week ${k}: note the figures.`));
    out.push(
      door === 'responses'
        ? {
            type: 'message',
            role: 'assistant',
            content: [{ type: 'output_text', text: `Noted ${k}.`, annotations: [] }],
          }
        : { role: 'assistant', content: `Noted ${k}.` },
    );
  }
  out.push({ role: 'user', content: 'Compare the weeks.' });
  return out;
}

// Documents each held to their message's share, in many messages: before, the shares added up
// past the window and every turn was the backend's refusal (the compaction request's too).
describe.each(SMALL)('PDFs across many messages that together overflow the window: $name', (backend) => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({ sim: backend.sim as never, file: backend.file as never });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 60_000 });
  });
  afterAll(() => stack.close());

  it('three turns on every door, streamed and not, each extending the first', async () => {
    const expected = [
      '[document: week0.pdf (PDF, 12 pages',
      "of this document's",
      '[end of document: week6.pdf]',
    ];
    expect(
      await doorSessions(
        stack,
        anthropic,
        backend,
        'documents across messages',
        documentsAcrossMessages,
        expected,
      ),
    ).toEqual([]);
  }, 300_000);
});

/** A text document of ~2,000 characters (~650 tokens), distinct per `k`. */
const note = (k: number) =>
  Array.from({ length: 40 }, (_, l) => `note ${k} line ${l}: the figures went up`).join('\n');

/** Eighty user turns, each with one text document and an answer after it: ~52,000 tokens of documents. */
function manyTextDocuments(door: DoorName): Obj[] {
  const out: Obj[] = [];
  for (let k = 0; k < 80; k++) {
    const data = Buffer.from(note(k)).toString('base64');
    const name = `note${k}.txt`;
    if (door === 'chat')
      out.push(
        chatUser([
          { type: 'file', file: { filename: name, file_data: `data:text/plain;base64,${data}` } },
          { type: 'text', text: `Note ${k}.` },
        ]),
        { role: 'assistant', content: `Noted ${k}.` },
      );
    else if (door === 'responses')
      out.push(
        respUser([
          { type: 'input_file', filename: name, file_data: `data:text/plain;base64,${data}` },
          { type: 'input_text', text: `Note ${k}.` },
        ]),
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: `Noted ${k}.`, annotations: [] }],
        },
      );
    else
      out.push(
        msgUser([
          {
            type: 'document',
            title: name,
            source: { type: 'text', media_type: 'text/plain', data: note(k) },
          },
          { type: 'text', text: `Note ${k}.` },
        ]),
        { role: 'assistant', content: `Noted ${k}.` },
      );
  }
  out.push({ role: 'user', content: 'Compare the notes.' });
  return out;
}

// More than 64 older messages with documents: each older one kept a sixty-fourth of the window,
// and eighty of them were past an 8k window by themselves (every turn refused, ~14,000 tokens).
// Now the older ones share a sixteenth of the window, in order; past it each is a one-line note.
overflowingSessions('eighty text documents in eighty messages', 'eighty documents', manyTextDocuments, [
  '[document: note0.txt (',
  '[document left out: note3',
  '[end of document: note79.txt]',
]);

/** Three turns of `build`'s session on every small backend and door, streamed and not. */
function overflowingSessions(
  title: string,
  label: string,
  build: (door: DoorName) => Obj[],
  expected: string[],
  tools?: boolean,
): void {
  describe.each(SMALL)(`${title}: $name`, (backend) => {
    let stack: Stack;
    let anthropic: Anthropic;
    beforeAll(async () => {
      stack = await startStack({ sim: backend.sim as never, file: backend.file as never });
      anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 60_000 });
    });
    afterAll(() => stack.close());

    it('three turns on every door, streamed and not, each extending the first', async () => {
      expect(await doorSessions(stack, anthropic, backend, label, build, expected, tools)).toEqual([]);
    }, 300_000);
  });
}

/** A tool result of ~1,600 characters (~400 tokens), distinct per `k`: a file an agent read. */
const readFile = (k: number) =>
  Array.from({ length: 40 }, (_, l) => `file${k}.ts:${l}: export const value${l} = ${k * 100 + l};`).join(
    '\n',
  );

/** A user turn, then `count` tool calls, each reading one file: ~400 tokens of result each. */
const manyToolResults =
  (count: number) =>
  (door: DoorName): Obj[] => {
    const out: Obj[] = [door === 'responses' ? respUser('Read the files.') : chatUser('Read the files.')];
    for (let k = 0; k < count; k++) {
      if (door === 'chat')
        out.push(chatCall(`call_${k}`), { role: 'tool', tool_call_id: `call_${k}`, content: readFile(k) });
      else if (door === 'responses')
        out.push(respCall(`call_${k}`), {
          type: 'function_call_output',
          call_id: `call_${k}`,
          output: readFile(k),
        });
      else out.push(msgCall(`toolu_${k}`), result(`toolu_${k}`, readFile(k)));
    }
    return out;
  };

// Many older tool results: each older one kept a sixty-fourth of the window (with its marker) and
// no total, so forty were already past an 8k window (refused every turn at 9,637 tokens, fifty at
// 11,469). Now the older ones share a sixteenth of the window, in order; past it each is a
// one-line note.
overflowingSessions(
  'fifty tool results of an agent reading files',
  'fifty tool results',
  manyToolResults(50),
  ['file0.ts:0:', '[toolproof left out this tool result (', 'file49.ts:39:'],
  true,
);

// Past ~55 calls the calls themselves, the notes and the last half window whole were over 8k
// whatever the results' share (56 refused at 8,458 tokens, every turn: Messages' "prompt is too
// long"). Now the older tool turns share an eighth of the window, calls and all; past it a run of
// them is its first call with a note that says the rest are left out (older-turns.ts).
overflowingSessions(
  'a hundred and sixty tool calls of an agent reading files',
  'a hundred and sixty tool calls',
  manyToolResults(160),
  ['file0.ts:0:', 'and the older tool calls after it, with their results', 'file159.ts:39:'],
  true,
);

/** A screenshot-taking session: a user turn, then twelve tool results that are each one image. */
function screenshots(door: DoorName): Obj[] {
  const out: Obj[] = [];
  out.push(door === 'responses' ? respUser('Click through the app.') : chatUser('Click through the app.'));
  for (let k = 0; k < 12; k++) {
    if (door === 'chat')
      out.push(chatCall(`call_${k}`), {
        role: 'tool',
        tool_call_id: `call_${k}`,
        content: [{ type: 'image_url', image_url: { url: PNG_URL } }],
      });
    else if (door === 'responses')
      out.push(respCall(`call_${k}`), {
        type: 'function_call_output',
        call_id: `call_${k}`,
        output: [{ type: 'input_image', image_url: PNG_URL, detail: 'auto' }],
      });
    else
      out.push(
        msgCall(`toolu_${k}`),
        result(`toolu_${k}`, [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ]),
      );
  }
  return out;
}

// A multimodal backend counts an image as the tokens its encoder makes of it (~1,200 for a
// Qwen2.5-VL screenshot): twelve overflow an 8k window. Before, images were not counted, nothing
// was cut, and every turn was the backend's refusal.
describe.each([
  { name: 'vLLM multimodal, 8k window known', file: { defaults: { contextWindow: 8192 } } },
  { name: 'vLLM multimodal, 8k window learnt from its refusal', file: {} },
])('a history of screenshots over the window: $name', ({ file }) => {
  const backend: Backend = {
    name: 'vLLM multimodal screenshots',
    sim: {
      personality: 'vllm',
      maxModelLen: 8192,
      enforceWindow: true,
      strictHistory: true,
      vision: true,
      imageTokens: 1200,
    },
    file,
    vision: true,
    audio: true,
  };
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({ sim: backend.sim as never, file: backend.file as never });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 60_000 });
  });
  afterAll(() => stack.close());

  it('three turns on every door, streamed and not, the older screenshots as notes', async () => {
    const expected = ["left out to fit the model's context window"];
    expect(await doorSessions(stack, anthropic, backend, 'screenshots', screenshots, expected, true)).toEqual(
      [],
    );
  }, 300_000);
});

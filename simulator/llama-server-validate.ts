/**
 * llama-server's request checks, with its real statuses and messages (recorded against build
 * b9928, see /work/shared/wire/llama-server/README.md). Some malformed inputs are 500, not 400:
 * that is what the server does.
 */
import { parseLikeNlohmann } from './nlohmann-json.js';
import { imageFetchError } from './image-fetch.js';
import { jsonTypeName, type SimError } from './personality.js';
import { strictHistoryProblem } from './history-checks.js';
import type { LlamaTemplate, SimulatorOptions } from './types.js';
import { isObject as isObj } from '../protocol/is-object.js';

type Obj = Record<string, unknown>;

const bad = (message: string): SimError => ({ status: 400, message });
const fail = (message: string): SimError => ({ status: 500, message });

const NUMBER_FIELDS = [
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'frequency_penalty',
  'presence_penalty',
  'repeat_penalty',
  'seed',
];

function typeError(field: string, want: string, value: unknown): SimError {
  return bad(
    `Field '${field}': [json.exception.type_error.302] type must be ${want}, but is ${jsonTypeName(value)}`,
  );
}

const JINJA_PREFIX =
  'Unable to generate parser for this template. Automatic parser generation failed: \n------------\n';

const JINJA = {
  mistralAlternate: `${JINJA_PREFIX}While executing CallExpression at line 18, column 32 in source:\n...== 0) %}↵            {{- raise_exception("After the optional system message, con...\n                                           ^\nError: Jinja Exception: After the optional system message, conversation roles must alternate user/assistant/user/assistant/...`,
  mistralCallId: `${JINJA_PREFIX}While executing CallExpression at line 62, column 36 in source:\n...9 %}↵                {{- raise_exception("Tool call IDs should be alphanumeric s...\n                                           ^\nError: Jinja Exception: Tool call IDs should be alphanumeric strings with length 9!`,
  mistralResultId: `${JINJA_PREFIX}While executing CallExpression at line 81, column 32 in source:\n... != 9 %}↵            {{- raise_exception("Tool call IDs should be alphanumeric s...\n                                           ^\nError: Jinja Exception: Tool call IDs should be alphanumeric strings with length 9!`,
  llama3Single: `${JINJA_PREFIX}While executing CallExpression at line 71, column 32 in source:\n... == 1 %}↵            {{- raise_exception("This model only supports single tool-c...\n                                           ^\nError: Jinja Exception: This model only supports single tool-calls at once!`,
};

const NINE = /^[a-zA-Z0-9]{9}$/;

/** The part types llama-server's parser takes (tools/server/server-common.cpp). */
const LLAMA_PART_TYPES: ReadonlySet<string> = new Set(['text', 'image_url', 'input_audio', 'input_video']);

function templateError(
  messages: Obj[],
  template: LlamaTemplate | undefined,
  nineCharIds: boolean,
): SimError | null {
  if (template === 'mistral') {
    // The Mistral template checks role alternation first, over user and plain assistant turns.
    const turns = messages.filter(
      (m) =>
        m.role === 'user' ||
        (m.role === 'assistant' && !(Array.isArray(m.tool_calls) && m.tool_calls.length)),
    );
    for (let i = 0; i < turns.length; i++) {
      if ((turns[i]?.role === 'user') !== (i % 2 === 0)) return bad(JINJA.mistralAlternate);
    }
  }
  if (template === 'llama3') {
    for (const m of messages) {
      if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 1)
        return bad(JINJA.llama3Single);
    }
  }
  if (template === 'mistral' || nineCharIds) {
    for (const m of messages) {
      if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
        for (const tc of m.tool_calls) {
          const id = isObj(tc) ? tc.id : undefined;
          if (typeof id !== 'string' || !NINE.test(id)) return bad(JINJA.mistralCallId);
        }
      }
      if (m.role === 'tool') {
        const id = m.tool_call_id;
        if (typeof id !== 'string' || !NINE.test(id)) return bad(JINJA.mistralResultId);
      }
    }
  }
  return null;
}

function messageErrors(messages: unknown[], vision: boolean, audio: boolean): SimError | null {
  for (const m of messages) {
    if (!isObj(m) || !('role' in m))
      return fail(`Failed to parse messages: Missing 'role' in message: ${JSON.stringify(m)}`);
    if (Array.isArray(m.content)) {
      for (const part of m.content) {
        // Newer builds (tools/server/server-common.cpp): video by `input_video` needs a video
        // mmproj; any type besides text, image_url, input_audio and input_video is a 400.
        if (isObj(part) && part.type === 'input_video' && !vision)
          return bad(
            'video input is not supported - hint: if this is unexpected, you may need to provide the mmproj',
          );
        if (isObj(part) && !LLAMA_PART_TYPES.has(String(part.type))) return bad('unsupported content[].type');
        if (
          isObj(part) &&
          ((part.type === 'image_url' && !vision) || (part.type === 'input_audio' && !audio))
        ) {
          return fail(
            part.type === 'image_url'
              ? 'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj'
              : 'audio input is not supported - hint: if this is unexpected, you may need to provide the mmproj',
          );
        }
      }
    }
    if (Array.isArray(m.tool_calls)) {
      for (const tc of m.tool_calls) {
        if (!isObj(tc) || (tc.type !== undefined && tc.type !== 'function')) {
          return fail(`Failed to parse messages: Unsupported tool call type: ${JSON.stringify(tc)}`);
        }
        const args = isObj(tc.function) ? tc.function.arguments : undefined;
        if (typeof args === 'string') {
          const parsed = parseLikeNlohmann(args);
          if (!parsed.ok) return fail(`Failed to parse tool call arguments as JSON: ${parsed.message}`);
        }
      }
    }
  }
  return null;
}

export function validateLlamaChat(body: Obj, options: SimulatorOptions): SimError | null {
  if (!('messages' in body)) return bad("'messages' is required");
  const messages = body.messages;
  if (!Array.isArray(messages)) return bad("Expected 'messages' to be an array");
  if ('stream' in body && typeof body.stream !== 'boolean' && body.stream !== null) {
    return typeError('stream', 'boolean', body.stream);
  }
  for (const f of NUMBER_FIELDS) {
    if (f in body && typeof body[f] !== 'number' && body[f] !== null) return typeError(f, 'number', body[f]);
  }
  for (const f of ['max_tokens', 'max_completion_tokens']) {
    const v = body[f];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number') return typeError(f, 'number', v);
    if (v < -1 || v > 2147483647) {
      return bad(`Field '${f}': Value must be between -1 <= value <= 2147483647, but got ${v}`);
    }
  }
  if (typeof body.n === 'number' && body.n !== 1) {
    return bad(`Field 'n': Value must be between 1 <= value <= 1, but got ${body.n}`);
  }
  const choice = body.tool_choice;
  if (typeof choice === 'string' && !['auto', 'none', 'required'].includes(choice)) {
    return bad(`Invalid tool_choice: ${choice}`);
  }
  const rf = body.response_format;
  if (isObj(rf) && typeof rf.type === 'string' && !['text', 'json_object', 'json_schema'].includes(rf.type)) {
    return bad(`response_format type must be one of "text" or "json_object", but got: ${rf.type}`);
  }
  const tools = body.tools;
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) {
      return fail(
        `Failed to parse tools: Expected 'tools' to be an array, got ${JSON.stringify(tools)}; tools = ${JSON.stringify(tools, null, 2)}`,
      );
    }
    for (const tool of tools) {
      if (!isObj(tool) || !isObj(tool.function)) {
        return fail(
          `Failed to parse tools: Missing tool function: ${JSON.stringify(tool)}; tools = ${JSON.stringify(tools, null, 2)}`,
        );
      }
    }
  }
  const hasTools = Array.isArray(tools) && tools.length > 0;
  if (body.logprobs === true && hasTools && body.stream === true) {
    return bad('logprobs is not supported with tools + stream');
  }
  // tools/server/server-common.cpp (oaicompat_chat_params_parse), right after the check above.
  if (body.logprobs !== true && body.top_logprobs !== undefined && body.top_logprobs !== null) {
    return bad('top_logprobs requires logprobs to be set to true');
  }
  const msgError = messageErrors(messages, options.vision === true, options.audio === true);
  if (msgError) return msgError;
  const fetchError = imageFetchError(messages, options);
  if (fetchError) return fetchError;
  const objs = messages as Obj[];
  let trailing = 0;
  for (let i = objs.length - 1; i >= 0 && objs[i]?.role === 'assistant'; i--) trailing++;
  if (trailing >= 2) return bad('Cannot have 2 or more assistant messages at the end of the list.');
  // A single trailing assistant message is a prefill: the template never sees it.
  const templated = objs[objs.length - 1]?.role === 'assistant' ? objs.slice(0, -1) : objs;
  const tplError = templateError(templated, options.template, options.nineCharIds === true);
  if (tplError) return tplError;
  if (options.strictHistory) {
    const problem = strictHistoryProblem(objs);
    if (problem) return bad(problem);
  }
  if (options.rejectRequired && choice === 'required' && hasTools) {
    return bad('Failed to initialize samplers: std::exception');
  }
  const formatError = audioFormatError(messages);
  if (formatError) return formatError;
  if (
    (options.vision === true && messages.some(carriesUndecodableImage)) ||
    (options.audio === true && messages.some(carriesUndecodableAudio))
  )
    return { status: 400, type: 'invalid_request_error', message: 'Failed to load image or audio file' };
  return null;
}

/**
 * llama-server reads an `input_audio` part's format before anything is loaded
 * (tools/server/server-common.cpp, oaicompat_chat_params_parse): anything but `wav` or `mp3` is
 * its 400 (an std::invalid_argument).
 */
function audioFormatError(messages: unknown[]): SimError | null {
  for (const m of messages) {
    if (!isObj(m) || !Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (!isObj(p) || p.type !== 'input_audio') continue;
      const format = isObj(p.input_audio) ? p.input_audio.format : undefined;
      if (format !== 'wav' && format !== 'mp3')
        return {
          status: 400,
          type: 'invalid_request_error',
          message: "input_audio.format must be either 'wav' or 'mp3'",
        };
    }
  }
  return null;
}

/**
 * A clip llama-server cannot load (mtmd-helper takes only WAV, MP3 and FLAC bytes as audio and
 * hands anything else to stb_image): Ogg (`OggS`), WebM (EBML), MP4/M4A (`ftyp` at byte 4), or a
 * data URL where base64 belongs. Bytes of no known format pass here, as for images (tests send
 * placeholder bytes); the real server refuses them too.
 */
function carriesUndecodableAudio(m: unknown): boolean {
  if (!isObj(m) || !Array.isArray(m.content)) return false;
  return m.content.some((p) => {
    if (!isObj(p) || p.type !== 'input_audio' || !isObj(p.input_audio)) return false;
    const data = p.input_audio.data;
    if (typeof data !== 'string') return false;
    if (data.startsWith('data:')) return true;
    const head = Buffer.from(data.slice(0, 16), 'base64').toString('latin1');
    return head.startsWith('OggS') || head.startsWith('\x1a\x45\xdf\xa3') || head.slice(4, 8) === 'ftyp';
  });
}

/**
 * The first bytes of image formats stb_image (llama-server's decoder, through mtmd) does not read:
 * WebP (RIFF), SVG, TIFF (both byte orders). Bytes of no known format pass here (llama-server
 * refuses them too; the simulator stays lenient where tests send placeholder bytes).
 */
const UNREADABLE_SIGNATURES = ['UklGR', 'PHN2Zy', 'PD94bWw', 'SUkqA', 'TU0AK'];

/**
 * An inline image stb_image cannot decode (WebP, SVG, TIFF): llama-server refuses the whole request
 * when it loads the media, naming no image, a 400 "Failed to load image or audio file" (field
 * reports: WebP screenshots; policies/image-decode/refusal.ts names them).
 */
function carriesUndecodableImage(m: unknown): boolean {
  if (!isObj(m) || !Array.isArray(m.content)) return false;
  return m.content.some((p) => {
    if (!isObj(p) || p.type !== 'image_url') return false;
    const url = isObj(p.image_url) ? p.image_url.url : p.image_url;
    if (typeof url !== 'string' || !url.startsWith('data:')) return false;
    const base64 = url.slice(url.indexOf(',') + 1);
    return UNREADABLE_SIGNATURES.some((sig) => base64.startsWith(sig));
  });
}

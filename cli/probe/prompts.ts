/**
 * What the probe sends: the run_python tool, the two kinds of question, and the request bodies
 * of the 2x2 experiment. Pure: the random string of the unmemorizable question comes in as an
 * argument, so the same inputs build the same requests.
 */
import type { ChatCompletionRequest, ChatMessage, ToolDef } from '../../protocol/openai.js';
import type { DeclaredTool } from '../../parsers/types.js';
import type { ChoiceMode, Question } from './types.js';

export const RUN_PYTHON: ToolDef = {
  type: 'function',
  function: {
    name: 'run_python',
    description:
      'Run Python code in a sandbox and return its stdout. Use it whenever a question needs computation or code execution.',
    parameters: {
      type: 'object',
      properties: { code: { type: 'string', description: 'The Python source to run.' } },
      required: ['code'],
    },
  },
};

/** A tool the questions never call for: asking for it by name tests whether named tool_choice is honoured. */
export const GET_WEATHER: ToolDef = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather for a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'The city name.' } },
      required: ['city'],
    },
  },
};

export function declaredTools(tools: readonly ToolDef[]): DeclaredTool[] {
  return tools.map((tool) => {
    const declared: DeclaredTool = { name: tool.function.name };
    if (tool.function.parameters) declared.parameters = tool.function.parameters;
    return declared;
  });
}

const SYSTEM_PROMPT =
  'You are a helpful assistant. When a question needs computation or code execution, call the run_python tool ' +
  'instead of guessing; you will get its output in the next turn.';

/** Questions a model has very likely seen answered: it can answer from memory and skip the tool. */
const MEMORIZABLE = [
  'What is 17 * 23? I need the exact value.',
  'What is the sum of all prime numbers between 1 and 1000? I need the exact value.',
  'What is 2 to the power of 20? I need the exact value.',
];

function questionText(question: Question, run: number, randomString: string): string {
  if (question === 'unmemorizable') {
    return `What is the SHA-256 hex digest of the string '${randomString}'? I need the exact value.`;
  }
  return MEMORIZABLE[run % MEMORIZABLE.length] ?? MEMORIZABLE[0]!;
}

export interface RequestTuning {
  model: string;
  maxTokens: number;
  temperature: number;
}

export function experimentRequest(
  tuning: RequestTuning,
  question: Question,
  toolChoice: ChoiceMode,
  run: number,
  randomString: string,
): ChatCompletionRequest {
  return {
    model: tuning.model,
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: questionText(question, run, randomString) },
    ],
    tools: [RUN_PYTHON],
    tool_choice: toolChoice,
    max_tokens: tuning.maxTokens,
    temperature: tuning.temperature,
  };
}

/** 9 alphanumerics: the id shape Mistral-family templates insist on, so only the tested variable differs. */
const NINE_CHAR_ID = 'a1B2c3D4e';
/** The id shape vLLM and OpenAI generate; Mistral templates reject it. */
const LONG_ID = 'call_9f8e7d6c5b4a39281706';

export type HistoryVariant =
  | 'control'
  | 'unanswered-call'
  | 'malformed-arguments'
  | 'non-nine-char-id'
  | 'user-after-tool';

/**
 * A short, valid conversation (user, assistant tool call, tool result, assistant, user) and
 * variants that each break exactly one rule, so a rejection points at that rule.
 */
function historyMessages(variant: HistoryVariant): ChatMessage[] {
  const id = variant === 'non-nine-char-id' ? LONG_ID : NINE_CHAR_ID;
  const args = variant === 'malformed-arguments' ? '{"code": "print(17 * 23)' : '{"code": "print(17 * 23)"}';
  const call: ChatMessage = {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'run_python', arguments: args } }],
  };
  const result: ChatMessage = { role: 'tool', tool_call_id: id, content: '391' };
  const answer: ChatMessage = { role: 'assistant', content: '17 * 23 = 391.' };
  const first: ChatMessage = { role: 'user', content: 'What is 17 * 23?' };
  const next: ChatMessage = { role: 'user', content: 'Thanks. Reply with the single word: done.' };
  switch (variant) {
    case 'unanswered-call':
      return [first, call, next];
    case 'user-after-tool':
      return [first, call, result, next];
    default:
      return [first, call, result, answer, next];
  }
}

export function historyRequest(tuning: RequestTuning, variant: HistoryVariant): ChatCompletionRequest {
  return {
    model: tuning.model,
    messages: historyMessages(variant),
    tools: [RUN_PYTHON],
    tool_choice: 'auto',
    max_tokens: Math.min(tuning.maxTokens, 32),
    temperature: 0,
  };
}

export function requiredCheckRequest(tuning: RequestTuning): ChatCompletionRequest {
  return {
    model: tuning.model,
    messages: [{ role: 'user', content: 'What is 17 * 23?' }],
    tools: [RUN_PYTHON],
    tool_choice: 'required',
    max_tokens: tuning.maxTokens,
    temperature: 0,
  };
}

/** The question needs run_python (if anything); the choice names get_weather. Honoured = get_weather comes back. */
export function namedChoiceRequest(tuning: RequestTuning): ChatCompletionRequest {
  return {
    model: tuning.model,
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: 'What is 12345 * 6789? Compute it exactly.' },
    ],
    tools: [RUN_PYTHON, GET_WEATHER],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    max_tokens: tuning.maxTokens,
    temperature: 0,
  };
}

export function parallelRequest(tuning: RequestTuning): ChatCompletionRequest {
  return {
    model: tuning.model,
    messages: [
      {
        role: 'system',
        content: 'You are a helpful assistant. Call tools in parallel when requests are independent.',
      },
      { role: 'user', content: 'What is the weather in Paris and what is the weather in Tokyo? Check both.' },
    ],
    tools: [GET_WEATHER, RUN_PYTHON],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    max_tokens: tuning.maxTokens,
    temperature: 0,
  };
}

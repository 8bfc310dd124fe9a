/**
 * The request bodies the bench sends, and what the fake upstream answers (shared with
 * fake-upstream.ts so the checks in run.ts know what to expect). Bodies are serialized once with
 * JSON.stringify (no spaces: the fake upstream looks for `"stream":true` and `"tools":[`).
 */

export const MODEL = 'bench-model';
export const STREAM_CHUNKS = 50;
export const FINAL_ANSWER_TEXT = 'The weather in Paris is 18 degrees and sunny.';
export const PLAIN_ANSWER_TEXT = 'Hello! How can I help you today?';

/** A chat request without tools, about 300 bytes: nothing for the policies to do. */
export function smallBody(): Buffer {
  return Buffer.from(
    JSON.stringify({
      model: MODEL,
      messages: [
        { role: 'system', content: 'You are a concise assistant. Answer in one sentence.' },
        {
          role: 'user',
          content:
            'Hi there! Could you tell me, in a friendly way, what you can help me with today? Keep it short.',
        },
      ],
      temperature: 0.2,
      max_tokens: 64,
    }),
  );
}

/** The same request, streamed. */
export function streamBody(): Buffer {
  const body = JSON.parse(smallBody().toString()) as Record<string, unknown>;
  return Buffer.from(JSON.stringify({ ...body, stream: true }));
}

/**
 * A long conversation of about `targetBytes` (default 200 KB): alternating user / assistant
 * messages of about 400 characters each, no tools, non-streaming.
 */
export function historyBody(targetBytes = 200 * 1024): Buffer {
  const filler =
    'Here is some more context about the project: the build uses TypeScript, the tests run with vitest, and the ' +
    'deployment goes through a container image with a health check. We discussed caching, retries and timeouts ' +
    'at length, and agreed that latency matters more than throughput for the interactive path. ';
  const messages: { role: string; content: string }[] = [
    { role: 'system', content: 'You are a helpful engineering assistant.' },
  ];
  let size = 200;
  for (let i = 0; size < targetBytes; i++) {
    const content = `(${i}) ${filler}`;
    messages.push({ role: i % 2 === 0 ? 'user' : 'assistant', content });
    size += content.length + 32;
  }
  messages.push({ role: 'user', content: 'Summarize the discussion in one paragraph.' });
  return Buffer.from(JSON.stringify({ model: MODEL, messages, max_tokens: 256 }));
}

/**
 * A chat request WITH tools and no tool_choice: toolproof forces tool use (adds final_answer,
 * tool_choice "required"), then unwraps the upstream's final_answer call into content, validates
 * the arguments, and runs leak recovery / normalization on the way back.
 */
export function toolsBody(): Buffer {
  return Buffer.from(
    JSON.stringify({
      model: MODEL,
      messages: [
        { role: 'system', content: 'You are a weather assistant. Use the tools when they help.' },
        { role: 'user', content: 'What is the weather in Paris right now?' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather for a city.',
            parameters: {
              type: 'object',
              properties: {
                city: { type: 'string', description: 'City name, e.g. Paris' },
                unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
              },
              required: ['city'],
              additionalProperties: false,
            },
          },
        },
        {
          type: 'function',
          function: {
            name: 'search_web',
            description: 'Search the web and return the top results.',
            parameters: {
              type: 'object',
              properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 10 } },
              required: ['query'],
            },
          },
        },
      ],
      temperature: 0.2,
    }),
  );
}

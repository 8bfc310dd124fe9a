/**
 * What the openai SDK reads from a chat completion through toolproof, streamed (through the SDK's
 * own stream runner) or not: the calls with their arguments parsed, the content and the finish
 * reason. The recall tests that send a leaked call through the server compare this one shape on
 * both paths, so a reading that differs between them shows in one place.
 */
import OpenAI from 'openai';

export interface SdkReading {
  calls: [string, unknown][];
  content: string | null;
  finish: string | null;
}

type FunctionDef = { name: string; parameters: Record<string, unknown> };
type Call = { function: { name: string; arguments: string } };

export async function readThroughSdk(
  origin: string,
  tools: FunctionDef[],
  stream: boolean,
): Promise<SdkReading> {
  const openai = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'x', maxRetries: 0 });
  const params = {
    model: 'm1',
    messages: [{ role: 'user' as const, content: 'go' }],
    tools: tools.map((f) => ({ type: 'function' as const, function: f })),
  };
  let choice: OpenAI.Chat.Completions.ChatCompletion.Choice;
  if (stream) {
    const runner = openai.chat.completions.stream(params);
    for await (const _ of runner) {
      // drained
    }
    choice = (await runner.finalChatCompletion()).choices[0]!;
  } else {
    choice = (await openai.chat.completions.create(params)).choices[0]!;
  }
  const m = choice.message;
  return {
    calls: (m.tool_calls ?? []).map((c) => [
      (c as Call).function.name,
      JSON.parse((c as Call).function.arguments),
    ]),
    content: m.content ?? null,
    finish: choice.finish_reason,
  };
}

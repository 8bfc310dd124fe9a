import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { cachedTokens, PrefixCache, renderPrompt } from '../../simulator/prefix-cache.js';
import { chat, sseEvents, WEATHER_TOOL } from './helpers.js';

const SYSTEM = { role: 'system', content: `You are a careful agent. ${'Follow the rules. '.repeat(60)}` };

describe('PrefixCache', () => {
  it('serves the longest unchanged prefix in whole blocks, and nothing after a changed byte', () => {
    const cache = new PrefixCache({ blockTokens: 4 });
    const a = 'x'.repeat(160);
    expect(cache.admit(a)).toBe(0);
    expect(cache.admit(`${a}yyyy`)).toBe(160);
    // One early byte changed: the blocks after it are new even though their text is the same.
    expect(cache.admit(`z${a.slice(1)}`)).toBe(0);
  });

  it('evicts the least recently used blocks past its capacity', () => {
    const cache = new PrefixCache({ blockTokens: 1, capacityTokens: 10 });
    cache.admit('a'.repeat(40)); // 10 blocks
    cache.admit('b'.repeat(40)); // 10 more: the a-blocks go
    expect(cache.admit('a'.repeat(40))).toBe(0);
  });

  it('always leaves the last prompt token to evaluate', () => {
    const cache = new PrefixCache({ blockTokens: 1 });
    const p = renderPrompt([], [{ role: 'user', content: 'hello there' }]);
    cachedTokens(cache, p);
    const again = cachedTokens(cache, p);
    expect(again.cached).toBe(again.prompt - 1);
  });
});

describe('simulator prefix cache on the wire', () => {
  let sim: Simulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  const turn1 = {
    model: 'm',
    tools: [WEATHER_TOOL],
    messages: [SYSTEM, { role: 'user', content: 'Paris?' }],
  };
  const turn2 = {
    ...turn1,
    messages: [
      ...turn1.messages,
      { role: 'assistant', content: 'Sunny.' },
      { role: 'user', content: 'And Rome?' },
    ],
  };

  it('llama-server: timings.cache_n and usage.prompt_tokens_details.cached_tokens (cache_n + prompt_n = prompt_tokens)', async () => {
    sim = await createSimulator({ personality: 'llama-server', scenario: 'prose' });
    const first = await chat(sim, turn1);
    expect((first.json.timings as { cache_n: number }).cache_n).toBe(0);
    const second = await chat(sim, turn2);
    const timings = second.json.timings as { cache_n: number; prompt_n: number };
    const usage = second.json.usage as {
      prompt_tokens: number;
      prompt_tokens_details: { cached_tokens: number };
    };
    expect(timings.cache_n).toBeGreaterThan(0);
    expect(timings.cache_n + timings.prompt_n).toBe(usage.prompt_tokens);
    expect(usage.prompt_tokens_details.cached_tokens).toBe(timings.cache_n);
    // Turn 1's whole rendered prompt (but its cut last block) is reused.
    expect(timings.cache_n).toBeGreaterThan(sim.requests[0]!.promptTokens! - 20);
    expect(sim.requests[1]!.cachedTokens).toBe(timings.cache_n);
  });

  it('llama-server streamed: the last chunk carries the same timings', async () => {
    sim = await createSimulator({ personality: 'llama-server', scenario: 'prose' });
    await chat(sim, turn1);
    const res = await chat(sim, { ...turn2, stream: true, stream_options: { include_usage: true } });
    const events = sseEvents(res.text) as Array<{ timings?: { cache_n: number }; usage?: unknown }>;
    const last = events.filter((e) => e.timings).at(-1);
    expect(last?.timings?.cache_n).toBe(sim.requests[1]!.cachedTokens);
    expect(sim.requests[1]!.cachedTokens).toBeGreaterThan(0);
  });

  it('vLLM: prompt_tokens_details only with --enable-prompt-tokens-details', async () => {
    sim = await createSimulator({ personality: 'vllm', scenario: 'prose' });
    await chat(sim, turn1);
    const plain = await chat(sim, turn2);
    expect((plain.json.usage as { prompt_tokens_details: unknown }).prompt_tokens_details).toBeNull();
    await sim.close();
    sim = await createSimulator({ personality: 'vllm', scenario: 'prose', promptTokensDetails: true });
    await chat(sim, turn1);
    const detailed = await chat(sim, turn2);
    const cached = (detailed.json.usage as { prompt_tokens_details: { cached_tokens: number } })
      .prompt_tokens_details.cached_tokens;
    expect(cached).toBeGreaterThan(0);
    expect(cached % 16).toBe(0); // whole blocks
  });

  it('a changed tool list reuses nothing; prefixCache: false reuses nothing ever', async () => {
    sim = await createSimulator({ personality: 'llama-server', scenario: 'prose' });
    await chat(sim, turn1);
    const other = {
      ...turn2,
      tools: [{ ...WEATHER_TOOL, function: { ...WEATHER_TOOL.function, name: 'w2' } }],
    };
    await chat(sim, other);
    expect(sim.requests[1]!.cachedTokens).toBeLessThan(10);
    await sim.close();
    sim = await createSimulator({ personality: 'llama-server', scenario: 'prose', prefixCache: false });
    await chat(sim, turn1);
    await chat(sim, turn2);
    expect(sim.requests[1]!.cachedTokens).toBe(0);
  });
});

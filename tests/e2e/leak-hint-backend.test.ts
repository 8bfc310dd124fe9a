/**
 * A leak's backend hint names the fix for the server actually in use (glass19's walk: a leak on
 * llama-server said "vllm --tool-call-parser hermes"). The kind is learnt at start-up with the
 * capabilities (server/capability-probe.ts: llama-server's /props, else /v1/models `owned_by`);
 * unknown, the hint names every server's fix. Through the real server, the simulator as each
 * server, the real openai SDK and the inspector's API.
 */
import { describe, expect, it } from 'vitest';
import { kindFromModels, resolveCapabilities } from '../../server/capability-probe.js';
import type { SimulatorOptions } from '../../simulator/types.js';
import { startStack, weatherTool } from '../server/stack.js';

const LEAKED =
  'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

/** The leak decision's detail in the inspector's record of one leaked turn. */
async function leakDetail(sim: Partial<SimulatorOptions>, probe: boolean): Promise<string> {
  const first = await startStack({ sim });
  const defaults = probe ? (await resolveCapabilities(first.app.toolproof.config)).defaults : undefined;
  await first.close();
  const stack = await startStack({ sim, ...(defaults ? { config: { defaults } } : {}) });
  try {
    const res = await stack.client.chat.completions
      .create(
        { model: 'sim', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weatherTool] },
        { headers: { 'x-sim-scenario': JSON.stringify({ raw: LEAKED }) } },
      )
      .withResponse();
    expect(res.data.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather' } });
    const id = res.response.headers.get('x-request-id');
    const view = (await (await fetch(`${stack.origin}/inspect/api/requests/${id}`)).json()) as {
      record: { decisions: Array<{ kind: string; detail?: string }> };
    };
    return view.record.decisions.find((d) => d.kind === 'leak')?.detail ?? '';
  } finally {
    await stack.close();
  }
}

describe("a leak's backend hint", () => {
  it("llama-server: its chat format, not vLLM's parser", async () => {
    const detail = await leakDetail({ personality: 'llama-server' }, true);
    expect(detail).toContain('llama-server chat format Hermes 2 Pro');
    expect(detail).not.toContain('vllm');
  });

  it('vLLM: its --tool-call-parser', async () => {
    const detail = await leakDetail({ personality: 'vllm' }, true);
    expect(detail).toContain('vllm --tool-call-parser hermes');
    expect(detail).not.toContain('llama-server');
  });

  it("unknown (not probed): every server's fix that parses it, none as the only one", async () => {
    const detail = await leakDetail({ personality: 'llama-server' }, false);
    expect(detail).toContain(
      'vllm --tool-call-parser hermes or llama-server chat format Hermes 2 Pro or sglang --tool-call-parser qwen25',
    );
  });

  it("which server a /v1/models list is, by the served model's owned_by (SGLang's says 'sglang')", () => {
    const list = (...owners: string[]) => ({
      data: owners.map((owned_by, i) => ({ id: `m${i}`, object: 'model', owned_by })),
    });
    expect(kindFromModels(list('sglang'), undefined)).toBe('sglang');
    expect(kindFromModels(list('llamacpp'), 'm0')).toBe('llama-server');
    expect(kindFromModels(list('vllm', 'sglang'), 'm1')).toBe('sglang');
    // A gateway's own name, or several models and none named: not known.
    expect(kindFromModels(list('openai'), undefined)).toBeUndefined();
    expect(kindFromModels(list('vllm', 'vllm'), undefined)).toBeUndefined();
  });
});

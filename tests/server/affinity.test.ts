import { afterEach, describe, expect, it } from 'vitest';
import { affinityKey, rendezvousOrder } from '../../server/affinity.js';
import { ReplicaSet } from '../../server/replica-set.js';
import { stripBillingNonce } from '../../protocol/billing-header.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { startProxy, type RunningProxy } from '../support/harness.js';

const REPLICAS = [
  'http://10.0.0.1:8000',
  'http://10.0.0.2:8000',
  'http://10.0.0.3:8000',
  'http://10.0.0.4:8000',
];
const keys = Array.from({ length: 2000 }, (_, i) => `conversation-${i}`);
const owner = (key: string, list: readonly string[]) => list[rendezvousOrder(key, list)[0]!]!;

describe('rendezvous hashing', () => {
  it('spreads conversations evenly over the replicas', () => {
    const counts = new Map<string, number>();
    for (const k of keys) counts.set(owner(k, REPLICAS), (counts.get(owner(k, REPLICAS)) ?? 0) + 1);
    for (const r of REPLICAS) expect(counts.get(r)).toBeGreaterThan(400); // 500 each when perfectly even
  });

  it('the order depends on the list, not on its order (every worker and replica agrees)', () => {
    const reversed = [...REPLICAS].reverse();
    for (const k of keys.slice(0, 200)) expect(owner(k, reversed)).toBe(owner(k, REPLICAS));
  });

  it('a removed replica moves only its own conversations; an added one takes about 1/n', () => {
    const fewer = REPLICAS.slice(0, 3);
    let moved = 0;
    for (const k of keys) {
      const before = owner(k, REPLICAS);
      if (before === REPLICAS[3]) continue;
      if (owner(k, fewer) !== before) moved++;
    }
    expect(moved).toBe(0);
    const more = [...REPLICAS, 'http://10.0.0.5:8000'];
    const gained = keys.filter((k) => owner(k, more) !== owner(k, REPLICAS));
    expect(gained.every((k) => owner(k, more) === 'http://10.0.0.5:8000')).toBe(true);
    expect(gained.length).toBeGreaterThan(300);
    expect(gained.length).toBeLessThan(500);
  });
});

describe('affinityKey', () => {
  const chat = (messages: ChatCompletionRequest['messages']): ChatCompletionRequest => ({
    model: 'm',
    messages,
  });
  const opening = chat([
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'Fix the bug.' },
  ]);
  const later = chat([
    ...opening.messages,
    { role: 'assistant', content: 'Looking.' },
    { role: 'user', content: 'Go on.' },
  ]);

  it('is the same on every turn of a conversation that grows by appending', () => {
    expect(affinityKey({}, {}, later)).toBe(affinityKey({}, {}, opening));
    const other = chat([opening.messages[0]!, { role: 'user', content: 'Write docs.' }]);
    expect(affinityKey({}, {}, other)).not.toBe(affinityKey({}, {}, opening));
  });

  it('prefers a session id the client sends: headers, prompt_cache_key, metadata.user_id', () => {
    expect(affinityKey({ 'x-claude-code-session-id': 's1' }, {}, opening)).toBe('h:s1');
    expect(affinityKey({ session_id: 'codex-1' }, {}, opening)).toBe('h:codex-1');
    // opencode 1.x to an OpenAI-compatible provider: both headers carry its session id.
    expect(affinityKey({ 'x-session-affinity': 'ses_abc', 'x-session-id': 'ses_abc' }, {}, opening)).toBe(
      'h:ses_abc',
    );
    expect(affinityKey({ 'x-session-id': 'ses_def' }, {}, opening)).toBe('h:ses_def');
    expect(affinityKey({}, { prompt_cache_key: 'pk' }, opening)).toBe('p:pk');
    expect(affinityKey({}, { metadata: { user_id: 'user_x_session_y' } }, opening)).toBe(
      'u:user_x_session_y',
    );
  });

  it("ignores Claude Code's per-request billing nonce", () => {
    const withNonce = (n: string) =>
      chat([
        {
          role: 'system',
          content: `x-anthropic-billing-header: cc_version=2.1.37.abc; cc_entrypoint=cli; cch=${n};\n\nYou are Claude Code.`,
        },
        { role: 'user', content: 'hi' },
      ]);
    expect(affinityKey({}, {}, withNonce('36ee5'))).toBe(affinityKey({}, {}, withNonce('0aaa9')));
  });
});

describe('stripBillingNonce', () => {
  it('makes the nonce constant, keeps everything else, and leaves other text alone', () => {
    expect(
      stripBillingNonce('x-anthropic-billing-header: cc_version=2.1.37.abc; cc_entrypoint=cli; cch=36ee5;'),
    ).toBe('x-anthropic-billing-header: cc_version=2.1.37.abc; cc_entrypoint=cli; cch=00000;');
    expect(stripBillingNonce('You are helpful. cch=12345;')).toBe('You are helpful. cch=12345;');
    expect(stripBillingNonce('x-anthropic-billing-header: cc_version=1;')).toBe(
      'x-anthropic-billing-header: cc_version=1;',
    );
  });
});

describe('ReplicaSet.pick', () => {
  const options = { connections: 1 };
  it('keeps a key on its replica, skips a down one, and goes to the least loaded when saturated', async () => {
    let now = 0;
    const set = new ReplicaSet(REPLICAS, options, { enabled: true, maxInflight: 2 }, () => now);
    const home = set.pick('k', []);
    expect(set.pick('k', [])).toBe(home);
    set.markDown(home);
    const second = set.pick('k', []);
    expect(second).not.toBe(home);
    now += 10_000; // back up: the conversation comes home
    expect(set.pick('k', [])).toBe(home);
    const a = set.acquire(home);
    const b = set.acquire(home);
    const elsewhere = set.pick('k', []);
    expect(elsewhere).not.toBe(home);
    expect(set.load()[elsewhere]).toBe(0);
    a();
    b();
    expect(set.pick('k', [])).toBe(home);
    await set.destroy();
  });
});

describe('affinity end to end: every turn of a conversation reaches one replica', () => {
  let sims: Simulator[] = [];
  let proxy: RunningProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    await Promise.all(sims.map((s) => s.close()));
    proxy = undefined;
    sims = [];
  });

  async function run(env: Record<string, string>): Promise<Simulator[][]> {
    sims = await Promise.all(
      [0, 1, 2, 3].map(() => createSimulator({ personality: 'llama-server', scenario: 'prose' })),
    );
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: sims.map((s) => s.url).join(','), ...env });
    const served: Simulator[][] = [];
    for (let c = 0; c < 8; c++) {
      const messages: Array<{ role: string; content: string }> = [
        { role: 'system', content: 'You are an agent.' },
        { role: 'user', content: `Task number ${c}.` },
      ];
      served.push([]);
      for (let t = 0; t < 4; t++) {
        const before = sims.map((s) => s.requests.length);
        const res = await fetch(`${proxy.origin}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages }),
        });
        const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
        expect(res.status).toBe(200);
        served[c]!.push(sims.find((s, i) => s.requests.length > before[i]!)!);
        messages.push({ role: 'assistant', content: body.choices[0]!.message.content });
        messages.push({ role: 'user', content: `Next step ${t}.` });
      }
    }
    return served;
  }

  it('on by default: one replica per conversation, and later turns come from its cache', async () => {
    const served = await run({});
    for (const turns of served) expect(new Set(turns).size).toBe(1);
    expect(new Set(served.map((t) => t[0])).size).toBeGreaterThan(1); // conversations still spread
    const later = sims.flatMap((s) =>
      s.requests.filter((r) => r.body && (r.body as { messages: unknown[] }).messages.length > 2),
    );
    expect(later.every((r) => (r.cachedTokens ?? 0) > 0)).toBe(true);
  });

  it('TOOLPROOF_AFFINITY=off: plain balancing spreads the turns of one conversation', async () => {
    const served = await run({ TOOLPROOF_AFFINITY: 'off' });
    expect(served.some((turns) => new Set(turns).size > 1)).toBe(true);
  });
});

describe('affinity config', () => {
  it('TOOLPROOF_AFFINITY is on or off; the in-flight limit is at least 1', async () => {
    const { loadConfig } = await import('../../server/config.js');
    const url = { TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' };
    expect(loadConfig(url).affinity).toEqual({ enabled: true, maxInflight: 64 });
    expect(loadConfig({ ...url, TOOLPROOF_AFFINITY: 'off' }).affinity?.enabled).toBe(false);
    expect(loadConfig(url, { affinity: { enabled: false, maxInflight: 8 } }).affinity).toEqual({
      enabled: false,
      maxInflight: 8,
    });
    expect(() => loadConfig({ ...url, TOOLPROOF_AFFINITY: 'maybe' })).toThrow(
      /TOOLPROOF_AFFINITY must be on or off/,
    );
    expect(() => loadConfig({ ...url, TOOLPROOF_AFFINITY_MAX_INFLIGHT: '0' })).toThrow(/at least 1/);
  });
});

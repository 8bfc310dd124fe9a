import { describe, expect, it } from 'vitest';
import { type ConformanceOutcomes, evaluateChecks } from '../../cli/probe/conformance.js';
import type { ChatOutcome } from '../../cli/probe/http.js';
import type { CheckId, CheckResult } from '../../cli/probe/types.js';

const accepted: ChatOutcome = { ok: true, status: 200, body: {} };
const rejected = (message: string): ChatOutcome => ({ ok: false, status: 400, message });

function outcomes(overrides: Partial<ConformanceOutcomes> = {}): ConformanceOutcomes {
  return {
    required: { kind: 'tool_call', names: ['run_python'] },
    named: { kind: 'tool_call', names: ['get_weather'] },
    parallel: { kind: 'tool_call', names: ['get_weather', 'get_weather'] },
    history: {
      control: accepted,
      'unanswered-call': accepted,
      'malformed-arguments': accepted,
      'non-nine-char-id': accepted,
      'user-after-tool': accepted,
    },
    ...overrides,
  };
}

function byId(results: CheckResult[], id: CheckId): CheckResult {
  const found = results.find((r) => r.id === id);
  if (!found) throw new Error(`no check ${id}`);
  return found;
}

describe('evaluateChecks', () => {
  it('a conforming backend passes every check and calls for no setting', () => {
    const results = evaluateChecks(outcomes());
    expect(results.map((r) => r.status)).toEqual(Array(results.length).fill('ok'));
    expect(results.some((r) => r.setting)).toBe(false);
  });

  it('"required" rejected: noted, toolproof falls back to auto', () => {
    const results = evaluateChecks(
      outcomes({
        required: { kind: 'error', status: 400, message: 'tool_choice required is not supported' },
      }),
    );
    const check = byId(results, 'required-accepted');
    expect(check.status).toBe('problem');
    expect(check.advice).toMatch(/falls back to "auto"/);
  });

  it('"required" accepted but prose came back: not enforced', () => {
    const check = byId(
      evaluateChecks(
        outcomes({
          required: { kind: 'prose', claimsExecution: false, looksLikeCall: false, excerpt: '391' },
        }),
      ),
      'required-accepted',
    );
    expect(check).toMatchObject({ status: 'problem', detail: expect.stringMatching(/not enforced/) });
  });

  it('a named tool_choice answered with another tool is silently ignored', () => {
    const check = byId(
      evaluateChecks(outcomes({ named: { kind: 'tool_call', names: ['run_python'] } })),
      'named-tool-choice',
    );
    expect(check).toMatchObject({
      status: 'problem',
      detail: expect.stringMatching(/silently ignored.*run_python/),
    });
  });

  it('one call for two independent requests: no parallel calls', () => {
    const check = byId(
      evaluateChecks(outcomes({ parallel: { kind: 'tool_call', names: ['get_weather'] } })),
      'parallel-calls',
    );
    expect(check.status).toBe('note');
    expect(check.setting).toBeUndefined();
  });

  it('each rejected history variant maps to its setting', () => {
    const results = evaluateChecks(
      outcomes({
        history: {
          control: accepted,
          'unanswered-call': rejected('tool call without result'),
          'malformed-arguments': rejected('invalid JSON'),
          'non-nine-char-id': rejected('Tool call IDs should be alphanumeric strings with length 9!'),
          'user-after-tool': rejected('roles must alternate'),
        },
      }),
    );
    expect(byId(results, 'unanswered-call').setting).toEqual({ path: 'historyRepair.enabled', value: true });
    expect(byId(results, 'malformed-arguments').setting).toEqual({
      path: 'historyRepair.enabled',
      value: true,
    });
    expect(byId(results, 'non-nine-char-id').setting).toEqual({
      path: 'historyRepair.nineCharIds',
      value: true,
    });
    expect(byId(results, 'user-after-tool').setting).toEqual({
      path: 'historyRepair.bridgeToolToUser',
      value: true,
    });
  });

  it('a rejected clean control makes the history findings inconclusive', () => {
    const results = evaluateChecks(
      outcomes({
        history: {
          control: rejected('template error'),
          'unanswered-call': rejected('template error'),
          'malformed-arguments': rejected('template error'),
          'non-nine-char-id': rejected('template error'),
          'user-after-tool': rejected('template error'),
        },
      }),
    );
    expect(byId(results, 'history-control').status).toBe('problem');
    expect(byId(results, 'non-nine-char-id')).toMatchObject({ status: 'inconclusive' });
    expect(results.some((r) => r.setting)).toBe(false);
  });

  it('an unreachable backend is an error, not a finding', () => {
    const down: ChatOutcome = { ok: false, status: null, message: 'ECONNREFUSED' };
    const results = evaluateChecks(
      outcomes({
        required: { kind: 'error', status: null, message: 'ECONNREFUSED' },
        history: {
          control: down,
          'unanswered-call': down,
          'malformed-arguments': down,
          'non-nine-char-id': down,
          'user-after-tool': down,
        },
      }),
    );
    expect(byId(results, 'required-accepted').status).toBe('error');
    expect(byId(results, 'user-after-tool').status).toBe('error');
  });
});

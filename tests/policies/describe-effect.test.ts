/**
 * What each policy's effects mean for the trace and metrics (Policy.describeEffect, through the
 * registry's describeEffect): the table server/chat/effects.ts applies without naming policies.
 */
import { describe, expect, it } from 'vitest';
import { describeEffect as describeTyped, type PolicyEffect } from '../../policies/registry.js';
import type { EffectShape } from '../../policies/types.js';

/** Hand-built effects, some short of fields on purpose, which the union's types would refuse. */
const describeEffect = (effect: EffectShape) => describeTyped(effect as PolicyEffect);

describe('describeEffect', () => {
  it('tallies history repairs, normalizations and client constraints by kind', () => {
    expect(describeEffect({ policy: 'history-repair', kind: 'synthesized-result', count: 2 })).toEqual({
      type: 'tally',
      tally: 'repairs',
      key: 'synthesized-result',
      label: 'synthesized-result',
      count: 2,
    });
    expect(describeEffect({ policy: 'normalize-tool-calls', kind: 'id-added' })).toMatchObject({
      tally: 'normalizations',
      count: 1,
    });
    expect(describeEffect({ policy: 'client-constraints', kind: 'forbidden-call', count: 3 })).toMatchObject({
      tally: 'constraints',
      count: 3,
    });
  });

  it("maps force-tool-use's kinds, the final-answer problems labelled raw and invalid", () => {
    expect(
      describeEffect({ policy: 'force-tool-use', kind: 'forced', detail: { toolChoice: 'required' } }),
    ).toEqual({ type: 'forced', toolChoice: 'required' });
    expect(describeEffect({ policy: 'force-tool-use', kind: 'forced' })).toEqual({
      type: 'forced',
      toolChoice: 'required',
    });
    expect(describeEffect({ policy: 'force-tool-use', kind: 'final-answer' })).toEqual({
      type: 'final-answer',
    });
    expect(describeEffect({ policy: 'force-tool-use', kind: 'final-answer-raw' })).toMatchObject({
      tally: 'finalAnswerProblems',
      key: 'final-answer-raw',
      label: 'raw',
    });
    expect(describeEffect({ policy: 'force-tool-use', kind: 'final-answer-invalid' })).toMatchObject({
      label: 'invalid',
    });
    expect(describeEffect({ policy: 'force-tool-use', kind: 'not-forced' })).toBeUndefined();
  });

  it('passes a leak record through and ignores a leak effect without one', () => {
    const leak = { format: 'hermes', source: 'content', outcome: 'recovered' };
    expect(describeEffect({ policy: 'leak-recovery', kind: 'leak', detail: leak })).toEqual({
      type: 'leak',
      leak,
    });
    expect(
      describeEffect({ policy: 'leak-recovery', kind: 'leak', detail: 'x' as unknown as object }),
    ).toBeUndefined();
  });

  it("reads corrective-retry's details with the same defaults as before", () => {
    expect(
      describeEffect({
        policy: 'corrective-retry',
        kind: 'validation-failed',
        detail: { reason: 'undeclared-tool' },
      }),
    ).toEqual({
      type: 'validation-failed',
      tool: 'unknown',
      undeclared: true,
      detail: { reason: 'undeclared-tool' },
    });
    expect(
      describeEffect({
        policy: 'corrective-retry',
        kind: 'schema-unenforced',
        detail: { tool: 't', reasons: [1] },
      }),
    ).toEqual({ type: 'schema-unenforced', tool: 't', reasons: ['1'], cause: 'undefined' });
    expect(describeEffect({ policy: 'corrective-retry', kind: 'retry' })).toEqual({
      type: 'retry',
      reason: 'invalid',
    });
  });

  it('an effect of an unknown policy means nothing for trace or metrics', () => {
    expect(describeEffect({ policy: 'no-such-policy', kind: 'forced' })).toBeUndefined();
  });
});

/**
 * Conformance checks: how the backend treats tool_choice variants and unusual histories, each
 * finding mapped to the toolproof per-model setting that handles it (protocol/settings.ts).
 * Pure: the responses come in already fetched and classified.
 */
import { calledNames } from './classify.js';
import { type ChatOutcome, truncate } from './http.js';
import type { HistoryVariant } from './prompts.js';
import type { CheckResult, Classification, SettingChange } from './types.js';

export interface ConformanceOutcomes {
  required: Classification;
  named: Classification;
  parallel: Classification;
  history: Record<HistoryVariant, ChatOutcome>;
}

export function evaluateChecks(outcomes: ConformanceOutcomes): CheckResult[] {
  return [
    checkRequired(outcomes.required),
    checkNamed(outcomes.named),
    checkParallel(outcomes.parallel),
    ...checkHistory(outcomes.history),
  ];
}

function errorText(result: Extract<Classification, { kind: 'error' }>): string {
  return result.status === null ? result.message : `HTTP ${result.status}: ${result.message}`;
}

/** A status that means the backend refused the request, as opposed to being unreachable. */
function isRejection(status: number | null): boolean {
  return status !== null && status >= 400 && status !== 408 && status !== 429 && status < 502;
}

function checkRequired(result: Classification): CheckResult {
  const base = { id: 'required-accepted', title: 'tool_choice "required" accepted' } as const;
  switch (result.kind) {
    case 'tool_call':
      return { ...base, status: 'ok', detail: 'accepted and enforced: a structured tool call came back.' };
    case 'leaked':
      return {
        ...base,
        status: 'problem',
        detail: `accepted, but the call came back as ${result.format} text in content.`,
        advice:
          'the backend does not enforce "required" with guided decoding; toolproof recovers the leaked call.',
      };
    case 'prose':
      return {
        ...base,
        status: 'problem',
        detail: 'accepted but not enforced: a prose answer came back.',
        advice:
          'toolproof cannot force tool use on this backend; its leak recovery and corrective retries still apply.',
      };
    case 'error':
      if (!isRejection(result.status)) return { ...base, status: 'error', detail: errorText(result) };
      return {
        ...base,
        status: 'problem',
        detail: `rejected (${errorText(result)}).`,
        advice:
          'toolproof falls back to "auto" automatically when "required" is rejected (remembered for fallbackTtlSeconds); forced tool use is then best effort.',
      };
  }
}

function checkNamed(result: Classification): CheckResult {
  const base = { id: 'named-tool-choice', title: 'named tool_choice honoured' } as const;
  if (result.kind === 'error') {
    if (!isRejection(result.status)) return { ...base, status: 'error', detail: errorText(result) };
    return {
      ...base,
      status: 'problem',
      detail: `rejected (${errorText(result)}).`,
      advice:
        'clients that name a tool get an error from this backend: use "required" (toolproof forceToolUse).',
    };
  }
  const names = calledNames(result);
  if (names.includes('get_weather')) {
    return { ...base, status: 'ok', detail: 'asked for get_weather, got get_weather.' };
  }
  const got = names.length > 0 ? names.join(', ') : 'a prose answer';
  return {
    ...base,
    status: 'problem',
    detail: `silently ignored: asked for get_weather, got ${got}.`,
    advice:
      'do not rely on a named tool_choice with this backend; "required" (toolproof forceToolUse) is unaffected.',
  };
}

function checkParallel(result: Classification): CheckResult {
  const base = { id: 'parallel-calls', title: 'parallel tool calls returned' } as const;
  if (result.kind === 'error') return { ...base, status: 'error', detail: errorText(result) };
  const names = calledNames(result);
  if (names.length >= 2) {
    const how = result.kind === 'leaked' ? ` (leaked as ${result.format})` : '';
    return { ...base, status: 'ok', detail: `${names.length} calls in one response${how}.` };
  }
  if (names.length === 1) {
    return {
      ...base,
      status: 'note',
      detail: 'one call per response for two independent requests.',
      advice: 'informational: agents get the second call in a later turn; nothing to configure.',
    };
  }
  return {
    ...base,
    status: 'inconclusive',
    detail: 'no tool call came back, so parallelism could not be observed.',
  };
}

interface HistoryRule {
  variant: Exclude<HistoryVariant, 'control'>;
  title: string;
  setting: SettingChange;
  handles: string;
}

const HISTORY_RULES: readonly HistoryRule[] = [
  {
    variant: 'unanswered-call',
    title: 'history with an unanswered tool call accepted',
    setting: { path: 'historyRepair.enabled', value: true },
    handles: 'toolproof synthesizes the missing tool result',
  },
  {
    variant: 'malformed-arguments',
    title: 'history with malformed call arguments accepted',
    setting: { path: 'historyRepair.enabled', value: true },
    handles: 'toolproof repairs historical arguments into valid JSON',
  },
  {
    variant: 'non-nine-char-id',
    title: 'tool-call ids that are not 9 characters accepted',
    setting: { path: 'historyRepair.nineCharIds', value: true },
    handles: 'toolproof maps every id to 9 alphanumerics',
  },
  {
    variant: 'user-after-tool',
    title: 'user message right after a tool message accepted',
    setting: { path: 'historyRepair.bridgeToolToUser', value: true },
    handles: 'toolproof inserts an assistant message between them',
  },
];

function outcomeText(outcome: ChatOutcome): string {
  if (outcome.ok) return `HTTP ${outcome.status}`;
  const message = truncate(outcome.message, 160);
  return outcome.status === null ? message : `HTTP ${outcome.status}: ${message}`;
}

function checkHistory(history: Record<HistoryVariant, ChatOutcome>): CheckResult[] {
  const control = history.control;
  const controlRejected = !control.ok && isRejection(control.status);
  const results: CheckResult[] = [];
  const controlBase = { id: 'history-control', title: 'clean tool-call history accepted' } as const;
  if (control.ok) results.push({ ...controlBase, status: 'ok', detail: 'accepted.' });
  else if (controlRejected) {
    results.push({
      ...controlBase,
      status: 'problem',
      detail: `rejected (${outcomeText(control)}).`,
      advice:
        "the backend's chat template cannot render tool history at all: check --chat-template (vLLM) or --jinja (llama-server).",
    });
  } else results.push({ ...controlBase, status: 'error', detail: outcomeText(control) });

  for (const rule of HISTORY_RULES) {
    const outcome = history[rule.variant];
    const base = { id: rule.variant, title: rule.title } as const;
    if (outcome.ok) {
      results.push({ ...base, status: 'ok', detail: 'accepted.' });
    } else if (!isRejection(outcome.status)) {
      results.push({ ...base, status: 'error', detail: outcomeText(outcome) });
    } else if (!control.ok) {
      results.push({
        ...base,
        status: 'inconclusive',
        detail: `rejected (${outcomeText(outcome)}), but so was the clean control.`,
      });
    } else {
      results.push({
        ...base,
        status: 'problem',
        detail: `rejected (${outcomeText(outcome)}).`,
        setting: rule.setting,
        advice: `${rule.handles}: set ${rule.setting.path}: ${String(rule.setting.value)}.`,
      });
    }
  }
  return results;
}

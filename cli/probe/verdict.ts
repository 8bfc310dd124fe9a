/**
 * From counts and findings to the verdict: what is wrong, why, and the fix (a backend flag or a
 * toolproof setting). Pure.
 */
import type {
  BackendInfo,
  BackendKind,
  Cell,
  CellCounts,
  CheckResult,
  ChoiceMode,
  Classification,
  LeakFormatSummary,
  Question,
  SettingChange,
  Verdict,
} from './types.js';

export function findCell(
  cells: readonly Cell[],
  question: Question,
  toolChoice: ChoiceMode,
): Cell | undefined {
  return cells.find((cell) => cell.question === question && cell.toolChoice === toolChoice);
}

function counts(cells: readonly Cell[], question: Question, toolChoice: ChoiceMode): CellCounts {
  return findCell(cells, question, toolChoice)?.counts ?? { tool: 0, leak: 0, prose: 0, error: 0 };
}

function total(c: CellCounts): number {
  return c.tool + c.leak + c.prose + c.error;
}

export function summarizeLeaks(cells: readonly Cell[]): LeakFormatSummary[] {
  const byFormat = new Map<string, LeakFormatSummary>();
  for (const cell of cells) {
    for (const result of cell.results) {
      if (result.kind !== 'leaked') continue;
      let summary = byFormat.get(result.format);
      if (!summary) {
        summary = { format: result.format, count: 0, recovered: 0 };
        if (result.backendHint) summary.backendHint = result.backendHint;
        if (result.backends) summary.backends = result.backends;
        byFormat.set(result.format, summary);
      }
      summary.count++;
      if (result.recovered) summary.recovered++;
    }
  }
  return [...byFormat.values()].sort((a, b) => b.count - a.count || a.format.localeCompare(b.format));
}

const LLAMA_FIX = (format: string) =>
  `start llama-server with \`--jinja\` and the model's own chat template (it then parses the ${format} format)`;

/**
 * The backend flag that makes the backend parse this format itself, for the backend that answered.
 * Falls back on the engine's free-text hint when the registry does not know the format.
 */
export function backendFix(
  leak: Pick<LeakFormatSummary, 'backendHint' | 'backends'>,
  backend: BackendKind,
): string {
  const parsers = leak.backends;
  if (parsers) {
    const vllm = parsers.vllm
      ? `start vLLM with \`--enable-auto-tool-choice --tool-call-parser ${parsers.vllm}\``
      : '';
    const llama = parsers.llamacpp ? LLAMA_FIX(parsers.llamacpp) : '';
    if (backend === 'vllm' && vllm) return vllm;
    if (backend === 'llama-server' && llama) return llama;
    if (vllm && llama) return `${vllm} (llama-server: ${llama.replace(/^start llama-server with /, '')})`;
    if (vllm || llama) return vllm || llama;
  }
  return hintFix(leak.backendHint);
}

/** 'vllm --tool-call-parser qwen3_coder' → 'start vLLM with `--tool-call-parser qwen3_coder`'. */
function hintFix(hint: string | undefined): string {
  if (!hint) return "the backend's tool parser does not recognise it";
  const llama = /^\s*llama-server chat format\s+(\S+)/i.exec(hint);
  if (llama?.[1]) return LLAMA_FIX(llama[1]);
  const match = /^\s*(vllm|llama-server|llama\.cpp|llamacpp|sglang)\b[:\s]*(.*)$/i.exec(hint);
  const backend = match?.[1]?.toLowerCase();
  const flags = match?.[2]?.trim();
  if (!backend || !flags) return `configure the backend's tool parser (${hint})`;
  const name = backend === 'vllm' ? 'vLLM' : backend === 'sglang' ? 'SGLang' : 'llama-server';
  return `start ${name} with \`${flags}\``;
}

function leakVerdicts(
  cells: readonly Cell[],
  leaks: readonly LeakFormatSummary[],
  backend: BackendKind,
  viaToolproof: boolean,
): Verdict[] {
  const verdicts: Verdict[] = [];
  const autoLeaks = counts(cells, 'memorizable', 'auto').leak + counts(cells, 'unmemorizable', 'auto').leak;
  const requiredCounts = [
    counts(cells, 'memorizable', 'required'),
    counts(cells, 'unmemorizable', 'required'),
  ];
  const requiredClean = requiredCounts.every((c) => c.leak === 0 && c.tool > 0);
  for (const leak of leaks) {
    if (viaToolproof) {
      verdicts.push({
        level: 'fail',
        text: `${leak.format} tool calls reach the client as content even through toolproof (${leak.count}×): turn recovery on for this model (recovery: auto) with ${leak.format} among its parsers, or ${backendFix(leak, backend)}`,
      });
      continue;
    }
    let text = `the model emits ${leak.format} tool calls but the backend returns them as content (${leak.count}×): ${backendFix(leak, backend)}, or keep toolproof in front`;
    if (autoLeaks > 0 && requiredClean) {
      text +=
        '. "required" hides this: it is enforced by guided decoding, not by the tool parser, so smoke tests with "required" pass';
    }
    verdicts.push({ level: 'fail', text });
    const lost = leak.count - leak.recovered;
    if (lost > 0) {
      verdicts.push({
        level: 'warn',
        text: `${lost} of ${leak.count} leaked ${leak.format} calls could not be recovered by toolproof either (malformed or undeclared): fix the backend parser`,
      });
    }
  }
  return verdicts;
}

function proseVerdicts(cells: readonly Cell[], viaToolproof: boolean): Verdict[] {
  const verdicts: Verdict[] = [];
  const mem = counts(cells, 'memorizable', 'auto');
  const unmem = counts(cells, 'unmemorizable', 'auto');
  const claims =
    claimCount(findCell(cells, 'memorizable', 'auto')?.results) +
    claimCount(findCell(cells, 'unmemorizable', 'auto')?.results);
  const claimText = claims > 0 ? `, ${claims} claiming to have run the tool` : '';
  const unparsed = cells
    .flatMap((cell) => cell.results)
    .filter((r) => r.kind === 'prose' && r.looksLikeCall).length;
  if (unparsed > 0) {
    verdicts.push({
      level: 'fail',
      text: `${unparsed} prose answer(s) carry tool-call markers that neither the backend nor toolproof parses: look at the raw content (--json) and start the backend with the tool-call parser of the model's format`,
    });
  }
  if (viaToolproof) {
    // Through toolproof a text answer is (normally) the model choosing final_answer: by design.
    if (unmem.prose > 0) {
      verdicts.push({
        level: 'warn',
        text: `through toolproof the model answered ${unmem.prose}/${total(unmem)} unmemorizable questions with final_answer without running the tool: those answers are guesses; check forceToolUse is on for this model`,
      });
    } else if (mem.prose > 0) {
      verdicts.push({
        level: 'ok',
        text: `through toolproof the model answered ${mem.prose}/${total(mem)} memorizable questions with final_answer and called the tool for every unmemorizable one`,
      });
    }
  } else if (unmem.prose > 0 && unmem.tool === 0 && unmem.leak === 0 && unmem.error === 0) {
    verdicts.push({
      level: 'fail',
      text: `with auto the model never calls the tool, even for questions it cannot answer from memory (${unmem.prose}/${total(unmem)} prose${claimText}): check the raw content (--json) for a tool-call format toolproof does not recognise; keep toolproof's forceToolUse on`,
    });
  } else if (mem.prose > 0 || unmem.prose > 0) {
    const which = [
      mem.prose > 0 ? `memorizable ${mem.prose}/${total(mem)}` : '',
      unmem.prose > 0 ? `unmemorizable ${unmem.prose}/${total(unmem)}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    verdicts.push({
      level: 'warn',
      text: `with auto the model answers in prose instead of calling the tool (${which}${claimText}): keep toolproof's forceToolUse on`,
    });
  }
  const reqProse =
    counts(cells, 'memorizable', 'required').prose + counts(cells, 'unmemorizable', 'required').prose;
  if (reqProse > 0) {
    verdicts.push({
      level: 'fail',
      text: `even with "required" the model answered in prose ${reqProse}×: the backend does not enforce "required"; toolproof's recovery and corrective retries (maxRetries) are the only guard`,
    });
  }
  return verdicts;
}

function claimCount(results: readonly Classification[] | undefined): number {
  return (results ?? []).filter((r) => r.kind === 'prose' && r.claimsExecution).length;
}

function errorVerdicts(cells: readonly Cell[], keySent: boolean, viaToolproof: boolean): Verdict[] {
  const all = cells.flatMap((cell) => cell.results);
  const errors = all.filter((r): r is Extract<Classification, { kind: 'error' }> => r.kind === 'error');
  if (errors.length === 0) return [];
  const byStatus = new Map<string, number>();
  for (const error of errors) {
    const key =
      error.status === null ? error.message.split(':')[0] || 'network error' : `HTTP ${error.status}`;
    byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
  }
  const breakdown = [...byStatus].map(([key, n]) => `${key} ×${n}`).join(', ');
  const requiredErrors =
    counts(cells, 'memorizable', 'required').error + counts(cells, 'unmemorizable', 'required').error;
  const autoErrors = errors.length - requiredErrors;
  if (autoErrors === 0 && requiredErrors > 0) {
    return [
      {
        level: 'warn',
        text: `requests with "required" failed (${breakdown}): toolproof falls back to "auto" automatically when "required" is rejected`,
      },
    ];
  }
  const level = errors.length === all.length ? 'fail' : 'warn';
  const first = errors[0]?.message ?? '';
  // A server started with --api-key (llama-server, vLLM) refuses every request without its key:
  // said as such, with the option that sends it, not as N failed requests.
  if (errors.every((e) => e.status === 401 || e.status === 403)) {
    const through = viaToolproof
      ? ": toolproof's own key (--api-key one of its TOOLPROOF_API_KEYS), or, when the model server behind it wants one, TOOLPROOF_UPSTREAM_API_KEY where toolproof runs"
      : '';
    return [
      {
        level,
        text: keySent
          ? `the backend refused the key sent (${breakdown}): it is not one it takes; pass its key with --api-key${through}`
          : `the backend wants an API key (${breakdown} without one: a server started with --api-key): ` +
            `pass it with --api-key KEY or TOOLPROOF_PROBE_API_KEY${through}`,
      },
    ];
  }
  return [
    {
      level,
      text: `${errors.length} of ${all.length} requests failed (${breakdown}); first: ${first}`,
    },
  ];
}

export function decideVerdicts(
  cells: readonly Cell[],
  leaks: readonly LeakFormatSummary[],
  checks: readonly CheckResult[],
  backend: BackendInfo = { kind: 'unknown', viaToolproof: false },
  /** Whether the probe sent a key (--api-key): a 401 then means the wrong one. */
  keySent = false,
): Verdict[] {
  const verdicts = [
    ...errorVerdicts(cells, keySent, backend.viaToolproof),
    ...leakVerdicts(cells, leaks, backend.kind, backend.viaToolproof),
    ...proseVerdicts(cells, backend.viaToolproof),
  ];
  const problems = checks.filter((check) => check.status === 'problem');
  const settings = recommendSettings(cells, checks).filter((s) => s.path.startsWith('historyRepair'));
  if (settings.length > 0) {
    verdicts.push({
      level: 'warn',
      text: `the backend rejects some histories clients send: set ${settings.map((s) => `${s.path}: ${String(s.value)}`).join(', ')} (--write-config writes it)`,
    });
  }
  if (verdicts.length === 0) {
    const tail = problems.length > 0 ? ` (${problems.length} conformance finding(s) above)` : '';
    verdicts.push({
      level: 'ok',
      text: backend.viaToolproof
        ? `structured tool calls in every cell through toolproof: clients get calls, not leaks or prose${tail}`
        : `structured tool calls in every cell: the backend's tool parser matches the model and "required" is enforced${tail}`,
    });
  }
  return verdicts;
}

/** The per-model settings the findings call for, one entry per path. */
export function recommendSettings(cells: readonly Cell[], checks: readonly CheckResult[]): SettingChange[] {
  const settings = new Map<string, SettingChange>();
  const add = (change: SettingChange) => settings.set(change.path, change);
  const prose = cells.some((cell) => cell.counts.prose > 0);
  const leaks = cells.some((cell) => cell.counts.leak > 0);
  if (prose) add({ path: 'forceToolUse', value: true });
  if (leaks) add({ path: 'recovery', value: 'auto' });
  for (const check of checks) if (check.status === 'problem' && check.setting) add(check.setting);
  return [...settings.values()];
}

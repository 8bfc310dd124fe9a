/**
 * `toolproof probe`: argument parsing, help, and the thin shell around runProbe / renderReport.
 * Everything here is I/O glue; the probe's logic lives in the modules beside it.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createProgress } from './progress.js';
import { renderReport } from './render.js';
import { PROBE_DEFAULTS, type ProbeOptions, runProbe } from './run-probe.js';
import { renderConfig } from './write-config.js';

export interface CliIO {
  stdout: { write(text: string): unknown };
  stderr: { isTTY?: boolean; write(text: string): unknown };
}

export const PROBE_HELP = `Usage: toolproof probe --base-url URL --model NAME [options]

Diagnose an OpenAI-compatible backend (vLLM, llama-server, or toolproof itself): does its
tool parser match the model, does it enforce tool_choice, which histories does it reject?

Runs questions a model can answer from memory and questions it cannot (the SHA-256 of a
random string) with tool_choice "auto" and "required", N runs each, classifies every
response (structured tool call, tool call leaked into content, prose, error), prints the
2x2 table, conformance checks and a verdict with the fix. Point it at the backend and at
toolproof in front of it to see the difference.

Options:
  --base-url URL        the endpoint's base URL, including /v1 (required)
  --model NAME          the model name to send (required)
  --api-key KEY         sent as "Authorization: Bearer KEY" (default: $TOOLPROOF_PROBE_API_KEY)
  --runs N              runs per cell (default ${PROBE_DEFAULTS.runs})
  --concurrency N       requests in flight (default ${PROBE_DEFAULTS.concurrency})
  --timeout-ms MS       per-request timeout (default ${PROBE_DEFAULTS.timeoutMs})
  --max-tokens N        max_tokens per request (default ${PROBE_DEFAULTS.maxTokens})
  --no-checks           run the 2x2 experiment only, skip the conformance checks
  --json                print a machine-readable report on stdout instead of the table
  --write-config FILE   write the per-model YAML section the findings call for into FILE
                        (merged into FILE when it exists: other models and keys are kept)
  -h, --help            show this help

Exit status: 0 when the probe ran, 1 when every request failed or FILE could not be
written, 2 on a usage error.
`;

export class UsageError extends Error {
  override name = 'UsageError';
}

export interface ProbeCommand {
  options: ProbeOptions;
  json: boolean;
  writeConfig?: string;
  help: boolean;
}

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`--${name} must be a positive integer, got "${value}"`);
  return n;
}

export function parseProbeArgs(argv: readonly string[], env: NodeJS.ProcessEnv = {}): ProbeCommand {
  let parsed: ReturnType<typeof parseProbeArgv>;
  try {
    parsed = parseProbeArgv(argv);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const v = parsed.values;
  if (v.help) return { options: { baseUrl: '', model: '' }, json: false, help: true };
  if (parsed.positionals.length > 0) throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`);
  if (!v['base-url']) throw new UsageError('--base-url is required');
  if (!v.model) throw new UsageError('--model is required');
  let url: URL;
  try {
    url = new URL(v['base-url']);
  } catch {
    throw new UsageError(`--base-url is not a URL: "${v['base-url']}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--base-url must be http or https, got "${url.protocol}"`);
  }
  const apiKey = v['api-key'] ?? env.TOOLPROOF_PROBE_API_KEY;
  const options: ProbeOptions = {
    baseUrl: v['base-url'].replace(/\/+$/, ''),
    model: v.model,
    runs: positiveInt('runs', v.runs, PROBE_DEFAULTS.runs),
    concurrency: positiveInt('concurrency', v.concurrency, PROBE_DEFAULTS.concurrency),
    timeoutMs: positiveInt('timeout-ms', v['timeout-ms'], PROBE_DEFAULTS.timeoutMs),
    maxTokens: positiveInt('max-tokens', v['max-tokens'], PROBE_DEFAULTS.maxTokens),
    skipChecks: v['no-checks'] === true,
    ...(apiKey ? { apiKey } : {}),
  };
  const command: ProbeCommand = { options, json: v.json === true, help: false };
  if (v['write-config']) command.writeConfig = v['write-config'];
  return command;
}

function parseProbeArgv(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      'base-url': { type: 'string' },
      model: { type: 'string' },
      'api-key': { type: 'string' },
      runs: { type: 'string' },
      concurrency: { type: 'string' },
      'timeout-ms': { type: 'string' },
      'max-tokens': { type: 'string' },
      'no-checks': { type: 'boolean' },
      json: { type: 'boolean' },
      'write-config': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

/** Run `toolproof probe ARGS`; returns the exit status. */
export async function probeCommand(
  argv: readonly string[],
  io: CliIO,
  env: NodeJS.ProcessEnv = {},
): Promise<number> {
  let command: ProbeCommand;
  try {
    command = parseProbeArgs(argv, env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(`toolproof probe: ${err.message}\n\n${PROBE_HELP}`);
    return 2;
  }
  if (command.help) {
    io.stdout.write(PROBE_HELP);
    return 0;
  }
  const progress = createProgress(io.stderr);
  let report: Awaited<ReturnType<typeof runProbe>>;
  try {
    report = await runProbe({ ...command.options, onProgress: progress.onProgress });
  } finally {
    progress.end();
  }
  io.stdout.write(command.json ? `${JSON.stringify(report, null, 2)}\n` : `${renderReport(report)}\n`);

  const all = report.cells.flatMap((cell) => cell.results);
  // Nothing measured: a section saying "no problems found" would be a false finding.
  const nothingMeasured = all.length > 0 && all.every((result) => result.kind === 'error');
  let status = nothingMeasured ? 1 : 0;
  if (command.writeConfig && nothingMeasured) {
    io.stderr.write(
      `toolproof probe: ${command.writeConfig} left as it was: every request failed, nothing was measured\n`,
    );
  } else if (command.writeConfig) {
    try {
      const existing = await readFile(command.writeConfig, 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return null;
        throw err;
      });
      await writeFile(command.writeConfig, renderConfig(existing, report));
      io.stderr.write(`toolproof probe: wrote models.${report.model} to ${command.writeConfig}\n`);
    } catch (err) {
      io.stderr.write(
        `toolproof probe: --write-config failed: ${err instanceof Error ? err.message : String(err)}\n`,
      );
      status = 1;
    }
  }
  return status;
}

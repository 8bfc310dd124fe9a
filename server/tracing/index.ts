/**
 * Tracing's entry: the SDK module is imported only when the environment asked for traces
 * (settings.ts), so a process with tracing off loads nothing of the OpenTelemetry SDK.
 */
import type { ChatCall } from '../chat/context.js';
import type { TracingSettings } from './settings.js';
import type { Tracing } from './types.js';

export type { RequestSpan, Tracing } from './types.js';

/** `warn`: where a failing export is said (the app's log), at most once a minute. */
export async function startTracing(
  settings: TracingSettings | undefined,
  warn?: (message: string) => void,
): Promise<Tracing<ChatCall> | undefined> {
  if (!settings) return undefined;
  const { createTracing } = await import('./sdk.js');
  return createTracing(settings, warn);
}

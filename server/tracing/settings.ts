/**
 * Whether the standard OpenTelemetry environment variables ask for traces, read once at start-up
 * (config.ts). No SDK here: with tracing off, nothing of the OpenTelemetry SDK is ever loaded (prom-client alone requires the API package, a no-op with no SDK registered).
 *
 * On when an OTLP endpoint is named (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT) or OTEL_TRACES_EXPORTER says `otlp` or `console` (the spec's
 * standard output exporter, alone or beside `otlp`); off when OTEL_SDK_DISABLED is true or
 * OTEL_TRACES_EXPORTER is `none`. Headers, timeout, compression and certificates of the
 * exporter are read by the exporter itself from their OTEL_EXPORTER_OTLP_* variables.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TracingSettings {
  /**
   * Where spans are posted: the full URL, /v1/traces included; absent when OTEL_TRACES_EXPORTER
   * names `console` and not `otlp` (an endpoint set beside it is not used, as the spec says).
   */
  endpoint?: string;
  /** OTEL_TRACES_EXPORTER names `console`: each span is also printed on standard output. */
  console: boolean;
  protocol: OtlpProtocol;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and completions on the spans. */
  captureContent: boolean;
  /** The longest attribute value kept (content included); longer ones are cut by the SDK. */
  attributeValueLengthLimit: number;
  /** OTEL_TRACES_SAMPLER and its argument, as given (checked here, built by the SDK module). */
  sampler: { name: string; arg?: number };
}

/** The OTLP/HTTP default (the spec's, and the collector's port for it). */
const DEFAULT_ENDPOINT = 'http://localhost:4318/v1/traces';
/** Attribute values past this are cut (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT overrides it). */
export const DEFAULT_ATTRIBUTE_VALUE_LENGTH_LIMIT = 64 * 1024;
const SAMPLERS = new Set([
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
]);

/** A bad OTEL_* value: main.ts turns it into a ConfigError (fail fast, naming the variable). */
export class TracingSettingsError extends Error {}

function flag(raw: string | undefined): boolean {
  return raw?.trim().toLowerCase() === 'true';
}

/**
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: `true`, or the mode the newer GenAI
 * instrumentations take (OpenTelemetry's Python util-genai): `SPAN_ONLY` and `SPAN_AND_EVENT` put
 * the content on the spans; `EVENT_ONLY` and `NO_CONTENT` keep it off them (toolproof emits no
 * GenAI log events). `SPAN_ONLY` read as not `true` left the content out without a word.
 */
function contentOnSpans(raw: string | undefined): boolean {
  const v = raw?.trim().toLowerCase();
  return v === 'true' || v === 'span_only' || v === 'span_and_event';
}

function nonEmpty(raw: string | undefined): string | undefined {
  const v = raw?.trim();
  return v ? v : undefined;
}

function checkUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TracingSettingsError(`${name}: "${raw}" is not a URL (expected e.g. http://collector:4318)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TracingSettingsError(`${name}: "${raw}" must be an http:// or https:// URL (OTLP/HTTP)`);
  return raw;
}

/** The tracing the environment asks for, or undefined (off). Throws TracingSettingsError. */
export function tracingSettings(env: NodeJS.ProcessEnv): TracingSettings | undefined {
  if (flag(env.OTEL_SDK_DISABLED)) return undefined;
  const exporters = nonEmpty(env.OTEL_TRACES_EXPORTER)
    ?.split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  if (exporters?.includes('none')) return undefined;
  const unsupported = exporters?.filter((e) => e !== 'otlp' && e !== 'console') ?? [];
  if (unsupported.length > 0)
    throw new TracingSettingsError(
      `OTEL_TRACES_EXPORTER: toolproof exports traces by OTLP or to the console ("otlp", "console" or "none"), got "${env.OTEL_TRACES_EXPORTER}"`,
    );
  const specific = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const general = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const toConsole = exporters?.includes('console') ?? false;
  // OTLP: named, or (no exporter named) an endpoint named. An exporter list without `otlp`
  // (`console`) exports no OTLP, whatever endpoint is set: the list decides (spec).
  const otlp = exporters?.length ? exporters.includes('otlp') : Boolean(specific || general);
  if (!otlp && !toConsole) return undefined;
  // The signal's own endpoint is used as it is; the general one gets the signal's path (spec).
  const endpoint = !otlp
    ? undefined
    : specific
      ? checkUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', specific)
      : general
        ? `${checkUrl('OTEL_EXPORTER_OTLP_ENDPOINT', general).replace(/\/+$/, '')}/v1/traces`
        : DEFAULT_ENDPOINT;
  const protocolName = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = (nonEmpty(env[protocolName]) ?? 'http/protobuf').toLowerCase();
  // Only the OTLP exporter reads it: `console` alone is not stopped by a gRPC set for other programs.
  if (otlp && protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new TracingSettingsError(
      `${protocolName}: toolproof sends OTLP over HTTP ("http/protobuf" or "http/json"), got "${env[protocolName]}"`,
    );
  const samplerName = (nonEmpty(env.OTEL_TRACES_SAMPLER) ?? 'parentbased_always_on').toLowerCase();
  if (!SAMPLERS.has(samplerName))
    throw new TracingSettingsError(
      `OTEL_TRACES_SAMPLER: one of ${[...SAMPLERS].join(', ')}, got "${env.OTEL_TRACES_SAMPLER}"`,
    );
  const argRaw = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG);
  const arg = argRaw === undefined ? undefined : Number(argRaw);
  if (arg !== undefined && !(arg >= 0 && arg <= 1))
    throw new TracingSettingsError(`OTEL_TRACES_SAMPLER_ARG: a ratio from 0 to 1, got "${argRaw}"`);
  const limitName = nonEmpty(env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT)
    ? 'OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT'
    : 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT';
  const limitRaw = nonEmpty(env[limitName]);
  const limit = limitRaw === undefined ? DEFAULT_ATTRIBUTE_VALUE_LENGTH_LIMIT : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1)
    throw new TracingSettingsError(`${limitName}: a positive integer, got "${limitRaw}"`);
  return {
    ...(endpoint !== undefined ? { endpoint } : {}),
    console: toConsole,
    protocol: protocol as OtlpProtocol,
    captureContent: contentOnSpans(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT),
    attributeValueLengthLimit: limit,
    sampler: { name: samplerName, ...(arg !== undefined ? { arg } : {}) },
  };
}

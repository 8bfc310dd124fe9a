/**
 * server/tracing/settings.ts: which OTEL_* variables turn tracing on, the endpoint each names,
 * and a precise ConfigError (through loadConfig) for values toolproof cannot honour.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { DEFAULT_ATTRIBUTE_VALUE_LENGTH_LIMIT, tracingSettings } from '../../server/tracing/settings.js';

describe('tracingSettings', () => {
  it('is off without an endpoint or exporter, with OTEL_SDK_DISABLED, and with OTEL_TRACES_EXPORTER=none', () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'x' })).toBeUndefined();
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracingSettings({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(tracingSettings({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' })).toBeUndefined();
    expect(tracingSettings({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(tracingSettings({ ...endpoint, OTEL_SDK_DISABLED: 'false' })).toBeDefined();
  });

  it('the general endpoint gets /v1/traces; the traces endpoint is used as it is and wins', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })?.endpoint).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/otlp/traces',
      })?.endpoint,
    ).toBe('https://b/otlp/traces');
    // The exporter named alone: the spec's default endpoint.
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })?.endpoint).toBe(
      'http://localhost:4318/v1/traces',
    );
  });

  it('OTEL_TRACES_EXPORTER=console turns tracing on; the list decides whether OTLP goes too', () => {
    // The spec's `console`, alone: spans printed, none posted, even to an endpoint set beside it
    // (and a gRPC protocol meant for another program does not stop the start).
    const alone = { OTEL_TRACES_EXPORTER: 'console' };
    expect(tracingSettings(alone)).toMatchObject({ console: true });
    expect(tracingSettings(alone)?.endpoint).toBeUndefined();
    expect(
      tracingSettings({
        ...alone,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      })?.endpoint,
    ).toBeUndefined();
    expect(
      tracingSettings({
        OTEL_TRACES_EXPORTER: 'otlp, Console',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      }),
    ).toMatchObject({ console: true, endpoint: 'http://c:4318/v1/traces' });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'console,none' })).toBeUndefined();
  });

  it('defaults: http/protobuf, no content, parent-based always-on, a 64 KiB attribute bound', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({
      endpoint: 'http://c:4318/v1/traces',
      console: false,
      protocol: 'http/protobuf',
      captureContent: false,
      attributeValueLengthLimit: DEFAULT_ATTRIBUTE_VALUE_LENGTH_LIMIT,
      sampler: { name: 'parentbased_always_on' },
    });
    const s = tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '4096',
    });
    expect(s).toMatchObject({
      protocol: 'http/json',
      captureContent: true,
      attributeValueLengthLimit: 4096,
      sampler: { name: 'parentbased_traceidratio', arg: 0.25 },
    });
  });

  it("content capture takes the newer instrumentations' modes as well as true (SPAN_ONLY was read as off)", () => {
    const content = (v: string) =>
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: v,
      })?.captureContent;
    for (const on of ['true', 'TRUE', 'SPAN_ONLY', 'span_and_event', ' SPAN_AND_EVENT '])
      expect(content(on), on).toBe(true);
    // No content on the spans: toolproof emits no GenAI log events for EVENT_ONLY to put it in.
    for (const off of ['false', 'NO_CONTENT', 'EVENT_ONLY', '', 'yes']) expect(content(off), off).toBe(false);
  });

  it('what toolproof cannot honour stops the start with the variable named', () => {
    const base = {
      TOOLPROOF_UPSTREAM_URL: 'http://gpu:8000/v1',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
    };
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /OTEL_EXPORTER_OTLP_PROTOCOL: .*"grpc"/],
      [{ OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER: .*"otlp", "console" or "none"/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT: .*http/],
      [{ OTEL_TRACES_SAMPLER: 'sometimes' }, /OTEL_TRACES_SAMPLER: one of/],
      [{ OTEL_TRACES_SAMPLER_ARG: '2' }, /OTEL_TRACES_SAMPLER_ARG/],
      [{ OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '0' }, /OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT/],
    ];
    for (const [env, message] of cases) {
      expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
      expect(() => loadConfig({ ...base, ...env })).toThrow(message);
    }
    expect(loadConfig(base).tracing?.endpoint).toBe('http://c:4318/v1/traces');
    expect(loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://gpu:8000/v1' }).tracing).toBeUndefined();
  });
});

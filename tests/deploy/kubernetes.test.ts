/**
 * deploy/kubernetes/toolproof.yaml holds together without a cluster: the probes hit toolproof's
 * real endpoints on the port it listens on, the grace period covers toolproof's own shutdown
 * grace, the Service and the HPA point at the Deployment, and every TOOLPROOF_* variable it sets
 * is one the server reads.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../server/config.js';

const ROOT = join(import.meta.dirname, '../..');
const docs = parseAllDocuments(readFileSync(join(ROOT, 'deploy/kubernetes/toolproof.yaml'), 'utf8')).map(
  // biome-ignore lint/suspicious/noExplicitAny: a manifest is checked field by field below
  (d) => d.toJS() as any,
);
const byKind = (kind: string) => docs.find((d) => d.kind === kind);

describe('deploy/kubernetes/toolproof.yaml', () => {
  const deployment = byKind('Deployment');
  const container = deployment.spec.template.spec.containers[0];
  const env = Object.fromEntries(
    (container.env as { name: string; value: string }[]).map((e) => [e.name, e.value]),
  );

  it('has a Deployment, Service, HPA, PDB and Secret', () => {
    expect(docs.map((d) => d.kind).sort()).toEqual(
      ['Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Secret', 'Service'].sort(),
    );
  });

  it('readiness on /ready, liveness on /health, on the port toolproof listens on', () => {
    const port = container.ports.find((p: { name: string }) => p.name === 'http');
    expect(String(port.containerPort)).toBe(env.TOOLPROOF_PORT);
    expect(env.TOOLPROOF_HOST).toBe('0.0.0.0');
    expect(container.readinessProbe.httpGet).toEqual({ path: '/ready', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    // /ready waits up to 3 s per upstream: the probe must wait longer.
    expect(container.readinessProbe.timeoutSeconds).toBeGreaterThan(3);
  });

  it('the grace period covers the preStop pause plus toolproof closing its open streams', () => {
    const preStop = Number(container.lifecycle.preStop.exec.command[1]);
    const graceMs = Number(env.TOOLPROOF_SHUTDOWN_GRACE_MS);
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      preStop * 1000 + graceMs,
    );
  });

  it('the Service selects the pods; the HPA scales the Deployment on CPU, which has a CPU request', () => {
    const labels = deployment.spec.template.metadata.labels;
    expect(byKind('Service').spec.selector).toEqual(labels);
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    const hpa = byKind('HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
    expect(hpa.spec.metrics[0].resource.name).toBe('cpu');
    expect(container.resources.requests.cpu).toBeDefined();
  });

  it('sets only TOOLPROOF_* variables the server reads, with values it accepts', () => {
    const sources = ['server/config.ts', 'server/cluster.ts']
      .map((f) => readFileSync(join(ROOT, f), 'utf8'))
      .join('\n');
    const secret = Object.keys(byKind('Secret').stringData);
    for (const name of [...Object.keys(env), ...secret]) expect(sources).toContain(name);
    expect(() => loadConfig(env)).not.toThrow();
  });
});

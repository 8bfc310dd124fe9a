/**
 * Start-up refuses settings that would silently mean "open" or "no limit", and a listen failure
 * is one clear line and a non-zero exit, not a stack trace.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { describeListenError } from '../../server/shutdown.js';
import { nodeEntry } from '../support/toolproof-process.js';

function refused(env: Record<string, string>, file?: Parameters<typeof loadConfig>[1]): string {
  try {
    loadConfig(env, file);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('loadConfig accepted it');
}

describe('settings refused at start-up', () => {
  it('an API key list that is set but empty', () => {
    for (const keys of [' , ', ',', '   ']) {
      expect(refused({ TOOLPROOF_API_KEYS: keys })).toMatch(/TOOLPROOF_API_KEYS is set but holds no key/);
    }
    expect(refused({}, { server: { apiKeys: [] } })).toMatch(/server\.apiKeys/);
  });

  it('zero timeouts (0 would mean no timeout at all)', () => {
    for (const key of [
      'TOOLPROOF_CONNECT_TIMEOUT_MS',
      'TOOLPROOF_FIRST_BYTE_TIMEOUT_MS',
      'TOOLPROOF_IDLE_TIMEOUT_MS',
      'TOOLPROOF_REQUEST_TIMEOUT_MS',
      'TOOLPROOF_HEADERS_TIMEOUT_MS',
    ]) {
      expect(refused({ [key]: '0' })).toContain(`${key} must be at least 1`);
    }
  });

  it('unknown protected ops endpoints and malformed CORS origins', () => {
    expect(refused({ TOOLPROOF_PROTECT_OPS: 'metrics,health' })).toContain('unknown endpoint "health"');
    expect(refused({ TOOLPROOF_CORS_ORIGINS: 'example.com' })).toContain('TOOLPROOF_CORS_ORIGINS');
  });

  it('defaults: request and header timeouts on, CORS open to any origin, ops open', () => {
    const c = loadConfig({});
    expect(c.clientTimeouts).toEqual({ requestMs: 60_000, headersMs: 30_000 });
    expect(c.corsOrigins).toEqual(['*']);
    expect(c.protectOps).toEqual([]);
    expect(loadConfig({ TOOLPROOF_CORS_ORIGINS: 'off' }).corsOrigins).toEqual([]);
  });
});

/** Runs server/main.ts until it exits (or 30 s). */
function runMain(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, nodeEntry('server/main.ts'), {
      env: { ...process.env, TOOLPROOF_LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe('listen failures', () => {
  it('port in use: one line naming the address, exit 1, no stack trace', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const { code, stderr } = await runMain({
        TOOLPROOF_HOST: '127.0.0.1',
        TOOLPROOF_PORT: String(port),
        TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1',
      });
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).toContain(`cannot listen on 127.0.0.1:${port}: the port is already in use`);
      expect(stderr).not.toMatch(/\n\s+at /);
    } finally {
      blocker.close();
    }
  }, 40_000);

  it('each listen error code has its own one-line hint', () => {
    const e = (code: string) => Object.assign(new Error(`x ${code}`), { code });
    expect(describeListenError(e('ENOTFOUND'), 'nohost', 1)).toBe(
      'cannot listen on nohost:1: the host name does not resolve (check TOOLPROOF_HOST)',
    );
    expect(describeListenError(e('EACCES'), 'h', 80)).toContain('permission denied');
    expect(describeListenError(e('EADDRNOTAVAIL'), '10.9.9.9', 1)).toContain('not available');
    expect(describeListenError(e('EWHAT'), 'h', 1)).toBe('cannot listen on h:1: x EWHAT');
  });

  it('an empty key list stops the process with exit 2 and one line', async () => {
    const { code, stderr } = await runMain({ TOOLPROOF_API_KEYS: ' , ', TOOLPROOF_PORT: '0' });
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('TOOLPROOF_API_KEYS');
  }, 40_000);
});

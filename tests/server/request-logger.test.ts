/**
 * request.log makes its pino child on the first line it writes, not per request, and writes
 * exactly what the eager child would have (the request id binding, levels, serializers).
 */
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createRequestLogger, LazyChildLogger } from '../../server/request-logger.js';
import { logCapture } from './test-utils.js';

function capture(level = 'info') {
  const { stream, lines } = logCapture();
  return { lines, logger: pino({ level }, stream) };
}

describe('createRequestLogger', () => {
  it('makes no child until a line is written, then writes it with the bindings', () => {
    const { lines, logger } = capture();
    const child = vi.spyOn(logger, 'child');
    const log = createRequestLogger(logger, { reqId: 'r-1' }, {});
    expect(log).toBeInstanceOf(LazyChildLogger);
    expect(log.level).toBe('info');
    expect(child).not.toHaveBeenCalled();
    log.debug('below the level');
    log.error({ err: new Error('boom') }, 'internal error');
    log.warn('again');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: 50,
      reqId: 'r-1',
      msg: 'internal error',
      err: { message: 'boom' },
    });
    expect(lines[1]).toMatchObject({ level: 40, reqId: 'r-1', msg: 'again' });
  });

  it("a route's own options (a log level) get an eager child that honours them", () => {
    const { lines, logger } = capture('warn');
    const log = createRequestLogger(logger, { reqId: 'r-2' }, { level: 'debug' });
    expect(log).not.toBeInstanceOf(LazyChildLogger);
    log.debug('shown');
    expect(lines).toMatchObject([{ level: 20, reqId: 'r-2', msg: 'shown' }]);
  });

  it('child() and a level set later go to the real child', () => {
    const { lines, logger } = capture('warn');
    const log = createRequestLogger(logger, { reqId: 'r-3' }, {});
    log.level = 'info';
    log.info('now shown');
    log.child({ part: 'x' }).warn('nested');
    expect(lines).toMatchObject([
      { reqId: 'r-3', msg: 'now shown' },
      { reqId: 'r-3', part: 'x', msg: 'nested' },
    ]);
  });
});

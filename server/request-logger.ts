/**
 * request.log without a pino child per request. Fastify makes `logger.child({ reqId })` for
 * every request (with an options object, which takes pino's slow path: new formatters, the
 * bindings serialized), about a microsecond and half a kilobyte, yet a request logs only on an
 * error or a warning: toolproof's own line is written by app.ts through app.log. Here the child
 * is made on the first call that logs, with the same bindings, so what is written is unchanged.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LogFn } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export class LazyChildLogger implements FastifyBaseLogger {
  private real: FastifyBaseLogger | undefined;
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;
  declare silent: LogFn;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
  ) {}

  private logger(): FastifyBaseLogger {
    if (this.real === undefined) this.real = this.parent.child(this.bindings);
    return this.real;
  }

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger().level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options);
  }
}

// On the prototype, one function per level: an instance holds only its parent and bindings.
for (const level of [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
] as const satisfies Level[]) {
  Object.defineProperty(LazyChildLogger.prototype, level, {
    value: function (this: LazyChildLogger, ...args: unknown[]) {
      const real = (this as unknown as { logger(): FastifyBaseLogger }).logger();
      return (real[level] as (...a: unknown[]) => void).apply(real, args);
    },
    writable: true,
    configurable: true,
  });
}

/** Fastify's childLoggerFactory: lazy unless the route asks for its own level or serializers. */
export function createRequestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  for (const _ in options) return logger.child(bindings, options);
  return new LazyChildLogger(logger, bindings);
}

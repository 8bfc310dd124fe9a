/**
 * V8 settings for a proxy's heap, applied before the server's code loads (main.ts imports this
 * first). Each is measured by `npm run bench`; a flag given on node's own command line wins.
 *
 * Allocation-site pretenuring off. V8 allocates straight into the old generation the objects of
 * an allocation site whose objects it has seen survive a young collection. In a proxy nearly all
 * of them are request-scoped, and survival is an accident of timing (a collection that ran while
 * a few requests were in flight); once a site is pretenured, everything its objects point to
 * survives every young collection until the next full one. On small requests at 64 concurrent
 * that turned 1-2 MB of finished requests per young collection into old-generation garbage: 8-10
 * µs of GC per request against 3-4 µs without (bench/HISTORY.md, "Garbage collection of small
 * requests").
 */
import { setFlagsFromString } from 'node:v8';

const given = (name: string): boolean =>
  [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((arg) =>
    arg.replace(/_/g, '-').endsWith(name),
  );

if (!given('allocation-site-pretenuring')) setFlagsFromString('--no-allocation-site-pretenuring');

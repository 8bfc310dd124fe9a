#!/usr/bin/env node
/** The `toolproof` bin: a thin shell over cli/main.ts. */
import { main } from './main.js';

main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr }, process.env).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`toolproof: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);

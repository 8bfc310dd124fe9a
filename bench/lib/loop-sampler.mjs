/**
 * Preloaded into toolproof by the event-loop probe (node --import, plain JS: the built server runs
 * without tsx). Every INTERVAL_MS it records how late its timer fired (the event-loop delay, wall
 * clock) and how much CPU the process used since the previous tick. On a machine where other work
 * competes for the cores the two differ: a turn that was 150 ms late while the process used 30 ms
 * of CPU spent 120 ms waiting for a core. The CPU part is what toolproof itself blocks the loop
 * for, the figure a machine with a free core would show; the wall part is what clients feel here.
 * The samples are written at exit to the file named by BENCH_LOOP_SAMPLES as
 * [epoch ms, delay ms, cpu ms] triples (epoch, so the bench can cut them to its windows).
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const INTERVAL_MS = 10;
const out = process.env.BENCH_LOOP_SAMPLES;
if (out) {
  const samples = [];
  let last = performance.now();
  let lastCpu = process.cpuUsage();
  setInterval(() => {
    const now = performance.now();
    const cpu = process.cpuUsage();
    const cpuMs = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000;
    samples.push(Date.now(), Math.max(0, now - last - INTERVAL_MS), cpuMs);
    last = now;
    lastCpu = cpu;
  }, INTERVAL_MS).unref();
  process.once('exit', () => writeFileSync(out, JSON.stringify(samples)));
}

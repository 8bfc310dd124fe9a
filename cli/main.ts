/** The toolproof CLI's dispatcher: one entry per subcommand. */
import cluster from 'node:cluster';
import { EXIT_WITH_LAUNCHER, LAUNCHERS_DIR } from './launch/server.js';
import type { CliIO } from './probe/command.js';

const MAIN_HELP = `Usage: toolproof <command> [options]

Commands:
  launch   run a coding agent (claude, codex, opencode, …) pointed at toolproof (toolproof launch --help)
  probe    diagnose an OpenAI-compatible backend's tool calling (toolproof probe --help)
  serve    start the proxy (also \`toolproof --serve\`, \`npm start\`); configured by TOOLPROOF_* variables
`;

/**
 * The proxy itself, in this process: server/main.ts starts on import and runs until a signal.
 * Started by `toolproof launch` (launch/server.ts), it also stops when the launcher's IPC channel
 * closes: the launcher is gone (a signal before the agent ran, SIGKILL), and nobody else stops it.
 */
async function serveCommand(
  argv: readonly string[],
  io: CliIO,
  env: NodeJS.ProcessEnv = {},
): Promise<number> {
  if (argv.length > 0) {
    io.stderr.write(`toolproof serve: takes no arguments (configure it with TOOLPROOF_* variables)\n`);
    return 2;
  }
  // Not in a cluster worker: its channel is to the primary, which stops it.
  if (env[EXIT_WITH_LAUNCHER] === '1' && cluster.isPrimary) {
    const dir = env[LAUNCHERS_DIR];
    // Its launcher gone: stopped once no other launch that uses it still runs (launch/launchers.ts),
    // and their folder with it (a launch that started no server leaves it to the server; when the
    // one that did exited first, the folder stayed in $TMPDIR).
    const stop = async () => {
      const { otherLaunchers, rmdirQuietly } = await import('./launch/launchers.js');
      if (dir && otherLaunchers(dir).length > 0) setTimeout(stop, 1000);
      else {
        if (dir) rmdirQuietly(dir);
        process.kill(process.pid, 'SIGTERM');
      }
    };
    // A launcher gone while this process was still loading: its channel already closed, and gone.
    if (!process.channel || !process.connected) void stop();
    else {
      process.channel.unref();
      process.once('disconnect', () => void stop());
    }
  }
  await import('../server/main.js');
  return 0;
}

type Command = (argv: readonly string[], io: CliIO, env: NodeJS.ProcessEnv) => Promise<number>;

/**
 * Each subcommand's code is loaded when it runs: the probe's (its parsers, YAML writer, fetch)
 * took ~0.15 s of CPU in every `toolproof launch` and ~30 ms in every `toolproof --serve`, and
 * the launcher's ~25 ms in every server it started.
 */
const COMMANDS: Record<string, Command> = {
  launch: async (...args) => (await import('./launch/command.js')).launchCommand(...args),
  probe: async (...args) => (await import('./probe/command.js')).probeCommand(...args),
  serve: serveCommand,
  '--serve': serveCommand,
};

export async function main(argv: readonly string[], io: CliIO, env: NodeJS.ProcessEnv = {}): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    io.stdout.write(MAIN_HELP);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.stderr.write(`toolproof: unknown command "${name}"\n\n${MAIN_HELP}`);
    return 2;
  }
  return command(rest, io, env);
}

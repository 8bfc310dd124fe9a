/** The toolproof CLI's dispatcher: one entry per subcommand. */
import { launchCommand } from './launch/command.js';
import { type CliIO, probeCommand } from './probe/command.js';

const MAIN_HELP = `Usage: toolproof <command> [options]

Commands:
  launch   run a coding agent (claude, codex, opencode, …) pointed at toolproof (toolproof launch --help)
  probe    diagnose an OpenAI-compatible backend's tool calling (toolproof probe --help)
  serve    start the proxy (also \`toolproof --serve\`, \`npm start\`); configured by TOOLPROOF_* variables
`;

/** The proxy itself, in this process: server/main.ts starts on import and runs until a signal. */
async function serveCommand(argv: readonly string[], io: CliIO): Promise<number> {
  if (argv.length > 0) {
    io.stderr.write(`toolproof serve: takes no arguments (configure it with TOOLPROOF_* variables)\n`);
    return 2;
  }
  await import('../server/main.js');
  return 0;
}

const COMMANDS: Record<
  string,
  (argv: readonly string[], io: CliIO, env: NodeJS.ProcessEnv) => Promise<number>
> = {
  launch: launchCommand,
  probe: probeCommand,
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

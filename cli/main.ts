/** The toolproof CLI's dispatcher: one entry per subcommand. */
import { type CliIO, probeCommand } from './probe/command.js';

const MAIN_HELP = `Usage: toolproof <command> [options]

Commands:
  probe    diagnose an OpenAI-compatible backend's tool calling (toolproof probe --help)

The proxy itself starts with \`npm start\` (node dist/server/main.js).
`;

const COMMANDS: Record<
  string,
  (argv: readonly string[], io: CliIO, env: NodeJS.ProcessEnv) => Promise<number>
> = {
  probe: probeCommand,
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

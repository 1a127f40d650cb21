/**
 * The agent's bundle (agent-main.ts) runs the commands agents run over and over without the rest of
 * the CLI (docs/decisions/0052). The launcher picks it from the command's name alone
 * (command-named.ts), so that list must be the agent's table; the agent's entries must be the
 * whole tree's own; and both bundles must answer a call the same, help and bad usage included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { repoRoot } from '../../test/support/cli.js';
import { AGENT_COMMANDS } from './agent-commands.js';
import { AGENT_COMMAND_NAMES } from './command-named.js';
import { COMMANDS } from './command-table.js';
import { bundleFor } from './launch.js';

const BUNDLES = join(repoRoot(), 'dist', 'src', 'cli-bundle');

test("the launcher's list of agent commands is the agent's table, whose entries the whole tree shares", () => {
  const tabled = AGENT_COMMANDS.flatMap(([names]) => names);
  assert.deepEqual([...AGENT_COMMAND_NAMES].sort(), [...tabled].sort());
  for (const entry of AGENT_COMMANDS)
    assert.ok(COMMANDS.includes(entry), `${entry[0].join()} is in the tree`);
});

test("a call runs the agent's bundle when it names an agent's command, else the whole CLI", () => {
  const agent = join(BUNDLES, 'agent.cjs');
  const main = join(BUNDLES, 'main.cjs');
  const calls: [string[], string][] = [
    [['claim', 'k', '--session', '1'], agent],
    [['--json', '--db', 'x.db', 'heartbeat'], agent],
    [['--api', 'http://h:1', '--token', 't', 'job', 'next'], agent],
    [['hook', 'pre-tool-use'], agent],
    [['task', 'add', 'claim'], main],
    [['up'], main],
    [['--help'], main],
    [['-h', 'claim'], main],
    [['--db=x.db', 'claim'], main],
    [['--', 'claim'], main],
    [['no-such-command'], main],
    [[], main],
  ];
  for (const [args, bundle] of calls)
    assert.equal(bundleFor(BUNDLES, ['node', 'baton', ...args]), bundle, args.join(' '));
});

interface Answer {
  readonly code: number | string | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** One call run by the given bundle through the launcher, as bin/baton.js runs it. */
function runBundle(bundle: string, args: readonly string[]): Promise<Answer> {
  const launcher = JSON.stringify(join(BUNDLES, 'launch.cjs'));
  const script = `require(${launcher}).launch(process.argv[1], ['node', 'baton', ...process.argv.slice(2)])`;
  const argv = ['-e', script, join(BUNDLES, bundle), ...args];
  const env = { ...process.env, BATON_DB: join(repoRoot(), 'no-such-dir', 'baton.db') };
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { env }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : (error.code ?? null), stdout, stderr });
    });
  });
}

test('both bundles answer each agent command the same: its help, and a usage error', async () => {
  // Every name's help; a usage error once per module (the names of one module share its code).
  const calls = [
    ...[...AGENT_COMMAND_NAMES].map((name) => [name, '--help']),
    ...AGENT_COMMANDS.map(([names]) => [names[0] ?? '', '--no-such-flag']),
  ];
  for (const args of calls) {
    const [whole, agent] = await Promise.all([runBundle('main.cjs', args), runBundle('agent.cjs', args)]);
    assert.deepEqual(agent, whole, args.join(' '));
    assert.ok(whole.stdout.length + whole.stderr.length > 0, `${args.join(' ')} says something`);
  }
});

/** The bundle files `bin/baton.js` compiles in one call, as the launcher names them to V8. */
function compiledBy(args: readonly string[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'baton-route-'));
  try {
    const out = join(dir, 'compiled.txt');
    const preload = join(dir, 'watch.cjs');
    writeFileSync(
      preload,
      [
        "const vm = require('node:vm');",
        'const Script = vm.Script;',
        'vm.Script = class extends Script {',
        '  constructor(code, options) {',
        '    super(code, options);',
        `    require('node:fs').appendFileSync(${JSON.stringify(out)}, String(options?.filename) + '\\n');`,
        '  }',
        '};',
      ].join('\n'),
    );
    spawnSync(process.execPath, ['--require', preload, join(repoRoot(), 'bin', 'baton.js'), ...args], {
      env: { ...process.env, BATON_DB: join(dir, 'none', 'baton.db') },
    });
    return existsSync(out)
      ? readFileSync(out, 'utf8')
          .trim()
          .split('\n')
          .map((path) => basename(path))
      : [];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("bin/baton.js runs the agent's bundle for an agent's command and the whole CLI for the rest", () => {
  assert.deepEqual(compiledBy(['claim', '--help']), ['agent.cjs']);
  assert.deepEqual(compiledBy(['--json', 'heartbeat', '--help']), ['agent.cjs']);
  assert.deepEqual(compiledBy(['task', '--help']), ['main.cjs']);
  assert.deepEqual(compiledBy(['--help']), ['main.cjs']);
});

test('bin/baton.js over a dist built before the agent bundle runs its main.cjs, as it did', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-old-dist-'));
  try {
    const bundle = join(dir, 'dist', 'src', 'cli-bundle');
    mkdirSync(join(dir, 'bin'), { recursive: true });
    mkdirSync(bundle, { recursive: true });
    copyFileSync(join(repoRoot(), 'bin', 'baton.js'), join(dir, 'bin', 'baton.js'));
    copyFileSync(join(repoRoot(), 'bin', 'package.json'), join(dir, 'bin', 'package.json'));
    // The launcher of such a build: launch() alone, here printing the bundle it was handed.
    writeFileSync(
      join(bundle, 'launch.cjs'),
      "exports.launch = (file) => process.stdout.write(require('node:path').basename(file));",
    );
    const ran = spawnSync(process.execPath, [join(dir, 'bin', 'baton.js'), 'claim', 'k'], {
      encoding: 'utf8',
    });
    assert.deepEqual([ran.status, ran.stdout, ran.stderr], [0, 'main.cjs', '']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

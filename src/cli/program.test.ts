/**
 * The command tree registers only the module of the command a call names (program.ts): the table
 * of which module registers which top-level commands must be what the modules do, or a call would
 * meet an unknown command where a whole tree has it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { commandNamed } from './command-named.js';
import { COMMANDS } from './command-table.js';
import { buildProgram } from './program.js';

const names = (program: Command): string[] => program.commands.map((c) => c.name());

test('each module registers exactly the top-level commands the table gives it', async () => {
  for (const [listed, load] of COMMANDS) {
    const program = new Command('baton');
    (await load())(program);
    assert.deepEqual(names(program), listed);
  }
});

test('a call naming a command registers its module alone; help and anything unclear register all', async () => {
  const all = COMMANDS.flatMap(([listed]) => listed);
  assert.deepEqual(names(await buildProgram(['node', 'baton', '--help'], COMMANDS)), all);
  assert.deepEqual(names(await buildProgram(['node', 'baton', 'no-such-command'], COMMANDS)), all);
  assert.deepEqual(names(await buildProgram(['node', 'baton', '--db', 'x.db', 'release', 'k'], COMMANDS)), [
    'claim',
    'release',
  ]);
});

test('the command is the first word that is neither a global option nor its value', () => {
  assert.equal(commandNamed(['claim', 'k', '--session', '1']), 'claim');
  assert.equal(commandNamed(['--json', '--db', 'claim', 'task', 'list']), 'task');
  assert.equal(commandNamed(['--api', 'http://x', '--token', 't', 'next']), 'next');
  for (const unclear of [
    [],
    ['--help'],
    ['-h', 'claim'],
    ['--db=x.db', 'claim'],
    ['--', 'claim'],
    ['--db'],
  ]) {
    assert.equal(commandNamed(unclear), null, JSON.stringify(unclear));
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeClock, judgeDisk, judgeGit, judgeLedger } from './doctor.js';
import { judgeAgents } from './doctor-fleet.js';
import { commandPrograms } from './agent-program.js';

test('the clock: ok within 1 s, warn past it and past 5 s; half the round trip given the benefit of the doubt', () => {
  assert.equal(judgeClock(900, 0).level, 'ok');
  assert.equal(judgeClock(-1_500, 0).level, 'warn');
  assert.equal(judgeClock(1_500, 1_200).level, 'ok', 'within half the round trip of 1 s');
  // Past 5 s still a warning: its own line says claims and leases are not affected (decision 0030).
  assert.equal(judgeClock(5_100, 0).level, 'warn');
  assert.match(judgeClock(5_100, 0).found, /claims and leases .* not affected.*misorder/);
  assert.equal(judgeClock(-5_100, 400).level, 'warn');
  assert.match(judgeClock(-2_000, 0).found, /2000 ms ahead of the database's/);
});

test('git: missing or older than 2.25 fails, a version it cannot read warns', () => {
  assert.equal(judgeGit(null).level, 'fail');
  assert.equal(judgeGit('git version 2.24.9').level, 'fail');
  assert.equal(judgeGit('git version 2.25.0').level, 'ok');
  assert.equal(judgeGit('git version 2.100.1.windows.1').level, 'ok');
  assert.equal(judgeGit('git version 3.0').level, 'ok');
  assert.equal(judgeGit('something else').level, 'warn');
});

test('disk: fail under 100 MB, warn when low as `baton hosts` flags it (1 GiB or 5%)', () => {
  assert.equal(judgeDisk('logs', '/x', { freeMb: 99, totalMb: 1_000 }).level, 'fail');
  assert.equal(judgeDisk('logs', '/x', { freeMb: 900, totalMb: 2_000 }).level, 'warn');
  assert.equal(judgeDisk('logs', '/x', { freeMb: 40_000, totalMb: 1_000_000 }).level, 'warn');
  assert.equal(judgeDisk('logs', '/x', { freeMb: 60_000, totalMb: 1_000_000 }).level, 'ok');
  assert.equal(judgeDisk('logs', '/x', null).level, 'skip');
});

test('the ledger: no key warns; a key with rows unsealed past 10 min warns; else ok', () => {
  const facts = { keys: 1, unsealedRows: 3, oldestUnsealedAgeMs: 5_000, keyFileHere: true };
  const age = (ms: number): string => `${ms} ms`;
  assert.equal(judgeLedger({ ...facts, keys: 0 }, age).level, 'warn');
  assert.equal(judgeLedger(facts, age).level, 'ok');
  assert.equal(judgeLedger({ ...facts, oldestUnsealedAgeMs: 11 * 60_000 }, age).level, 'warn');
  assert.equal(judgeLedger({ ...facts, oldestUnsealedAgeMs: null }, age).level, 'ok');
  // A key file whose key `baton ledger retire` retired: a baton up with it seals nothing.
  const retired = judgeLedger({ ...facts, keyFileRetired: { keyId: '76bf00aa11223344', row: 40 } }, age);
  assert.equal(retired.level, 'warn');
  assert.match(
    retired.found,
    /the key file here holds key 76bf00aa11223344, which the ledger retired \(row 40\)/,
  );
  assert.match(
    retired.fix ?? '',
    /--ledger-key .* or add a new key with `baton ledger init --rotate --key-file FILE`/,
  );
});

test('agents: the programs of a command, past assignments and exec, looked up, in subshells too; builtins not', () => {
  const looked: string[] = [];
  const found = (program: string): boolean => {
    looked.push(program);
    return program === 'claude';
  };
  const commands = [
    'FOO=1 exec claude -p "Work on {{key}}"',
    "env A=b codex exec 'x' {{title}}",
    './agents/run.sh {{key}} && echo done',
    '(cd sub; claude)',
    'cd /srv/api; make',
    'echo {{key}}',
  ];
  const verdict = judgeAgents(
    commands.map((command, index) => ({ where: `job ${index + 1}`, command })),
    found,
  );
  assert.deepEqual(looked.sort(), ['./agents/run.sh', 'claude', 'codex', 'make']);
  assert.equal(verdict.level, 'warn');
  assert.match(verdict.found, /codex \(job 2\); \.\/agents\/run\.sh \(job 3\); make \(job 5\)/);
  assert.equal(judgeAgents([], found).level, 'ok');
});

test('agents: the programs of every simple command, past prefixes with their options, redirects and builtins', () => {
  const cases: [string, string[]][] = [
    ['nice -n 10 claude -p x', ['claude']],
    ['nice -10 claude', ['claude']],
    ['env -i PATH=/usr/bin HOME=/h codex exec y', ['codex']],
    ['env -u SECRET -C /srv claude', ['claude']],
    ['time -p claude', ['claude']],
    ['command -p claude', ['claude']],
    ['command -v claude', []],
    ['exec 2>&1 git status', ['git']],
    ['exec -a agent claude', ['claude']],
    ['claude > out.log 2> err.log', ['claude']],
    ['exec &>log claude', ['claude']],
    ['set -e; ulimit -v 100000; umask 077; claude', ['claude']],
    ['source ~/.agent-env && . ./env.sh && aider', ['aider']],
    ['~/bin/git status', ['~/bin/git']],
    ['cd {{worktree}} && nosuch --x', ['nosuch']],
    ['make || nosuch | tee log &', ['make', 'nosuch', 'tee']],
    ['if true; then claude; fi', ['claude']],
    ['\'claude\' -p "$PROMPT"', ['claude']],
    ['$AGENT -p x; "$(which claude)" -p; `pick` x', []],
    ['{{agent}} {{key}}', []],
    ['cat <<EOF\nnot-a-program here\nEOF', ['cat']],
    ['claude # nosuch in a comment', ['claude']],
    ['exec 2>&1', []],
    // Object's own names are programs, not the prefixes above.
    ['toString -x claude', ['toString']],
    ['constructor claude', ['constructor']],
  ];
  for (const [command, programs] of cases) assert.deepEqual(commandPrograms(command), programs, command);
});

test("agents: a missing program's warning says the shell answers command not found, not an exit code", () => {
  const verdict = judgeAgents([{ where: 'job 1', command: 'cd {{worktree}} && nosuch' }], () => false);
  assert.equal(verdict.level, 'warn');
  assert.match(verdict.found, /nosuch \(job 1\).*command not found/);
  assert.doesNotMatch(verdict.found, /127/);
});

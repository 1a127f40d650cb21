/**
 * End-to-end tests of the workspace commands: `baton workspace | agent | project add`, the new
 * `task add` flags, and `baton plan`, spawned against a fresh database on SQLite and PostgreSQL.
 * They pin the interface contract of the workspace issue: the plan's JSON, and
 * WORKSPACE_UNRESOLVED with its cause and fix and exit 2.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { bothEngines, sqliteDatabase, type TestDatabase } from '../../test/support/databases.js';
import { cliModes, cliOn, stopServers, repoRoot, type CliMode } from '../../test/support/cli.js';

type Obj = Record<string, unknown>;

const root = repoRoot();

/**
 * The workspaces' directories. On SQLite every runner shares this machine, so a workspace must
 * be a directory here, and a worktree workspace a git repository: `api` and `branch` are.
 */
const SRV = mkdtempSync(join(tmpdir(), 'baton-srv-'));
for (const name of ['api', 'branch', 'desk', 'main', 'w', 'unrelated', 'other', 'x']) {
  mkdirSync(join(SRV, name));
}
for (const repo of ['api', 'branch']) execFileSync('git', ['init', '-q', join(SRV, repo)]);
after(() => rmSync(SRV, { recursive: true, force: true }));

function bundle(db: string, mode: CliMode) {
  const { run, json } = cliOn(db, mode);
  const plan = (key: string, ...args: string[]): Promise<Obj> => json(0, 'plan', key, ...args);
  return { run, json, plan };
}

const exclusive = (name: string, path: string, kind = 'dir'): Obj => ({
  lockMode: 'exclusive',
  workspace: { name, path, kind },
});
const NONE = { lockMode: 'none', workspace: null };

function engines(): readonly TestDatabase[] {
  return process.env['BATON_TEST_PG_SERVERS'] ? bothEngines() : [sqliteDatabase()];
}

after(stopServers);

for (const engine of engines())
  for (const mode of cliModes(engine.engine)) {
    describe(
      `baton workspace commands on ${engine.name}, ${mode === 'db' ? 'with --db' : 'over HTTP'}`,
      { concurrency: 4 },
      () => {
        const made: string[] = [];
        const setup = async (): Promise<ReturnType<typeof bundle>> => {
          const url = await engine.fresh();
          made.push(url);
          return bundle(url, mode);
        };
        after(() => {
          if (engine.engine !== 'sqlite') return;
          for (const path of made) rmSync(dirname(path), { recursive: true, force: true });
        });

        test('registers workspaces, agents and projects, and lists them as JSON', async () => {
          const t = await setup();
          const added = await t.json(
            0,
            'workspace',
            'add',
            'api',
            '--path',
            `${SRV}/api`,
            '--kind',
            'worktree',
          );
          assert.deepEqual(added, { name: 'api', path: `${SRV}/api`, kind: 'worktree' });
          const relative = await t.json(0, 'workspace', 'add', 'here', '--path', 'test/support');
          assert.deepEqual(relative, { name: 'here', path: resolve(root, 'test/support'), kind: 'dir' });
          const agent = await t.json(
            0,
            'agent',
            'add',
            'ada',
            '--role',
            'CTO',
            '--department',
            'engineering',
            '--workspace',
            'api',
          );
          assert.deepEqual(agent, { name: 'ada', role: 'CTO', department: 'engineering', workspace: 'api' });
          const project = await t.json(0, 'project', 'add', 'acme', '--primary-workspace', 'here');
          assert.deepEqual(project, { name: 'acme', primaryWorkspace: 'here' });
          assert.deepEqual(
            (await t.json<Obj[]>(0, 'workspace', 'list')).map((w) => w['name']),
            ['api', 'here'],
          );
          assert.deepEqual(await t.json(0, 'agent', 'list'), [agent]);
          assert.deepEqual(await t.json(0, 'project', 'list'), [project]);
          assert.match(
            (await t.run('workspace', 'list')).stdout,
            new RegExp(`^NAME\\s+KIND\\s+PATH\\napi\\s+worktree\\s+${SRV}/api\\n`),
          );
          // Over HTTP the ledger also holds the operator token the test made for `baton serve`.
          const types = (await t.json<Obj[]>(0, 'audit'))
            .map((e) => e['type'])
            .filter((type) => type !== 'token:created');
          assert.deepEqual(types, ['workspace:added', 'workspace:added', 'agent:added', 'project:added']);
        });

        test('plans an exclusive lock on the task workspace, over every other signal', async () => {
          const t = await setup();
          await t.json(0, 'workspace', 'add', 'branch', '--path', `${SRV}/branch`, '--kind', 'worktree');
          await t.json(0, 'workspace', 'add', 'desk', '--path', `${SRV}/desk`);
          await t.json(0, 'agent', 'add', 'wes', '--role', 'writer', '--workspace', 'desk');
          const task = await t.json(0, 'task', 'add', 'k1', '--workspace', 'branch', '--assignee', 'wes');
          assert.deepEqual(
            [task['key'], task['requiresFilesystem'], task['workspace']],
            ['k1', false, 'branch'],
          );
          assert.deepEqual(await t.plan('k1'), exclusive('branch', `${SRV}/branch`, 'worktree'));
          assert.match(
            (await t.run('plan', 'k1')).stdout,
            /^k1: a worktree of its own in workspace branch .*no lock, the claim is the exclusion/,
            'a worktree run is never said to lock (issue 14, item 14)',
          );
        });

        test("plans a filesystem task on its agent's workspace, else on the project's primary", async () => {
          const t = await setup();
          await t.json(0, 'workspace', 'add', 'desk', '--path', `${SRV}/desk`);
          await t.json(0, 'workspace', 'add', 'main', '--path', `${SRV}/main`);
          await t.json(0, 'agent', 'add', 'wes', '--role', 'writer', '--workspace', 'desk');
          await t.json(0, 'agent', 'add', 'nat', '--role', 'writer');
          await t.json(0, 'project', 'add', 'acme', '--primary-workspace', 'main');
          const task = await t.json(
            0,
            'task',
            'add',
            'k1',
            '--requires-filesystem',
            '--project',
            'acme',
            '--assignee',
            'wes',
          );
          assert.deepEqual([task['requiresFilesystem'], task['workspace']], [true, null]);
          assert.deepEqual(await t.plan('k1'), exclusive('desk', `${SRV}/desk`));
          assert.deepEqual(await t.plan('k1', '--agent', 'nat'), exclusive('main', `${SRV}/main`));
          await t.json(0, 'task', 'add', 'k2', '--requires-filesystem', '--project', 'acme');
          assert.deepEqual(await t.plan('k2'), exclusive('main', `${SRV}/main`));
          assert.match(
            (await t.run('plan', 'k2')).stdout,
            new RegExp(`^k2: exclusive lock on workspace main \\(dir at ${SRV}/main\\)`),
          );
        });

        test("plans a coding agent's run on its workspace even when the task does not ask for one", async () => {
          const t = await setup();
          await t.json(0, 'workspace', 'add', 'desk', '--path', `${SRV}/desk`);
          await t.json(0, 'agent', 'add', 'ada', '--role', 'Senior Engineer', '--workspace', 'desk');
          await t.json(
            0,
            'agent',
            'add',
            'ops',
            '--role',
            'manager',
            '--department',
            'Engineering',
            '--workspace',
            'desk',
          );
          await t.json(0, 'task', 'add', 'k1', '--assignee', 'ada');
          assert.deepEqual(await t.plan('k1'), exclusive('desk', `${SRV}/desk`));
          assert.deepEqual(await t.plan('k1', '--agent', 'ops'), exclusive('desk', `${SRV}/desk`));
        });

        test('plans lock mode none and no workspace for cognitive work, with or without an agent', async () => {
          const t = await setup();
          await t.json(0, 'workspace', 'add', 'desk', '--path', `${SRV}/desk`);
          await t.json(
            0,
            'agent',
            'add',
            'cfo',
            '--role',
            'CFO',
            '--department',
            'finance',
            '--workspace',
            'desk',
          );
          await t.json(0, 'project', 'add', 'acme', '--primary-workspace', 'desk');
          await t.json(0, 'task', 'add', 'k1', '--assignee', 'cfo', '--project', 'acme');
          await t.json(0, 'task', 'add', 'k2', '--assignee', 'someone-not-registered');
          assert.deepEqual(await t.plan('k1'), NONE);
          assert.deepEqual(await t.plan('k2'), NONE);
          assert.match((await t.run('plan', 'k1')).stdout, /^k1: lock mode none \(agent cfo\)/);
        });

        test('changes a task requirement and binding with task set, and the plan follows', async () => {
          const t = await setup();
          await t.json(0, 'workspace', 'add', 'w', '--path', `${SRV}/w`);
          await t.json(0, 'task', 'add', 'k1');
          const shown = await t.json(0, 'task', 'set', 'k1');
          assert.deepEqual(shown, { key: 'k1', requiresFilesystem: false, workspace: null });
          assert.deepEqual(await t.plan('k1'), NONE);
          await t.json(0, 'task', 'set', 'k1', '--workspace', 'w');
          assert.deepEqual(await t.plan('k1'), exclusive('w', `${SRV}/w`));
          const set = await t.json(0, 'task', 'set', 'k1', '--no-workspace', '--requires-filesystem');
          assert.deepEqual(set, { key: 'k1', requiresFilesystem: true, workspace: null });
          assert.equal((await t.json(2, 'plan', 'k1'))['error'], 'WORKSPACE_UNRESOLVED');
          await t.json(0, 'task', 'set', 'k1', '--no-requires-filesystem');
          assert.deepEqual(await t.plan('k1'), NONE);
          const ledger = await t.json<Obj[]>(0, 'audit', '--task', 'k1');
          assert.deepEqual(
            ledger.map((e) => e['type']),
            ['task:added', ...Array<string>(3).fill('task:requirements-set')],
          );
          assert.equal((await t.run('task', 'set', 'nope', '--requires-filesystem')).code, 4);
        });

        test('exits 2 with WORKSPACE_UNRESOLVED, its cause and its fix, when no workspace is bound', async () => {
          const t = await setup();
          await t.json(0, 'workspace', 'add', 'unrelated', '--path', `${SRV}/unrelated`);
          await t.json(0, 'agent', 'add', 'ada', '--role', 'cto');
          await t.json(0, 'project', 'add', 'acme');
          await t.json(0, 'task', 'add', 'k1', '--assignee', 'ada', '--project', 'acme');
          const refused = await t.json(2, 'plan', 'k1');
          assert.equal(refused['error'], 'WORKSPACE_UNRESOLVED');
          assert.match(
            String(refused['cause']),
            /^task k1 needs an exclusive workspace lock \(agent ada has the coding/,
          );
          assert.match(
            String(refused['cause']),
            /agent ada has no workspace, project acme has no primary workspace$/,
          );
          assert.match(
            String(refused['fix']),
            /^bind a workspace to the task with `baton task set k1 --workspace <w>`/,
          );
          assert.match(
            String(refused['fix']),
            /`baton workspace add <w> --path <dir>`.*give agent ada a workspace/,
          );
          assert.deepEqual([refused['key'], refused['agent'], refused['project']], ['k1', 'ada', 'acme']);
          const plain = await t.run('plan', 'k1');
          assert.equal(plain.code, 2);
          const lines = plain.stderr.split('\n').filter((l) => l !== '');
          assert.equal(lines.length, 1);
          assert.match(
            lines[0] ?? '',
            /^baton: task k1 needs an exclusive workspace lock .* — bind a workspace to/,
          );
          await t.json(0, 'task', 'add', 'k2', '--requires-filesystem');
          assert.match(String((await t.json(2, 'plan', 'k2'))['cause']), /\(it requires the filesystem\)/);
        });

        const refusals =
          'refuses unknown names (exit 4), taken names (exit 3) and bad input (exit 2), writing nothing';
        test(refusals, async () => {
          const t = await setup();
          await t.json(0, 'workspace', 'add', 'w', '--path', `${SRV}/w`);
          await t.json(0, 'task', 'add', 'k1');
          const before = (await t.json<Obj[]>(0, 'audit')).length;
          const cases: [number, string[]][] = [
            [4, ['task', 'add', 'k2', '--workspace', 'nope']],
            [4, ['agent', 'add', 'a', '--role', 'engineer', '--workspace', 'nope']],
            [4, ['project', 'add', 'p', '--primary-workspace', 'nope']],
            [4, ['plan', 'nope']],
            [4, ['plan', 'k1', '--agent', 'nope']],
            [3, ['workspace', 'add', 'w', '--path', `${SRV}/other`]],
            [2, ['workspace', 'add', 'x', '--path', `${SRV}/x`, '--kind', 'clone']],
            [2, ['workspace', 'add', 'x']],
            [2, ['workspace', 'add', 'x', '--path', '']],
            [2, ['workspace', 'add', 'x', '--path', ' ']],
            [2, ['agent', 'add', 'a']],
            [2, ['agent', 'add', 'a', '--role', '']],
          ];
          for (const [code, args] of cases) {
            const r = await t.run(...args);
            assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
            assert.match(r.stderr, /^baton: [^\n]+\n$/);
          }
          const empty = await t.run('workspace', 'add', 'x', '--path', '');
          assert.match(empty.stderr, /^baton: workspace path is empty — give the directory/);
          assert.equal((await t.json<Obj[]>(0, 'workspace', 'list')).length, 1, 'only w');
          assert.equal((await t.json(4, 'task', 'show', 'k2'))['error'], 'not_found');
          assert.equal((await t.json<Obj[]>(0, 'audit')).length, before);
        });

        const paths =
          'refuses a workspace path that is no directory here, or no git repository for a worktree, ' +
          'where every runner shares this machine (SQLite); PostgreSQL runners may be elsewhere';
        test(paths, async () => {
          const t = await setup();
          const file = join(SRV, 'a-file');
          writeFileSync(file, '');
          const cases: [string[], RegExp][] = [
            [
              ['--path', join(SRV, 'nope')],
              /^workspace path \S+\/nope does not exist — create the directory/,
            ],
            [['--path', file], /^workspace path \S+\/a-file is a file, not a directory — /],
            [['--path', join(file, 'below')], /^workspace path \S+ does not exist — /],
            [
              ['--path', `${SRV}/desk`, '--kind', 'worktree'],
              /^workspace path \S+\/desk is not in a git repository, .* or register it with --kind dir$/,
            ],
          ];
          const before = (await t.json<Obj[]>(0, 'audit')).length;
          for (const [index, [flags, said]] of cases.entries()) {
            const args = ['workspace', 'add', `ws${index}`, ...flags];
            if (engine.engine === 'sqlite') {
              const refused = await t.json(2, ...args);
              assert.equal(refused['error'], 'invalid_input');
              assert.match(`${String(refused['message'])} — ${String(refused['hint'])}`, said);
              const plain = await t.run(...args);
              assert.equal(plain.code, 2, plain.stderr);
              assert.match(plain.stderr, /^baton: workspace path [^\n]+\n$/, args.join(' '));
            } else {
              await t.json(0, ...args);
            }
          }
          const added = engine.engine === 'sqlite' ? 0 : cases.length;
          assert.equal((await t.json<Obj[]>(0, 'workspace', 'list')).length, added);
          assert.equal((await t.json<Obj[]>(0, 'audit')).length, before + added);
        });
      },
    );
  }

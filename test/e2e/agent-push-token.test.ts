/**
 * An agent under a real `baton up` pushes to a repository with the enforcing guard installed
 * `--require-token`, with a plain `git push`: the runner gave its git the claim and its token as
 * push options in its environment (daemon/agent-push-options.ts), so the guard accepts the push as
 * that run, and the token is on no process's command line meanwhile (before, the documented
 * `-o baton-token="$BATON_TOKEN"` put it in git's argv, where a sibling agent of another uid read
 * it from /proc/<pid>/cmdline). The guard's hook waits, while the test reads every
 * /proc/<pid>/cmdline, until the test lets it go. A second push, the old way with -o, still
 * opens, and the same scan finds its token: the scan would have seen it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { branchForKey } from '../../src/os/worktree.js';
import { bothEngines } from '../support/databases.js';
import { git, isolateGit, makeRepo } from '../support/git.js';
import { waitUntil } from '../support/wait.js';
import { STEADY, clusterFixture } from './cluster-support.js';

isolateGit();
const KEY = 'gh:acme/api#91';

/** Every process's command line, NUL separators as spaces. */
function commandLines(): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      out.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/**
 * Puts a hook before Baton's pre-receive that marks `held.<n>` and waits for `release.<n>` (at most
 * 60 s), then runs Baton's with its stdin. The agent's environment holds no database password, so
 * on PostgreSQL the hook is given it here, as a git server's own environment would.
 */
function holdHook(remote: string, gate: string, dbUrl: string): void {
  const hooks = join(remote, 'hooks');
  renameSync(join(hooks, 'pre-receive'), join(hooks, 'baton-pre-receive'));
  const password = dbUrl.startsWith('postgres') ? decodeURIComponent(new URL(dbUrl).password) : '';
  const script = [
    '#!/bin/sh',
    `G='${gate}'`,
    'i=0; while [ -e "$G/held.$i" ]; do i=$((i+1)); done; : > "$G/held.$i"',
    'n=0; while [ ! -e "$G/release.$i" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done',
    password === '' ? '' : `export PGPASSWORD='${password}'`,
    `exec "${hooks}/baton-pre-receive"`,
    '',
  ];
  writeFileSync(join(hooks, 'pre-receive'), script.join('\n'), { mode: 0o755 });
}

for (const db of bothEngines()) {
  describe(`${db.name}: an agent's push to a guard that requires its token`, () => {
    test('a plain `git push` carries the claim and token from the environment, on no command line', async () => {
      const c = await clusterFixture(db);
      try {
        const { repo, remote } = makeRepo(c.dir);
        const install = await c.baton('guard', 'server-install', remote, '--require-token');
        assert.equal(install.code, 0, install.stderr);
        const gate = join(c.dir, 'gate');
        git(c.dir, 'init', '-q', gate);
        holdHook(remote, gate, c.url);
        const out = join(c.dir, 'out');
        const agent = [
          `printf %s "$BATON_TOKEN" > '${out}.token'; printf %s "$BATON_SESSION" > '${out}.session'`,
          'echo a > a.txt && git add a.txt && git commit -qm a',
          `git push origin HEAD > '${out}.push1' 2>&1; echo $? > '${out}.push1.code'`,
          'echo b > b.txt && git add b.txt && git commit -qm b',
          'git push -o baton-key="$BATON_KEY" -o baton-epoch="$BATON_EPOCH" -o baton-token="$BATON_TOKEN" ' +
            `origin HEAD > '${out}.push2' 2>&1; echo $? > '${out}.push2.code'`,
        ].join('; ');
        for (const args of [
          ['workspace', 'add', 'repo', '--path', repo, '--kind', 'worktree'],
          ['task', 'add', KEY, '--workspace', 'repo'],
          ['enqueue', KEY, '--command', agent, '--attempts', '1'],
        ]) {
          const r = await c.baton(...args);
          assert.equal(r.code, 0, r.stderr);
        }
        const up = c.up('h1', ...STEADY);
        const seen = (): string =>
          ['push1', 'push2']
            .map((f) => `${f}: ${existsSync(`${out}.${f}`) ? readFileSync(`${out}.${f}`, 'utf8') : '-'}`)
            .join('\n') + `\n${up.log()}`;
        const held = async (i: number): Promise<string[]> => {
          await waitUntil(
            () => existsSync(join(gate, `held.${i}`)),
            60_000,
            `push ${i + 1} to reach the hook`,
          ).catch((error: unknown) => {
            throw new Error(`${String(error)}\n${seen()}`);
          });
          const lines = commandLines();
          writeFileSync(join(gate, `release.${i}`), '');
          return lines;
        };
        const during1 = await held(0);
        const token = readFileSync(`${out}.token`, 'utf8');
        assert.match(token, /^baton_/, 'the agent has its own token');
        assert.ok(
          during1.some((line) => line.includes('receive-pack')),
          `the scan ran during the push:\n${during1.join('\n')}`,
        );
        assert.deepEqual(
          during1.filter((line) => line.includes(token)),
          [],
          'the token is on no command line',
        );
        const during2 = await held(1);
        assert.ok(
          during2.some((line) => line.includes(token)),
          'the old way, -o baton-token=…, puts it on one: the scan would have seen it',
        );
        await waitUntil(() => existsSync(`${out}.push2.code`), 60_000, 'the agent to push twice').catch(
          (error: unknown) => {
            throw new Error(`${String(error)}\n${seen()}`);
          },
        );
        const session = readFileSync(`${out}.session`, 'utf8');
        const ref = `refs/heads/${branchForKey(KEY)}`;
        const push1 = readFileSync(`${out}.push1`, 'utf8');
        assert.equal(readFileSync(`${out}.push1.code`, 'utf8').trim(), '0', seen());
        assert.match(
          push1,
          new RegExp(
            `push to ${ref} allowed: claim on \\S+ at epoch 1 \\(push options\\) is current, held by session ${session} `,
          ),
        );
        assert.equal(readFileSync(`${out}.push2.code`, 'utf8').trim(), '0', `-o still opens:\n${seen()}`);
        assert.equal(git(remote, 'show', `${ref}:b.txt`), 'b');
      } finally {
        await c.close();
      }
    });
  });
}

/**
 * The ledger key and anchors through the CLI: `baton ledger init` writes a private key only its
 * owner can read and registers the public half, once; `baton audit anchor` copies the newest
 * checkpoint to a file and to a git note, and `verify --anchor` checks the database against it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bothEngines } from '../support/databases.js';
import { cliOn, repoRoot } from '../support/cli.js';
import { git, isolateGit, makeRepo } from '../support/git.js';

const home = isolateGit();

interface Init {
  readonly keyId: string;
  readonly publicKey: string;
  readonly keyFile: string;
  readonly created: boolean;
  readonly registered: boolean;
}

for (const engine of bothEngines()) {
  void describe(`ledger key and anchors on ${engine.name}`, () => {
    test('makes the key once: a 0600 private key file, the public key registered and printed', async () => {
      const cli = cliOn(await engine.fresh());
      const dir = mkdtempSync(join(tmpdir(), 'baton-key-'));
      const file = join(dir, 'keys', 'ledger.key');
      const first = await cli.json<Init>(0, 'ledger', 'init', '--key-file', file);
      assert.deepEqual([first.created, first.registered, first.keyFile], [true, true, file]);
      assert.match(first.publicKey, /^ed25519:[A-Za-z0-9+/]{43}=$/);
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.equal(statSync(join(dir, 'keys')).mode & 0o777, 0o700);
      assert.match(readFileSync(file, 'utf8'), /BEGIN PRIVATE KEY/);
      const again = await cli.json<Init>(0, 'ledger', 'init', '--key-file', file);
      assert.deepEqual([again.keyId, again.created, again.registered], [first.keyId, false, false]);
      const other = join(dir, 'other.key');
      const refused = await cli.run('ledger', 'init', '--key-file', other);
      assert.equal(refused.code, 3);
      assert.match(refused.stderr, /already has a key/);
      const rotated = await cli.json<Init>(0, 'ledger', 'init', '--key-file', other, '--rotate');
      assert.equal(rotated.registered, true);
      const keys = await cli.json<{ keys: { id: string; publicKey: string }[] }>(
        0,
        'ledger',
        'key',
        '--key-file',
        file,
      );
      assert.deepEqual(keys.keys.map((k) => k.id).sort(), [first.keyId, rotated.keyId].sort());
      const types = (await cli.json<{ type: string }[]>(0, 'audit', '--type', 'ledger:key-added')).length;
      assert.equal(types, 2);
    });

    test('anchors the newest checkpoint in a file and a git note; verify checks the database against it', async () => {
      const cli = cliOn(await engine.fresh());
      const dir = mkdtempSync(join(tmpdir(), 'baton-anchor-'));
      const key = join(dir, 'ledger.key');
      await cli.json(0, 'ledger', 'init', '--key-file', key);
      await cli.json(0, 'task', 'add', 'anchored');
      const sealed = await cli.json<{ checkpoints: number; sealedThrough: number }>(
        0,
        'audit',
        'seal',
        '--key-file',
        key,
      );
      assert.equal(sealed.checkpoints, 1);
      const { repo } = makeRepo(home);
      const file = join(dir, 'anchors.jsonl');
      const anchor = await cli.json<{ seq: number; hash: string }>(
        0,
        'audit',
        'anchor',
        '--out',
        file,
        '--git',
        repo,
      );
      assert.equal(anchor.seq, 1);
      const note = JSON.parse(git(repo, 'notes', '--ref=baton-ledger', 'show', 'HEAD')) as { hash: string };
      assert.equal(note.hash, anchor.hash);
      assert.equal(readFileSync(file, 'utf8').trim(), JSON.stringify(anchor));
      const ok = await cli.json<{ ok: boolean; anchorsChecked: number; keys: string }>(
        0,
        'audit',
        'verify',
        '--anchor',
        file,
      );
      assert.deepEqual([ok.ok, ok.anchorsChecked, ok.keys], [true, 1, 'pinned']);
      const nothing = await cli.run('audit', 'anchor');
      assert.equal(nothing.code, 0);
    });

    test('audit anchor --git refuses a missing directory, a non-repository, no commit, no committer: exit 2, nothing anchored', async () => {
      const cli = cliOn(await engine.fresh());
      const dir = mkdtempSync(join(tmpdir(), 'baton-anchor-git-'));
      const key = join(dir, 'ledger.key');
      await cli.json(0, 'ledger', 'init', '--key-file', key);
      await cli.json(0, 'audit', 'seal', '--key-file', key);
      const bare = join(dir, 'no-commit');
      git(dir, 'init', '--quiet', bare);
      // No user.email and no guessing from the host name (root or cron with an empty HOME).
      const nobody = makeRepo(dir).repo;
      git(nobody, 'config', '--unset', 'user.email');
      git(nobody, 'config', '--unset', 'user.name');
      git(nobody, 'config', 'user.useConfigOnly', 'true');
      const out = join(dir, 'anchors.jsonl');
      for (const [repo, message] of [
        [
          join(dir, 'nonexistent'),
          /the --git repository \S+ does not exist — give the path of a git checkout/,
        ],
        [dir, /the --git repository \S+ is not a git repository/],
        [bare, /the --git repository \S+ has no commit yet/],
        [
          nobody,
          /git has no committer identity in \S+ \(fatal: .*\) — set one in that repository \(git -C \S+ config user\.email/,
        ],
      ] as const) {
        const refused = await cli.run('audit', 'anchor', '--git', repo, '--out', out);
        assert.equal(refused.code, 2, `${repo}: ${refused.stderr}`);
        assert.match(refused.stderr, new RegExp(`^baton: ${message.source}`));
        assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
        assert.doesNotMatch(
          refused.stderr,
          /"format"|git is not installed/,
          'neither the anchor nor "git missing"',
        );
      }
      assert.equal(existsSync(out), false, 'no anchor written');
      assert.equal(git(nobody, 'notes', '--ref=baton-ledger', 'list'), '');
    });

    test('an anchor file that cannot be written, or a sealer flag without a key, is refused before anything changes', async () => {
      const db = await engine.fresh();
      const cli = cliOn(db);
      const dir = mkdtempSync(join(tmpdir(), 'baton-anchor-bad-'));
      const key = join(dir, 'ledger.key');
      await cli.json(0, 'ledger', 'init', '--key-file', key);
      await cli.json(0, 'task', 'add', 'unanchored');
      writeFileSync(join(dir, 'plain'), 'a file, not a folder');
      const bad = join(dir, 'plain', 'anchors.jsonl');
      for (const args of [
        ['audit', 'seal', '--key-file', key, '--anchor', bad],
        ['audit', 'prune', '--before', '1d', '--key-file', key, '--anchor', bad],
        ['audit', 'seal', '--key-file', key, '--anchor', dir],
      ]) {
        const refused = await cli.run(...args);
        assert.equal(refused.code, 2, args.join(' '));
        assert.match(refused.stderr, /^baton: --anchor \S+ cannot be written: .+ — name a file in a folder/);
        assert.equal(refused.stderr.trim().split('\n').length, 1);
      }
      // Nothing was sealed by the refused calls: the rows are still there to seal.
      const sealed = await cli.json<{ checkpoints: number }>(0, 'audit', 'seal', '--key-file', key);
      assert.equal(sealed.checkpoints, 1);
      // `baton up`, run where no default key file is: each refusal is one line and exit 2.
      const up = (...args: string[]) =>
        spawnSync(
          process.execPath,
          [join(repoRoot(), 'bin', 'baton.js'), '--db', db, 'up', '--no-http', ...args],
          {
            cwd: dir,
            encoding: 'utf8',
            timeout: 30_000,
            killSignal: 'SIGKILL',
            env: { ...process.env, BATON_LEDGER_KEY: '', BATON_DB: '' },
          },
        );
      for (const [flags, message] of [
        [
          ['--seal-interval', '5'],
          /--seal-interval is a setting of the ledger's sealer, and there is no ledger key/,
        ],
        [['--ledger-anchor', join(dir, 'a.jsonl')], /--ledger-anchor is a setting of the ledger's sealer/],
        [
          ['--ledger-key', key, '--ledger-anchor', bad],
          /--ledger-anchor \S+ cannot be written: \S+ is not a folder/,
        ],
      ] as const) {
        const refused = up(...flags);
        assert.equal(refused.status, 2, `${flags.join(' ')}: ${refused.stderr}`);
        assert.match(refused.stderr, message);
        assert.equal(refused.stderr.trim().split('\n').length, 1);
      }
    });
  });
}

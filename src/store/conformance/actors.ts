/**
 * Issue 14, item 11: every operator action names its actor in the ledger. The adapters pass who
 * asked (`alice@box` at a terminal, `token <id>` over HTTP) and the row's detail keeps it as `by`;
 * a call that names nobody (the daemon, a pull worker) leaves the detail as it was. A revoked token
 * keeps its revoker (`revokedBy`, migration 0047), listed by `baton token list --all`.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givenSession, withFixture, type Harness } from './harness.js';

export function exerciseActors(harness: Harness): void {
  describe('who acted, in the ledger', () => {
    test('task add, enqueue, workspace add, token create and revoke and a ledger key name who asked', () =>
      withFixture(harness, async ({ store }) => {
        const session = await givenSession(store, 'box-1');
        await store.tasks.add({ key: 't1', actor: 'alice@box' });
        await store.jobs.enqueue({ key: 't1', actor: 'bob@box', by: session.id });
        // An enqueue that adds its task names the asker on both rows.
        await store.jobs.enqueue({ key: 't2', actor: 'token 0123456789ab (ci)' });
        await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir', actor: 'carol@box' });
        const { token } = await store.tokens.create({ scope: 'viewer', actor: 'dave@box' });
        await store.tokens.revoke({ id: token.id, actor: 'erin@box' });
        await store.ledger.addKey({ id: 'abcdef0123456789', publicKey: 'cHVibGlj', actor: 'frank@box' });
        const rows = await store.audit.list();
        const by = (type: string, key?: string): unknown[] =>
          rows
            .filter((entry) => entry.type === type && (key === undefined || entry.key === key))
            .map((entry) => entry.detail['by']);
        assert.deepEqual(by('task:added', 't1'), ['alice@box']);
        assert.deepEqual(by('job:enqueued', 't1'), ['bob@box']);
        assert.equal(
          rows.find((entry) => entry.type === 'job:enqueued' && entry.key === 't1')?.session,
          session.id,
        );
        assert.equal(
          rows.find((entry) => entry.type === 'job:enqueued' && entry.key === 't1')?.host,
          'box-1',
        );
        assert.deepEqual(by('task:added', 't2'), ['token 0123456789ab (ci)']);
        assert.deepEqual(by('job:enqueued', 't2'), ['token 0123456789ab (ci)']);
        assert.deepEqual(by('workspace:added'), ['carol@box']);
        assert.deepEqual(by('token:created'), ['dave@box']);
        assert.deepEqual(by('token:revoked'), ['erin@box']);
        assert.deepEqual(by('ledger:key-added'), ['frank@box']);
      }));

    test('a revoked token lists with who revoked it; a live one, and one revoked naming nobody, with null', () =>
      withFixture(harness, async ({ store }) => {
        const made = async (name: string) =>
          store.tokens.create({ scope: 'viewer', name, actor: 'dave@box' });
        const [gone, quiet, kept] = [await made('gone'), await made('quiet'), await made('kept')];
        assert.equal(gone.token.revokedBy, null);
        assert.equal(await store.tokens.revoke({ id: gone.token.id, actor: 'erin@box' }), true);
        assert.equal(await store.tokens.revoke({ id: quiet.token.id }), true); // as a runner at its run's end
        // Revoked again by another: nothing changes, its first revoker stays.
        assert.equal(await store.tokens.revoke({ id: gone.token.id, actor: 'mallory@box' }), false);
        const listed = (await store.tokens.list({ all: true }))
          .map((token) => [token.name, token.revokedAt !== null, token.revokedBy])
          .sort((one, other) => String(one[0]).localeCompare(String(other[0])));
        assert.deepEqual(listed, [
          ['gone', true, 'erin@box'],
          ['kept', false, null],
          ['quiet', true, null],
        ]);
        assert.equal((await store.tokens.get(gone.token.id))?.revokedBy, 'erin@box');
        assert.deepEqual(
          (await store.tokens.list()).map((token) => [token.name, token.revokedBy]),
          [['kept', null]],
        );
        const check = await store.tokens.verify(kept.secret);
        assert.ok(check.ok && check.token.revokedBy === null);
      }));

    test('a call that names nobody leaves the row without `by`', () =>
      withFixture(harness, async ({ store }) => {
        await store.jobs.enqueue({ key: 't1' });
        await store.workspaces.add({ name: 'w', path: '/srv/w', kind: 'dir' });
        const rows = await store.audit.list();
        assert.ok(rows.length >= 3);
        for (const row of rows) assert.equal('by' in row.detail, false, `${row.type} has no by`);
      }));
  });
}

/**
 * End-to-end tests of what a newcomer walking the README met: the wording of a job without
 * progress marks, an unknown project, an epoch never granted, and files `baton audit` cannot use.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { stopServers } from '../../test/support/cli.js';
import { describeCli } from '../../test/support/cli-suite.js';

after(stopServers);

describeCli('baton as the README walks it', ({ setup }) => {
  test('shows a job without progress marks as none reported', async () => {
    const t = await setup();
    const s = await t.session('--kind', 'agent');
    await t.json(0, 'enqueue', 'quick', '--command', 'true');
    const job = await t.json<{ id: number; epoch: number }>(0, 'job', 'next', '--session', s);
    const running = await t.run('job', 'show', String(job.id));
    assert.equal(running.code, 0, running.stderr);
    assert.match(running.stdout, /^ {2}progress: none reported$/m);
    assert.doesNotMatch(running.stdout, /no marks|last progress/);
    await t.json(0, 'job', 'finish', String(job.id), '--session', s, '--epoch', String(job.epoch));
    const done = await t.run('job', 'show', String(job.id));
    assert.match(done.stdout, /: done\n[\s\S]* {2}progress: none reported\n$/);
  });
});

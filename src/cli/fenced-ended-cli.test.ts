/**
 * `baton escalate` and `baton effect` from a session that has ended say so, as `baton release`
 * does: they said only that the claim was not current, so an agent could not tell a lost claim
 * (claim again) from a session that is gone (start a new one). Exit 3, one line, `sessionEnded`
 * in --json, over the database and over HTTP.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bothEngines } from '../../test/support/databases.js';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';

after(stopServers);

const ENDED =
  /^baton: the claim on k at epoch 1 is not current: its session has ended, and no one holds k now/;
const HINT = / — stop working on it; start a new session to claim it again if you still need it$/;

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: fenced after the session ended, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('escalate and effect say the session ended, exit 3 and change nothing', async () => {
        const cli = cliOn(await db.fresh(), mode);
        const session = await cli.session();
        await cli.json(0, 'task', 'add', 'k');
        await cli.json(0, 'claim', 'k', '--session', session);
        await cli.json(0, 'session', 'end', session);
        const under = ['--session', session, '--epoch', '1'];
        const steps = [
          ['escalate', 'k', '--reason', 'stuck', ...under],
          ['effect', 'k', '--kind', 'file-write', ...under],
        ];
        for (const step of steps) {
          const refused = await cli.run(...step);
          assert.equal(refused.code, 3, `${step[0]}: ${refused.stdout}${refused.stderr}`);
          const line = refused.stderr.trim();
          assert.match(line, ENDED, step[0]);
          assert.match(line, HINT, step[0]);
          const json = await cli.json(3, ...step);
          assert.deepEqual([json['error'], json['sessionEnded']], ['fenced', true], step[0]);
        }
        const task = await cli.json<{ task: { state: string } }>(0, 'task', 'show', 'k');
        assert.equal(task.task.state, 'open', 'nothing was escalated');
      });
    });
  }

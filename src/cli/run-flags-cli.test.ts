/**
 * Inside a run (BATON_SESSION, BATON_KEY and BATON_EPOCH set, as `baton up` sets them), `baton
 * effect`, `escalate`, `release` and `heartbeat` take the session, the key and the epoch from the
 * run (decision 0051, session 21): with --db and over HTTP with a run's own token (made as the
 * runner makes it: a job attempt, its claim, TokenRun), on both engines. A flag given wins; the
 * run's epoch is never taken for another task or session; a malformed variable is refused as a
 * malformed flag is, naming it; outside a run a missing part is refused as before.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { batonBare, servedApi, stopServers } from '../../test/support/cli.js';
import { bothEngines } from '../../test/support/databases.js';
import { openStore } from '../store/open.js';
import { mintRunToken } from '../../test/support/run-token.js';

after(stopServers);

/** A runner's job on `k`, its agent session's claim, and that run's token, as `baton up` makes them. */
async function aRun(file: string) {
  const store = await openStore(file, { intent: 'use' });
  try {
    await store.tasks.add({ key: 'k2', title: 'another task' });
    const { agent, claim, made } = await mintRunToken(store);
    return { session: String(agent.id), epoch: String(claim.epoch), token: made.secret };
  } finally {
    await store.close();
  }
}

async function effectsOn(file: string, key: string) {
  const store = await openStore(file, { intent: 'use' });
  try {
    return (await store.effects.list({ key })).map((e) => [e.kind, e.session, e.epoch]);
  } finally {
    await store.close();
  }
}

for (const db of bothEngines())
  for (const mode of ['db', 'api'] as const) {
    describe(`${db.name}: an agent's flags from its run, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('effect, heartbeat, release and escalate need no flags; a given flag wins', async () => {
        const file = await db.fresh();
        const { session, epoch, token } = await aRun(file);
        const reach =
          mode === 'db' ? { BATON_DB: file } : { BATON_URL: (await servedApi(file)).url, BATON_TOKEN: token };
        const env = { ...reach, BATON_SESSION: session, BATON_KEY: 'k', BATON_EPOCH: epoch };
        const run = (...args: string[]) => batonBare(env, ...args);

        const effect = await run(
          'effect',
          '--kind',
          'pr',
          '--payload',
          '{"url": "https://example.com/pr/1"}',
        );
        assert.equal(effect.code, 0, effect.stderr);
        assert.equal(effect.stdout.trim(), `recorded effect 1 on k (pr, epoch ${epoch})`);
        const beat = await run('heartbeat');
        assert.equal(
          beat.stdout.trim(),
          `session ${session} is alive and holds k at epoch ${epoch}`,
          beat.stderr,
        );
        const keyed = await run('heartbeat', '--key', 'k');
        assert.equal(keyed.stdout.trim(), `session ${session} is alive and holds k at epoch ${epoch}`);
        const alone = await run('heartbeat', session);
        assert.equal(
          alone.stdout.trim(),
          `session ${session} is alive; its claims are renewed`,
          alone.stderr,
        );

        // A flag given wins over the run's: an epoch never granted is fenced, exit 3.
        const given = await run('effect', '--kind', 'note', '--epoch', '99');
        assert.equal(given.code, 3, given.stderr);
        assert.match(given.stderr, /^baton: epoch 99 was never granted for k/);
        // The run's epoch is not another task's nor another session's: exit 2, before any request.
        for (const args of [
          ['effect', 'k2', '--kind', 'note'],
          ['escalate', 'k2', '--reason', 'not mine'],
          ['release', 'k2'],
          ['heartbeat', '--key', 'k2'],
          ['effect', '--kind', 'note', '--session', String(Number(session) + 1)],
        ]) {
          const refused = await run(...args);
          assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
          assert.match(
            refused.stderr,
            new RegExp(
              `^baton: BATON_EPOCH \\(${epoch}\\) is the epoch of this run's claim on k ` +
                `by session ${session}, not of .* pass --epoch`,
            ),
          );
        }
        // A malformed variable gets a malformed flag's line, naming the variable.
        const badEpoch = await batonBare({ ...env, BATON_EPOCH: 'abc' }, 'effect', '--kind', 'note');
        assert.equal(badEpoch.code, 2);
        assert.equal(
          badEpoch.stderr.trim(),
          'baton: BATON_EPOCH must be a whole number, got "abc" — give a whole number from 1 to 9007199254740991',
        );
        const badSession = await batonBare({ ...env, BATON_SESSION: 'x' }, 'heartbeat');
        assert.equal(badSession.code, 2);
        assert.match(badSession.stderr, /^baton: BATON_SESSION must be a whole number, got "x"/);
        assert.deepEqual(
          await effectsOn(file, 'k'),
          [['pr', Number(session), Number(epoch)]],
          'nothing else recorded',
        );
        assert.deepEqual(await effectsOn(file, 'k2'), []);

        const done = await run('release', '--outcome', 'done');
        assert.equal(done.code, 0, done.stderr);
        assert.match(done.stdout, /^nothing released: baton up's runner holds k for this run/);
        const escalated = await run('escalate', '--reason', 'needs a vault key', '--json');
        assert.equal(escalated.code, 0, escalated.stderr);
        const task = JSON.parse(escalated.stdout) as Record<string, unknown>;
        assert.deepEqual([task['state'], task['endedClaimEpoch']], ['escalated', Number(epoch)]);
      });
    });
  }

for (const db of bothEngines())
  describe(`${db.name}: outside a run, a missing part is refused as before`, () => {
    test('exit 2, one line naming the flag or argument and the variable', async () => {
      const file = await db.fresh();
      const bare = (...args: string[]) => batonBare({ BATON_DB: file }, ...args);
      const cases: [string[], RegExp][] = [
        [
          ['effect', 'k', '--kind', 'x'],
          /^baton: required option '--session <id>' not specified — give --session, or set BATON_SESSION/,
        ],
        [
          ['effect', '--kind', 'x', '--session', '1', '--epoch', '1'],
          /^baton: missing required argument 'key' — give the task key, or set BATON_KEY/,
        ],
        [
          ['release', 'k', '--session', '1'],
          /^baton: required option '--epoch <n>' not specified — give --epoch, or set BATON_EPOCH/,
        ],
        [
          ['heartbeat'],
          /^baton: missing required argument 'session-id' — give the session id, or set BATON_SESSION/,
        ],
        [['escalate', '--reason', 'r'], /^baton: missing required argument 'key'/],
      ];
      for (const [args, line] of cases) {
        const refused = await bare(...args);
        assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
        assert.match(refused.stderr, line);
        assert.equal(refused.stderr.trim().split('\n').length, 1, 'one line');
      }
    });
  });

for (const db of bothEngines())
  describe(`${db.name}: over raw HTTP, only a run's own token has its release done kept for the runner`, () => {
    test("an operator's token, and an agent token made without a run, release done as before", async () => {
      for (const who of ['operator', 'plain agent'] as const) {
        const file = await db.fresh();
        const { session, epoch, token } = await aRun(file);
        const served = await servedApi(file);
        const bearer = who === 'operator' ? served.token : await plainAgentToken(file, Number(session));
        assert.notEqual(bearer, token);
        const response = await fetch(`${served.url}/v1/claims/k/release`, {
          method: 'POST',
          headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
          body: JSON.stringify({ session: Number(session), epoch: Number(epoch), outcome: 'done' }),
        });
        const body = (await response.json()) as Record<string, unknown>;
        assert.equal(response.status, 200, JSON.stringify(body));
        assert.deepEqual(
          body,
          { key: 'k', session: Number(session), epoch: Number(epoch), outcome: 'done' },
          who,
        );
        const store = await openStore(file, { intent: 'use' });
        try {
          assert.equal((await store.tasks.get('k'))?.state, 'done', who);
          assert.equal(await store.claims.current('k'), null, who);
        } finally {
          await store.close();
        }
      }
    });
  });

/** An agent token bound to the session but to no run (`baton token create --scope agent --session S`). */
async function plainAgentToken(file: string, session: number): Promise<string> {
  const store = await openStore(file, { intent: 'use' });
  try {
    return (await store.tokens.create({ scope: 'agent', session })).secret;
  } finally {
    await store.close();
  }
}

/**
 * The task lifecycle through the real `baton` command on both engines: the contract outside
 * tests rely on (`task show --json` has `state`; a done or closed task exits 3 with task_done or
 * task_closed; `next --json` prints {key, title, epoch} or null with exit 4; `session start
 * --kind human --ttl 8h`), escalations, gates, review, the vague-issue setting and `task show`.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cliModes, cliOn, stopServers } from '../../test/support/cli.js';
import { bothEngines } from '../../test/support/databases.js';

type Obj = Record<string, unknown>;

after(stopServers);

for (const db of bothEngines())
  for (const mode of cliModes(db.engine)) {
    describe(`${db.name}: the task lifecycle on the command line, ${mode === 'db' ? 'with --db' : 'over HTTP'}`, () => {
      test('review and escalation actions on an open task refuse with what was meant, changing nothing', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'k', '--title', 'fix the login race');
        const cases: [string[], RegExp][] = [
          [
            ['approve', 'k', '--gate', 'review'],
            /cannot approve it — it is not in review .*`baton close k --done`$/,
          ],
          [
            ['reject', 'k', '--reason', 'no'],
            /cannot reject it — .*nothing to reject.*`baton close k --reason R`$/,
          ],
          [['resolve', 'k'], /cannot resolve it — it is not escalated.*`baton escalate k --reason R`/],
          [['reopen', 'k', '--reason', 'again'], /cannot reopen it — it is open already$/],
        ];
        for (const [args, line] of cases) {
          const r = await t.run(...args);
          assert.equal(r.code, 3, args.join(' '));
          assert.deepEqual(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
          assert.match(r.stderr.trimEnd(), line);
        }
        const show = await t.json<{ history: Obj[] } & Obj>(0, 'task', 'show', 'k');
        assert.equal(show['state'], 'open');
        assert.deepEqual(show.history, []);
      });

      test('a done task refuses claims and jobs (exit 3, task_done) until reopened; closed: task_closed', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'k', '--title', 'fix the login race');
        const s = await t.session();
        await t.json(0, 'claim', 'k', '--session', s);
        await t.json(0, 'release', 'k', '--session', s, '--epoch', '1', '--outcome', 'done');
        assert.equal((await t.json(0, 'task', 'show', 'k'))['state'], 'done');
        const claim = await t.json(3, 'claim', 'k', '--session', s);
        assert.equal(claim['error'], 'task_done');
        assert.equal(claim['code'], 'task_done');
        assert.equal(claim['by'], `session ${s}`);
        assert.match(String(claim['hint']), /baton reopen k --reason/);
        const plain = await t.run('enqueue', 'k');
        assert.equal(plain.code, 3);
        assert.match(
          plain.stderr,
          /^baton: task k is done since \d{4}-.*Z by session \d+: cannot enqueue it — reopen/,
        );
        assert.equal((await t.json(3, 'enqueue', 'k'))['error'], 'task_done');
        assert.equal((await t.run('reopen', 'k')).code, 2, '--reason is required');
        assert.equal((await t.json(0, 'reopen', 'k', '--reason', 'regressed'))['state'], 'open');
        assert.equal((await t.json(0, 'claim', 'k', '--session', s))['epoch'], 2);
        await t.json(0, 'close', 'k', '--reason', "won't do");
        assert.equal((await t.json(3, 'enqueue', 'k'))['error'], 'task_closed');
        assert.equal((await t.json(3, 'claim', 'k', '--session', await t.session()))['error'], 'task_closed');
        const listed = await t.json<Obj[]>(0, 'task', 'list', '--state', 'closed');
        assert.deepEqual(
          listed.map((x) => x['key']),
          ['k'],
        );
        assert.equal((await t.run('task', 'list', '--state', 'finished')).code, 2);
        const show = await t.json<{ history: Obj[] } & Obj>(0, 'task', 'show', 'k');
        assert.deepEqual(
          show.history.map((e) => [e['from'], e['to'], e['action']]),
          [
            ['open', 'done', 'finish'],
            ['done', 'open', 'reopen'],
            ['open', 'closed', 'close'],
          ],
        );
      });

      test('close (also --done) ends the holder claim: its heartbeat, effect and release are fenced', async () => {
        const t = cliOn(await db.fresh(), mode);
        for (const [key, close] of [
          ['w', ['--reason', 'wont do']],
          ['d', ['--done']],
        ] as const) {
          await t.json(0, 'task', 'add', key, '--title', 'fix the login race');
          const s = await t.session();
          const epoch = String((await t.json(0, 'claim', key, '--session', s))['epoch']);
          await t.json(0, 'close', key, ...close);
          assert.doesNotMatch((await t.run('task', 'show', key)).stdout, /claimed by/);
          for (const args of [
            ['heartbeat', s, '--key', key, '--epoch', epoch],
            ['effect', key, '--session', s, '--epoch', epoch, '--kind', 'pr-push'],
            ['release', key, '--session', s, '--epoch', epoch, '--outcome', 'done'],
          ]) {
            const r = await t.run(...args);
            assert.equal(r.code, 3, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
            assert.match(r.stderr, new RegExp(`the claim on ${key} at epoch ${epoch} is not current`));
            // Not "claim it again": a claim of a closed or done task is refused.
            assert.match(
              r.stderr,
              new RegExp(`baton task show ${key}\` says why \\(a closed or done task is reopened`),
            );
          }
          const again = await t.run('close', key, ...close);
          assert.equal(again.code, 3, again.stderr);
          assert.match(again.stderr, / — it is (closed|done) already$/m);
        }
      });

      test('--session naming no session (exit 4) or an ended one (exit 3) is refused, writing nothing', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'k', '--title', 'fix the login race');
        await t.json(0, 'task', 'add', 'c', '--title', 'closed already');
        await t.json(0, 'close', 'c');
        const job = String((await t.json<{ job: Obj }>(0, 'enqueue', 'k')).job['id']);
        const ended = await t.session();
        await t.json(0, 'session', 'end', ended);
        const ledger = async () => (await t.json<Obj[]>(0, 'audit')).length;
        const before = await ledger();
        const actions = [
          ['gate', 'k', 'design'],
          ['close', 'k', '--reason', 'no'],
          ['reopen', 'c', '--reason', 'again'],
          ['cancel', job],
          // Several ids, one unknown: the session is judged once, for them all, and said once.
          ['cancel', job, '9999'],
          ['host', 'disable', 'h1'],
          ['task', 'depend', 'k', '--on', 'c'],
          ['job', 'prune', '--older-than', '30d'],
        ];
        for (const args of actions) {
          if (mode !== 'db' && ['cancel', 'host', 'job'].includes(args[0] ?? '')) {
            // Their routes take no session: over --api the token acts, and --session is refused.
            const r = await t.run(...args, '--session', '99');
            assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
            assert.match(
              r.stderr,
              /^baton: [^\n]*--session is not sent over --api: the token is who acts there — [^\n]*\n$/,
            );
            continue;
          }
          const unknown = await t.run(...args, '--session', '99');
          assert.equal(unknown.code, 4, `${args.join(' ')}: ${unknown.stderr}`);
          assert.match(
            unknown.stderr,
            /^baton: session 99 not found — start one with `baton session start`\n$/,
          );
          const gone = await t.run(...args, '--session', ended);
          assert.equal(gone.code, 3, `${args.join(' ')}: ${gone.stderr}`);
          assert.match(
            gone.stderr,
            new RegExp(`^baton: session ${ended} is ended: it cannot act any more[^\n]*\n$`),
          );
        }
        assert.equal(await ledger(), before, 'nothing written');
        // A live session is taken, and named on the row.
        const live = await t.session();
        await t.json(0, 'gate', 'k', 'design', '--session', live);
        const rows = await t.json<Obj[]>(0, 'audit');
        assert.deepEqual([rows.at(-1)?.['type'], String(rows.at(-1)?.['session'])], ['task:gated', live]);
      });

      test('next hands out the most urgent free task as {key, title, epoch}, or null with exit 4', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'low', '--title', 'later', '--priority', '50');
        await t.json(
          0,
          'task',
          'add',
          'high',
          '--title',
          'now',
          '--priority',
          '5',
          '--url',
          'https://x.test/1',
        );
        await t.json(0, 'task', 'add', 'designed', '--title', 'gated', '--priority', '1');
        await t.json(0, 'gate', 'designed', 'design');
        const gatedKeys = async () =>
          (await t.json<Obj[]>(0, 'task', 'list', '--gated')).map((x) => x['key']);
        assert.deepEqual(await gatedKeys(), ['designed'], 'task list --gated: only the task behind a gate');
        const human = (await t.run('session', 'start', '--kind', 'human', '--ttl', '8h')).stdout.trim();
        const session = await t.json(0, 'session', 'list');
        assert.equal((session as unknown as Obj[])[0]?.['ttlMs'], 8 * 3600 * 1000);
        // --kind and --ttl shape the session `next` starts: with --session they are refused, valid or
        // not, and without it a bad one is; nothing is claimed either way (high is still claimed below).
        const refusals = [
          ['--session', human, '--ttl', 'abc', '--kind', 'bogus'],
          ['--session', human, '--ttl', '1h', '--kind', 'agent'],
        ];
        for (const extra of refusals) {
          const refused = await t.run('next', ...extra);
          assert.equal(refused.code, 2, refused.stderr);
          assert.equal(refused.stderr.trimEnd().split('\n').length, 1, refused.stderr);
        }
        const useless = await t.run('next', '--session', human, '--ttl', '1h');
        assert.match(
          useless.stderr,
          /^baton: a session was given, so kind and ttl \(which describe the session `next`/,
        );
        assert.equal((await t.run('next', '--ttl', 'abc')).code, 2);
        assert.equal((await t.run('next', '--kind', 'bogus')).code, 2);
        assert.deepEqual(await t.json(0, 'next', '--session', human), {
          key: 'high',
          title: 'now',
          epoch: 1,
          url: 'https://x.test/1',
        });
        assert.deepEqual(await t.json(0, 'next', '--session', human), {
          key: 'low',
          title: 'later',
          epoch: 1,
        });
        const none = await t.run('next', '--session', human, '--json');
        assert.equal(none.code, 4);
        assert.equal(none.stdout.trim(), 'null');
        const plain = await t.run('next', '--session', human);
        assert.equal(plain.code, 4);
        assert.match(plain.stderr, /designed: waiting for design approval/);
        // With no --session, the session started for the call ends with it when nothing was found.
        const fruitless = await t.run('next');
        assert.equal(fruitless.code, 4);
        assert.equal(fruitless.stderr.trim().split('\n').length, 1);
        assert.match(fruitless.stderr, /^baton: no eligible task: nothing open is free — designed: waiting/);
        const live = (await t.json<Obj[]>(0, 'session', 'list', '--live')).map((s) => String(s['id']));
        assert.deepEqual(live, [human], 'no session is left live by a next that found nothing');
        await t.json(0, 'approve', 'designed', '--gate', 'design', '--note', 'plan is fine');
        assert.deepEqual(await gatedKeys(), [], 'an opened gate is no gate');
        const started = await t.json(0, 'next');
        assert.equal(started['key'], 'designed');
        assert.equal(typeof started['session'], 'number', 'a human session was started for the caller');
        assert.equal((await t.run('session', 'start', '--kind', 'human', '--ttl', 'forever')).code, 2);
      });

      test('an escalation under a stale epoch exits 3; the live one queues the task until resolved', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'e');
        const s = await t.session();
        await t.json(0, 'claim', 'e', '--session', s);
        const stale = await t.json(3, 'escalate', 'e', '--reason', 'stuck', '--session', s, '--epoch', '7');
        assert.equal(stale['error'], 'fenced');
        assert.equal((await t.run('escalate', 'e', '--reason', 'x', '--session', s)).code, 2);
        const done = await t.json(
          0,
          'escalate',
          'e',
          '--reason',
          'needs credentials',
          '--session',
          s,
          '--epoch',
          '1',
        );
        assert.equal(done['state'], 'escalated');
        const queue = await t.json<Obj[]>(0, 'escalations');
        assert.deepEqual(
          queue.map((x) => [x['key'], x['stateReason']]),
          [['e', 'needs credentials']],
        );
        assert.equal((await t.json(3, 'enqueue', 'e'))['error'], 'task_escalated');
        assert.equal((await t.json(0, 'resolve', 'e', '--note', 'added them'))['state'], 'open');
        assert.deepEqual(await t.json(0, 'escalations'), []);
      });

      test('review required: reject keeps the reason, approve --gate review finishes; PRs are shown', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'r', '--review', 'required');
        await t.json(0, 'enqueue', 'r');
        const s = await t.session();
        const job = await t.json(0, 'job', 'next', '--session', s);
        await t.json(0, 'job', 'finish', String(job['id']), '--session', s, '--epoch', String(job['epoch']));
        const finished = await t.json<{ history: Obj[] } & Obj>(0, 'task', 'show', 'r');
        assert.equal(finished['state'], 'in_review');
        const glance = await t.run('status');
        assert.equal(glance.code, 0, glance.stderr);
        assert.match(
          glance.stdout,
          /^inbox +1 in review \(oldest [\d.]+ (ms|s)\) — `baton task list --state in_review`, the dashboard's Inbox$/m,
        );
        assert.match(glance.stdout, /^jobs +0 running, 0 claimed, 0 queued \(0 waiting\); ended: 1 done/m);
        assert.match(glance.stdout, /^claims +none live$/m);
        // The job's finish row records the move (decision 0023); the history shows it as a state change.
        assert.deepEqual(
          finished.history.map((e) => [e['type'], e['from'], e['to'], e['action'], e['by'], e['session']]),
          [['task:state', 'open', 'in_review', 'finish', `job ${String(job['id'])}`, Number(s)]],
        );
        assert.equal((await t.json(3, 'approve', 'r', '--gate', 'design'))['error'], 'conflict');
        assert.equal((await t.json(2, 'approve', 'r', '--gate', 'merge'))['error'], 'invalid_input');
        const rejected = await t.json(0, 'reject', 'r', '--reason', 'needs a test');
        assert.deepEqual([rejected['state'], rejected['feedback']], ['open', 'needs a test']);
        const c = await t.json(0, 'claim', 'r', '--session', s);
        const pr = JSON.stringify({ url: 'https://github.com/acme/api/pull/9' });
        await t.json(
          0,
          'effect',
          'r',
          '--session',
          s,
          '--epoch',
          String(c['epoch']),
          '--kind',
          'pr',
          '--payload',
          pr,
        );
        await t.json(0, 'release', 'r', '--session', s, '--epoch', String(c['epoch']), '--outcome', 'done');
        assert.equal((await t.json(0, 'task', 'show', 'r'))['state'], 'in_review');
        assert.equal((await t.json(0, 'approve', 'r', '--gate', 'review'))['state'], 'done');
        const show = await t.run('task', 'show', 'r');
        assert.match(show.stdout, /pull requests:\n {4}https:\/\/github.com\/acme\/api\/pull\/9/);
        assert.match(show.stdout, /in_review → open \(reject\) by .*: needs a test/);
        const after = await t.json<{ inbox: Obj }>(0, 'status');
        assert.deepEqual(after.inbox, {
          escalated: 0,
          oldestEscalatedAgeMs: null,
          review: 0,
          gated: 0,
          oldestReviewAgeMs: null,
        });
        assert.match((await t.run('status')).stdout, /^inbox +nothing waits for a person$/m);
      });

      test('the vague-issue rule bounces a task with too few words to the escalation queue, once set', async () => {
        const t = cliOn(await db.fresh(), mode);
        await t.json(0, 'task', 'add', 'before', '--title', 'fix');
        assert.equal((await t.json(2, 'setting', 'set', 'vague-words', 'many'))['error'], 'invalid_input');
        assert.equal((await t.json(2, 'setting', 'set', 'colour', '3'))['error'], 'invalid_input');
        await t.json(0, 'setting', 'set', 'vague-words', '5');
        const vague = await t.json(0, 'task', 'add', 'vague', '--title', 'fix it');
        assert.deepEqual([vague['state'], vague['stateReason']], ['escalated', 'insufficient-info']);
        const clear = await t.json(
          0,
          'task',
          'add',
          'clear',
          '--title',
          'fix the login',
          '--body',
          'token expires early',
        );
        assert.equal(clear['state'], 'open');
        assert.deepEqual(
          (await t.json<Obj[]>(0, 'escalations')).map((x) => x['key']),
          ['vague'],
        );
        assert.equal((await t.json<Obj[]>(0, 'setting', 'list'))[0]?.['value'], '5');
      });
    });
  }

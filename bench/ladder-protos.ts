/**
 * The prototypes of the throughput ladder (ladder.ts): queues reduced to what a fenced, audited
 * batch needs at its barest, each rung adding one part of what Baton's schema carries, so that the
 * cost of each part is measured against Graphile Worker's best configuration on the same server.
 * Each prototype drains its queue as Baton's drain does (bench/drain-loop.ts): two loops, each
 * one statement per batch that finishes the last batch under its epochs and leases and takes the
 * next 500 (FOR UPDATE SKIP LOCKED) if its session is live, with ledger rows for every transition,
 * one commit per batch.
 */
import pg from 'pg';
import { readyForDrain, withClient } from './pg-server.js';
import { nowMs } from './stats.js';

export interface Proto {
  readonly name: string;
  /** In words, for the report. */
  readonly what: string;
  /** The ledger's secondary indexes, Baton's two: by task key and by session. */
  readonly ledgerIndexes: boolean;
  /** Each finish also moves its task's state, as Baton's does. */
  readonly taskUpdate: boolean;
  /** The rest of Baton's indexes on jobs: one active job per task, by task, by host, leases. */
  readonly jobIndexes: boolean;
  /** A foreign key from jobs to a sessions table, checked on every claim. */
  readonly sessionKey: boolean;
}

const rung = (name: string, what: string, parts: Omit<Proto, 'name' | 'what'>): Proto => ({
  name,
  what,
  ...parts,
});

const BARE = { ledgerIndexes: false, taskUpdate: false, jobIndexes: false, sessionKey: false };

/**
 * Every rung writes one ledger row per transition, as Baton does since decision 0023 (a claim
 * that starts its job, a finish that moves its task); each adds one part of Baton's data model
 * to the one before it, so the last (K) is Baton's data model under the barest statement.
 */
export const PROTOS: readonly Proto[] = [
  rung('A', 'one ledger row per transition, ledger without secondary indexes', BARE),
  rung('B', 'A, with the ledger indexes by key and by session', { ...BARE, ledgerIndexes: true }),
  rung('T', 'B, and each finish moves its task', { ...BARE, ledgerIndexes: true, taskUpdate: true }),
  rung('J', "T, and Baton's other indexes on jobs", {
    ledgerIndexes: true,
    taskUpdate: true,
    jobIndexes: true,
    sessionKey: false,
  }),
  rung('K', 'J, and the jobs → sessions foreign key', {
    ledgerIndexes: true,
    taskUpdate: true,
    jobIndexes: true,
    sessionKey: true,
  }),
];

const ACTIVE = `status IN ('claimed', 'running')`;

function schema(proto: Proto, items: number): string {
  return `
CREATE TABLE tasks (id bigserial PRIMARY KEY, key text UNIQUE NOT NULL, state text NOT NULL DEFAULT 'open',
  state_at timestamptz);
CREATE TABLE sessions (id bigserial PRIMARY KEY, host text NOT NULL, state text NOT NULL DEFAULT 'live');
INSERT INTO sessions (host) SELECT 'bench' FROM generate_series(1, 8);
CREATE TABLE jobs (id bigserial PRIMARY KEY, task_id bigint NOT NULL REFERENCES tasks (id),
  status text NOT NULL DEFAULT 'queued', epoch int NOT NULL DEFAULT 0, session_id bigint,
  host text COLLATE "C", priority int NOT NULL DEFAULT 0, queued_at timestamptz NOT NULL DEFAULT now(),
  claimed_at timestamptz, finished_at timestamptz, lease_until timestamptz);
CREATE INDEX jobs_queue ON jobs (priority DESC, id) WHERE status = 'queued';
CREATE INDEX jobs_active ON jobs (session_id) WHERE ${ACTIVE};
CREATE TABLE ledger (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), type text NOT NULL,
  task_key text, job_id bigint, session_id bigint, epoch int, detail jsonb NOT NULL DEFAULT '{}');
${proto.ledgerIndexes ? 'CREATE INDEX ledger_by_key ON ledger (task_key, id);' : ''}
${proto.ledgerIndexes ? 'CREATE INDEX ledger_by_session ON ledger (session_id, id);' : ''}
${proto.jobIndexes ? `CREATE UNIQUE INDEX jobs_one_active ON jobs (task_id) WHERE ${ACTIVE};` : ''}
${proto.jobIndexes ? 'CREATE INDEX jobs_by_task ON jobs (task_id, id);' : ''}
${proto.jobIndexes ? `CREATE INDEX jobs_by_host ON jobs (host) WHERE ${ACTIVE};` : ''}
${proto.jobIndexes ? `CREATE INDEX jobs_leased ON jobs (lease_until) WHERE ${ACTIVE};` : ''}
${proto.sessionKey ? 'ALTER TABLE jobs ADD FOREIGN KEY (session_id) REFERENCES sessions (id);' : ''}
INSERT INTO tasks (key) SELECT 'bench-' || lpad(g::text, 7, '0') FROM generate_series(1, ${items}) g;
INSERT INTO jobs (task_id) SELECT id FROM tasks ORDER BY id;`;
}

/** The ledger rows of one step's jobs (`source` has id, epoch, task_id): one per job. */
function ledgerRows(source: string, type: string): string {
  return `SELECT '${type}', k.key, s.id, $4::bigint, s.epoch, jsonb_build_object('epoch', s.epoch)
    FROM ${source} s JOIN tasks k ON k.id = s.task_id`;
}

/**
 * $1 ids and $2 epochs to finish, $3 how many to take, $4 the session, which must be live to take
 * (its row locked FOR KEY SHARE, as Baton's batch does).
 */
function batchSql(proto: Proto): string {
  return `WITH s AS (
  SELECT id FROM sessions WHERE id = $4 AND state = 'live' FOR KEY SHARE
), f AS (
  UPDATE jobs j SET status = 'done', finished_at = now()
  FROM unnest($1::bigint[], $2::int[]) AS m (id, epoch)
  WHERE j.id = m.id AND j.epoch = m.epoch AND j.session_id = $4 AND j.status = 'running'
    AND j.lease_until > now()
  RETURNING j.id, j.epoch, j.task_id
), ft AS (
  ${
    proto.taskUpdate
      ? `UPDATE tasks t SET state = 'done', state_at = now() FROM f WHERE t.id = f.task_id RETURNING t.id`
      : 'SELECT 1 AS id WHERE false'
  }
), n AS (
  SELECT id FROM jobs WHERE status = 'queued' AND EXISTS (SELECT 1 FROM s)
  ORDER BY priority DESC, id LIMIT $3 FOR UPDATE SKIP LOCKED
), t AS (
  UPDATE jobs j SET status = 'running', epoch = j.epoch + 1, session_id = $4, host = 'bench',
    claimed_at = now(), lease_until = now() + interval '5 minutes'
  FROM n WHERE j.id = n.id
  RETURNING j.id, j.epoch, j.task_id
), a AS (
  INSERT INTO ledger (type, task_key, job_id, session_id, epoch, detail)
  ${ledgerRows('f', 'job:finished')}
  UNION ALL
  ${ledgerRows('t', 'job:claimed')}
)
SELECT (SELECT count(*) FROM f)::int AS finished, (SELECT count(*) FROM ft)::int AS tasks, t.id, t.epoch
FROM (SELECT 1) one LEFT JOIN t ON true`;
}

/** Creates the prototype's schema and fills its queue with `items` jobs, then readies it. */
export async function seedProto(url: string, proto: Proto, items: number): Promise<void> {
  await withClient(url, async (client) => {
    await client.query(schema(proto, items));
    await readyForDrain(client);
  });
}

interface BatchRow {
  readonly finished: number;
  readonly id: string | null;
  readonly epoch: number | null;
}

/** Jobs per second: `loops` loops of batches of `size` on their own connections, from the first answer. */
export async function drainProto(
  url: string,
  proto: Proto,
  items: number,
  loops = 2,
  size = 500,
): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: loops });
  const sql = batchSql(proto);
  let first = Number.NaN;
  let done = 0;
  try {
    await Promise.all(
      Array.from({ length: loops }, async (_, loop) => {
        let ids: string[] = [];
        let epochs: number[] = [];
        for (;;) {
          const { rows } = await pool.query<BatchRow>(sql, [ids, epochs, size, loop + 1]);
          first = first || nowMs();
          const finished = rows[0]?.finished ?? 0;
          if (finished !== ids.length) throw new Error(`ladder: ${proto.name} lost a finish`);
          done += finished;
          const taken = rows.filter((row) => row.id !== null);
          ids = taken.map((row) => row.id ?? '');
          epochs = taken.map((row) => row.epoch ?? 0);
          if (ids.length === 0) break;
        }
      }),
    );
  } finally {
    await pool.end();
  }
  if (done !== items) throw new Error(`ladder: ${proto.name} drained ${done} of ${items}`);
  return items / ((nowMs() - first) / 1000);
}

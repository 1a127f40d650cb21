/**
 * The claim of a queued job on PostgreSQL, in one place: which jobs may be taken (their task is
 * open and ungated: jobTaskOpen, for claimNext in job-steps.ts, the take in takeQueued and
 * placement.ts) and the SET list every statement that claims one splices in (claimNext and its
 * batch in job-steps.ts, the worker loop's batch in job-loop-batch.ts, jobs.batch in
 * job-batch.ts, placement.ts): its column effects.
 */

/**
 * A task takes claims and jobs: it is open, behind no gate, and waits for no task that is not done
 * (SQL, on the tasks row named `alias`). The dependency probe is one lookup of task_deps' primary
 * key, which leads with the waiting task: with no edges it finds nothing and costs one index probe
 * (docs/decisions/0035-task-dependencies.md).
 */
export const taskOpen = (alias: string): string =>
  `${alias}.state = 'open' AND ${alias}.gate IS NULL AND ${notBlocked(alias)}`;

/** The task `alias` waits for no task that is not done (SQL): no dependency edge to an unfinished task. */
const notBlocked = (alias: string): string =>
  `NOT EXISTS (SELECT 1 FROM task_deps dep JOIN tasks dep_t ON dep_t.id = dep.depends_on
    WHERE dep.task_id = ${alias}.id AND dep_t.state <> 'done')`;

/**
 * The first dependency of task `alias` that is not done, as `key (state)` (SQL text), or null:
 * the blocker a waiting job's reason names (the oldest such task: the primary key's order, no sort).
 */
export const blockerOf = (alias: string): string =>
  `(SELECT dep_t.key || ' (' || dep_t.state || ')' FROM task_deps dep JOIN tasks dep_t ON dep_t.id = dep.depends_on
    WHERE dep.task_id = ${alias}.id AND dep_t.state <> 'done' ORDER BY dep.depends_on LIMIT 1)`;

/**
 * The task of the job row `jobs` takes jobs (taskOpen), as a scalar subquery: each job the scan
 * reaches looks its task up through tasks_pkey. Not a join nor an EXISTS: with statistics that
 * say almost every task is open, the planner turned NOT EXISTS over closed or gated tasks into an
 * anti-join that read every such task before the first job (a scan of the whole tasks table,
 * 400 ms per claim at 1M queued; 318 ms per take of 500 with 1,500 done), and a scalar subquery
 * is never turned into a join (migration 0020). A job's task always exists (foreign key).
 */
export const jobTaskOpen = (jobs: string): string =>
  `(SELECT ${taskOpen('t')} FROM tasks t WHERE t.id = ${jobs}.task_id)`;

/**
 * The due queued jobs whose task takes jobs, best first: `limit` of them, due at `due` (SQL). The
 * body of baton_take_queued (migration 0022); claim-plan.test.ts checks that the function in the
 * database is this one.
 */
export const takeQueued = (limit: string, due: string): string => `
    SELECT jobs.id FROM jobs
    WHERE jobs.status = 'queued' AND jobs.run_after <= ${due}
      AND ${jobTaskOpen('jobs')}
    ORDER BY jobs.priority, jobs.queued_at, jobs.id
    LIMIT ${limit}
    FOR UPDATE OF jobs SKIP LOCKED`;

/** SQL expressions of a claim: who takes the job, where, when, started or not, its lease. */
interface ClaimRefs {
  readonly session: string;
  readonly host: string;
  readonly now: string;
  /** A start in the same step (a boolean expression); a placement never starts (`'false'`). */
  readonly start: string;
  /** When the lease of a job taken in a batch runs out; none for a claim held by liveness alone. */
  readonly lease?: string | undefined;
  /** The dispatcher's lease term a placement is fenced by; none for a claim by the session itself. */
  readonly term?: string | undefined;
  /** The attempt the claim makes; the next one unless said (a hand-off taken back keeps its own). */
  readonly attempt?: string | undefined;
}

/**
 * The claim transition's column effects, in one place for every claim of a queued job (claimNext,
 * the worker loop's batch, jobs.batch, a placement): the epoch and attempt grow, the holder and
 * its host are set, a start in the same step stamps started_at, and the new attempt has no agent
 * session or pid yet.
 */
export const claimSet = (refs: ClaimRefs): string => {
  const started =
    refs.start === 'false'
      ? "status = 'claimed'"
      : `status = CASE WHEN ${refs.start} THEN 'running' ELSE 'claimed' END`;
  const startedAt = refs.start === 'false' ? 'NULL' : `CASE WHEN ${refs.start} THEN ${refs.now} END`;
  return `${started},
    epoch = jobs.epoch + 1, attempt = ${refs.attempt ?? 'jobs.attempt + 1'},
    session_id = ${refs.session}, host = ${refs.host}, claimed_at = ${refs.now},
    started_at = ${startedAt}, reason = NULL, term = ${refs.term ?? 'NULL'},
    lease_until = ${refs.lease ?? 'NULL'}, agent_session_id = NULL, pid = NULL`;
};

/**
 * The jobs a take's `n` (baton_take_queued's ids) names, as a condition on `jobs` the planner
 * serves by primary key: joined on `jobs.id = n.id` alone, it hashed the whole jobs table,
 * finished history included (its estimate of a set-returning function's rows is 1,000).
 */
export const TAKEN_BY_KEY = 'jobs.id = ANY (ARRAY(SELECT n.id FROM n))';

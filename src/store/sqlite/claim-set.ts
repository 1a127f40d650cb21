/**
 * The claim of a queued job on SQLite, in one place: which jobs may be taken (their task is open
 * and ungated: jobTaskOpen, for claimDue in job-steps.ts and a placement in dispatch.ts) and the
 * SET list both splice in, as on PostgreSQL (postgres/claim-set.ts).
 */

/**
 * A task takes claims and jobs: it is open, behind no gate, and waits for no task that is not done
 * (SQL, on the tasks row named `alias`). The dependency probe is one lookup of task_deps' primary
 * key, which leads with the waiting task: with no edges it finds nothing and costs one index probe
 * (docs/decisions/0035-task-dependencies.md).
 */
export const taskOpen = (alias: string): string =>
  `${OPEN(alias)} AND ${alias}.gate IS NULL AND ${notBlocked(alias)}`;

/**
 * `alias` is open, written `+alias.state` so that SQLite never reads `tasks_live` for it: the
 * statements that join a job to its task walk the jobs' indexes, and without ANALYZE SQLite would
 * start from the open tasks instead (docs/decisions/0043). `next`, which picks among open tasks,
 * names `t.state = 'open'` itself to read that index.
 */
export const OPEN = (alias: string): string => `+${alias}.state = 'open'`;

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

/** The task of the job row `jobs` takes jobs (taskOpen), looked up by its key per job. */
export const jobTaskOpen = (jobs: string): string =>
  `(SELECT ${taskOpen('t')} FROM tasks t WHERE t.id = ${jobs}.task_id)`;

/** SQL expressions (or parameters) of a claim: who takes the job, where, when, started or not. */
interface ClaimRefs {
  readonly status: string;
  readonly session: string;
  readonly host: string;
  readonly now: string;
  readonly startedAt: string;
  /** When the lease of a job taken in a batch runs out; none for a claim held by liveness alone. */
  readonly lease?: string | undefined;
  /** The dispatcher's lease term a placement is fenced by; none for a claim by the session itself. */
  readonly term?: string | undefined;
}

/**
 * The claim transition's column effects, for every claim of a queued job (claimDue, a placement):
 * the epoch and attempt grow, the holder and its host are set, a start in the same step stamps
 * started_at, and the new attempt has no agent session or pid yet.
 */
export const claimSet = (refs: ClaimRefs): string =>
  `status = ${refs.status}, epoch = epoch + 1, attempt = attempt + 1,
    session_id = ${refs.session}, host = ${refs.host}, claimed_at = ${refs.now}, started_at = ${refs.startedAt},
    reason = NULL, term = ${refs.term ?? 'NULL'}, lease_until = ${refs.lease ?? 'NULL'},
    agent_session_id = NULL, pid = NULL`;

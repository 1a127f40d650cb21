/**
 * The take reads each queued job's task by its key (issue 22; docs/decisions/0017, "the take").
 *
 * baton_take_queued (0012) passed over gated and closed tasks with `NOT EXISTS (SELECT 1 FROM
 * tasks t WHERE t.id = jobs.task_id AND (t.state <> 'open' OR t.gate IS NOT NULL))`. The planner
 * may turn that into an anti-join against every task that is not open, materialised once and
 * compared with each queued job in turn: with statistics taken while the queue was fresh (every
 * task open) it chose exactly that, and a take of 500 compared each job with every finished task
 * (750,000 comparisons with 1,500 done; 318 ms, growing with the history as a drain proceeds).
 * A scalar subquery is never turned into a join: each job the scan reaches looks its task up
 * through tasks_pkey (18 ms for the same take). A job's task always exists (foreign key), so
 * the two tests keep the same jobs.
 *
 * The body as it was applied; migration 0022 recreates it from the shared takeQueued
 * (claim-set.ts), so the rule has one home in the code.
 */
export default {
  version: 20,
  name: 'take-by-key',
  sql: `
CREATE OR REPLACE FUNCTION baton_take_queued(n integer, due timestamptz) RETURNS SETOF bigint
  LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
    SELECT jobs.id FROM jobs
    WHERE jobs.status = 'queued' AND jobs.run_after <= due
      AND (SELECT t.state = 'open' AND t.gate IS NULL FROM tasks t WHERE t.id = jobs.task_id)
    ORDER BY jobs.priority, jobs.queued_at, jobs.id
    LIMIT n
    FOR UPDATE OF jobs SKIP LOCKED;
END $$;
`,
};

/**
 * The batched worker loop's claim, made cheap under concurrency (docs/decisions/0002, "Third round"):
 * - `baton_take_queued(n)` locks the n best due queued jobs FOR UPDATE SKIP LOCKED and returns their
 *   ids in queue order. Called from jobs.finishAndClaimNext's statement, it runs on a snapshot of its
 *   own (PL/pgSQL takes one per statement in READ COMMITTED), taken when the claim starts rather than
 *   when the whole statement did, so it rarely meets a job that a concurrent claim committed in
 *   between; and when it does, PostgreSQL's recheck (EvalPlanQual) rebuilds this one small plan, not
 *   every CTE of the caller's statement. The caller's UPDATE still guards `status = 'queued'` on the
 *   row it locked, so a job it cannot see is simply not handed out.
 * - The wake-up on released workspace locks fires per released lock, not per statement: a statement
 *   trigger fired for every finish (a DELETE of no rows), and each NOTIFY serialises the commits that
 *   send it.
 */
export default {
  version: 8,
  name: 'claim-batch',
  sql: `
CREATE FUNCTION baton_take_queued(n integer) RETURNS SETOF bigint LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
    SELECT id FROM jobs
    WHERE status = 'queued' AND run_after <= date_trunc('milliseconds', clock_timestamp())
    ORDER BY priority, queued_at, id
    LIMIT n
    FOR UPDATE SKIP LOCKED;
END $$;
DROP TRIGGER workspace_locks_wake ON workspace_locks;
CREATE TRIGGER workspace_locks_wake AFTER DELETE ON workspace_locks
  FOR EACH ROW EXECUTE FUNCTION baton_wake();
`,
};

/**
 * Task dependencies (docs/decisions/0035-task-dependencies.md): `task_id` waits until
 * `depends_on` is done. The primary key leads with the waiting task, the probe every claim,
 * take and placement makes (taskOpen in claim-set.ts: NOT EXISTS an edge whose task is not done);
 * the second index serves "what waits for it" and the cycle check's walk. baton_take_queued is
 * recreated from takeQueued, whose rule now includes the probe (claim-plan.test.ts compares them).
 */
import { takeQueued } from '../claim-set.js';

export default {
  version: 33,
  name: 'task-dependencies',
  sql: `
CREATE TABLE task_deps (
  task_id bigint NOT NULL REFERENCES tasks (id),
  depends_on bigint NOT NULL REFERENCES tasks (id),
  added_at timestamptz NOT NULL,
  added_by text NOT NULL CHECK (length(added_by) <= 200),
  PRIMARY KEY (task_id, depends_on),
  CHECK (task_id <> depends_on)
);
CREATE INDEX task_deps_depends_on ON task_deps (depends_on, task_id);

CREATE OR REPLACE FUNCTION baton_take_queued(n integer, due timestamptz) RETURNS SETOF bigint
  LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY ${takeQueued('n', 'due')};
END $$;
`,
};

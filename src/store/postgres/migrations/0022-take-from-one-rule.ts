/**
 * baton_take_queued recreated from takeQueued (claim-set.ts), the statement that also holds the
 * rule "a job's task is open and ungated" for claimNext and placement (issue 16: one home for
 * every rule). The body is unchanged from 0020; what changes is that the code holds it once.
 * A later change to that rule needs a migration of its own: claim-plan.test.ts fails while the
 * function in the database differs from the one takeQueued describes.
 */
import { takeQueued } from '../claim-set.js';

export default {
  version: 22,
  name: 'take-from-one-rule',
  sql: `
CREATE OR REPLACE FUNCTION baton_take_queued(n integer, due timestamptz) RETURNS SETOF bigint
  LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY ${takeQueued('n', 'due')};
END $$;
`,
};

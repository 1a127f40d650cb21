/**
 * The live tasks (open, in review, escalated) by state, then `next`'s order
 * (docs/decisions/0043-reads-of-a-large-backlog.md): `baton next`, auto-enqueue's read of
 * unqueued tasks, the review queue and the gated, open and escalated lists read the tasks of one
 * live state through it, not every task the backlog ever had. Done and closed tasks, most of a
 * backlog, have no entry; a task enters it when it is added and moves with its state. The
 * predicate is written as ORs so that SQLite sees `state = 'open'` in a query as one of its terms.
 */
export default {
  version: 40,
  name: 'live-tasks',
  sql: `
CREATE INDEX tasks_live ON tasks (state, priority, created_at, id)
  WHERE state = 'open' OR state = 'in_review' OR state = 'escalated';
`,
};

/**
 * Every task in `baton task list`'s order, priority then key (docs/decisions/0045): a list with no
 * state filter, or of the done or closed tasks (which `tasks_live` leaves out), walks this index
 * from the start or from the page before's last task (`--after KEY`) and stops at its limit,
 * where it sorted every task the backlog ever had (183-680 ms at a million). A task writes one
 * entry when added and moves it when its priority changes.
 */
export default {
  version: 42,
  name: 'tasks-by-priority',
  sql: `
CREATE INDEX tasks_by_priority ON tasks (priority, key);
`,
};

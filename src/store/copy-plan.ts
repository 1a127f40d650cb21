/**
 * What `baton db copy` moves from a SQLite file to PostgreSQL, table by table, and why each table
 * that stays behind does (docs/decisions/0049-moving-a-backlog-to-postgresql.md). The order is the
 * insert order: every row a later table refers to is in before it.
 */

export interface CopiedTable {
  readonly table: string;
  /** Its identity column on PostgreSQL, continued past the copied ids; null when it has none. */
  readonly identity: 'id' | null;
}

export const COPIED_TABLES: readonly CopiedTable[] = [
  { table: 'workspaces', identity: null },
  { table: 'projects', identity: null },
  { table: 'agents', identity: null },
  { table: 'sessions', identity: 'id' },
  { table: 'tasks', identity: 'id' },
  { table: 'task_deps', identity: null },
  { table: 'claims', identity: 'id' },
  { table: 'jobs', identity: 'id' },
  { table: 'effects', identity: 'id' },
  { table: 'progress', identity: null },
  { table: 'output_chunks', identity: null },
  { table: 'hosts', identity: null },
  { table: 'tokens', identity: null },
  { table: 'leases', identity: null },
  { table: 'settings', identity: null },
  { table: 'github_sync', identity: null },
  { table: 'github_outbox', identity: 'id' },
  { table: 'job_retention', identity: null },
  { table: 'ledger_keys', identity: null },
  { table: 'audit_events', identity: 'id' },
];

/** The tables left behind, with the reason the command prints. */
export const TABLES_LEFT: Readonly<Record<string, string>> = {
  audit_checkpoints:
    "signed over SQLite's own row encoding (times in ms, detail as text): they cannot verify on PostgreSQL; " +
    'the ledger:continued row names the last one, and the file keeps them',
  ledger_prune_gate: 'SQLite only (the prune trigger gate)',
  wake: 'SQLite only (wake-up counter)',
  workspace_locks: 'none is held in a quiescent backlog (the copy refuses a held one)',
  github_cache: 'a cache of GitHub answers (ETags); the next sync fills it again',
  output_trim_walks: "a leader duty's cursor; it starts again at the head",
  stats_kept: "counts PostgreSQL's stats() computes again from the copied rows",
  stats_marks: "counts PostgreSQL's stats() computes again from the copied rows",
  stats_pruned: "counts PostgreSQL's stats() computes again from the copied rows",
  stats_retention: "counts PostgreSQL's stats() computes again from the copied rows",
  schema_migrations: "the target's own (PostgreSQL's migrations, same version)",
};

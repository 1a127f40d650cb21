/**
 * A runner's default run time limit (`baton up --time-limit`, docs/decisions/0037-run-time-limit.md),
 * published with its host row as its RAM and slots are: written by each register, null for none, so
 * `baton hosts` and the dashboard show what limit a job without its own is held to there.
 */
export default {
  version: 36,
  name: 'host-time-limit',
  sql: `
ALTER TABLE hosts ADD COLUMN time_limit_ms integer CHECK (time_limit_ms IS NULL OR time_limit_ms > 0);
`,
};

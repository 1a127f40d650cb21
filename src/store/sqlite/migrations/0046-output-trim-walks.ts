/**
 * Where the leader's output trim walks stand (store/output-trim.ts, docs/decisions/0029): one row
 * per walk along `jobs_finished` (shrink, drop), the last job it read by finish then id, so a new
 * or restarted leader resumes there instead of walking the whole history again.
 */
export default {
  version: 46,
  name: 'output-trim-walks',
  sql: `
CREATE TABLE output_trim_walks (
  walk TEXT PRIMARY KEY CHECK (walk IN ('shrink', 'drop')),
  at INTEGER NOT NULL,
  id INTEGER NOT NULL
) WITHOUT ROWID;
`,
};

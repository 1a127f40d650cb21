/**
 * Containment (issue 15): how each host's runner keeps a job's processes together (cgroup2,
 * cgroup1 or process-group), with its reference to what it made, so that a `baton up` taking the
 * host over kills what a dead predecessor left; and a job's command that never changes once
 * queued, so that whoever can write to the database cannot turn a queued job into another.
 */
export default {
  version: 11,
  name: 'containment',
  sql: `
ALTER TABLE hosts ADD COLUMN containment TEXT
  CHECK (containment IS NULL OR containment IN ('cgroup2', 'cgroup1', 'process-group'));
ALTER TABLE hosts ADD COLUMN containment_ref TEXT CHECK (containment_ref IS NULL OR length(containment_ref) <= 4000);
CREATE TRIGGER jobs_command_fixed BEFORE UPDATE OF command ON jobs
  WHEN NEW.command IS NOT OLD.command
  BEGIN SELECT RAISE(ABORT, 'a job''s command never changes once queued'); END;
`,
};

/**
 * Containment (issue 15): how each host's runner keeps a job's processes together (cgroup2,
 * cgroup1 or process-group), with its reference to what it made, so that a `baton up` taking the
 * host over kills what a dead predecessor left; and a job's command that never changes once
 * queued, so that a role that may update jobs (the runtime role, docs/security.md) cannot turn a
 * queued job into another. Only the table's owner may disable the trigger.
 */
export default {
  version: 11,
  name: 'containment',
  sql: `
ALTER TABLE hosts ADD COLUMN containment text
  CHECK (containment IS NULL OR containment IN ('cgroup2', 'cgroup1', 'process-group'));
ALTER TABLE hosts ADD COLUMN containment_ref text CHECK (containment_ref IS NULL OR length(containment_ref) <= 4000);
CREATE FUNCTION jobs_refuse_command_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'a job''s command never changes once queued';
END
$fn$;
CREATE TRIGGER jobs_command_fixed BEFORE UPDATE OF command ON jobs
  FOR EACH ROW WHEN (NEW.command IS DISTINCT FROM OLD.command)
  EXECUTE FUNCTION jobs_refuse_command_change();
`,
};

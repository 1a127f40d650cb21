/**
 * Whether a host's runner can run a job enqueued without a command of its own
 * (docs/decisions/0047-jobs-wait-for-an-agent-command.md): its `baton up` has an --agent-command
 * (on the command line or in its --config file). Written by each register, as RAM and slots are.
 * Null for a host row no register of this build wrote (a runner older than this migration): such
 * a host is taken as able, as every host was before, so an older runner with an agent command
 * never strands a command-less job; the placement and the runner's own check decide there.
 *
 * The index holds the enabled hosts that may run such jobs, by their runner session: a pass's
 * candidates read asks once whether any of them is served by a live session (AGENT_COMMAND_HOST
 * in hosts.ts), reading those hosts alone, not the whole fleet.
 */
export default {
  version: 44,
  name: 'host-agent-command',
  sql: `
ALTER TABLE hosts ADD COLUMN agent_command INTEGER CHECK (agent_command IN (0, 1));
CREATE INDEX hosts_agent_command ON hosts (session_id) WHERE enabled = 1 AND agent_command IS NOT 0;
`,
};

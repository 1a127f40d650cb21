/**
 * The task lifecycle on the command line: `baton reopen | close | escalate | escalations |
 * resolve | gate | approve | reject`. Who acted is the operating-system user at this host (and
 * the session, when one is named), recorded in the ledger with each change.
 */
import { hostname, userInfo } from 'node:os';
import type { Command } from 'commander';
import type { Actor, Task } from '../../core/task.js';
import { validateId } from '../../core/validate.js';
import { cell, iso, table } from '../output.js';
import { withApi } from '../run.js';
import { fencedRefusal } from '../../coordinator/refusals.js';

/** The person at this terminal, as the ledger names them: user@host. */
export function cliActor(session?: string): Actor {
  let user = process.env['USER'] ?? 'someone';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (a container): keep $USER.
  }
  return {
    name: `${user}@${hostname()}`.slice(0, 200),
    session: session === undefined ? undefined : validateId('session', session),
  };
}

/** One line for a task after an action: its key, state (since when, with `since`), who, why and gate. */
export function stateLine(t: Task, since = false): string {
  const when = since ? ` since ${iso(t.stateAt)}` : '';
  const by = t.stateBy === null ? '' : ` by ${t.stateBy}`;
  const why = t.stateReason === null ? '' : `: ${t.stateReason}`;
  const gate = t.gate === null ? '' : `; waiting for ${t.gate} approval`;
  return `${t.key} is ${t.state.replace('_', ' ')}${when}${by}${why}${gate}`;
}

interface ActOptions {
  readonly reason?: string;
  readonly note?: string;
  readonly session?: string;
}

const SESSION_HELP = 'the session you act under, recorded in the ledger';

export function registerLifecycle(program: Command): void {
  registerStates(program);
  registerEscalations(program);
  registerGates(program);
  registerSettings(program);
}

/** A person's moves of a task: reopen and close. */
function registerStates(program: Command): void {
  program
    .command('reopen <key>')
    .description('reopen a done or closed task, so it can be claimed and queued again')
    .requiredOption('--reason <text>', 'why it needs more work')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, o: ActOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const t = await baton.lifecycle.reopen({ key, reason: o.reason, by: cliActor(o.session) });
        out.result(t, () => stateLine(t));
      }),
    );

  program
    .command('close <key>')
    .description("close a task as won't do (or with --done, mark it done); cancels its queued job")
    .option('--reason <text>', 'why')
    .option('--done', 'the work is done (elsewhere): the task goes to done instead of closed')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, o: ActOptions & { done?: boolean }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const by = cliActor(o.session);
        const t = await baton.lifecycle.close({ key, reason: o.reason, done: o.done === true, by });
        out.result(t, () => stateLine(t));
      }),
    );
}

/** The human-action queue: escalate, escalations, resolve. */
function registerEscalations(program: Command): void {
  program
    .command('escalate <key>')
    .description('hand a task to a human: ends its claim and job as escalated; exits 3 when fenced off')
    .requiredOption('--reason <text>', 'what the human must do')
    .option('--session <id>', 'the session holding the claim ($BATON_SESSION for an agent)')
    .option('--epoch <n>', 'the claim epoch ($BATON_EPOCH for an agent)')
    .action((key: string, o: ActOptions & { epoch?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const input = { key, reason: o.reason, session: o.session, epoch: o.epoch, by: cliActor() };
        const r = await baton.lifecycle.escalate(input);
        if (!r.ok) throw fencedRefusal(key, o.epoch ?? '?', r.current);
        out.result({ ...r.task, endedClaimEpoch: r.claimEpoch, endedJob: r.jobId }, () => stateLine(r.task));
      }),
    );

  program
    .command('escalations')
    .description('the human-action queue: escalated tasks, oldest first')
    .option('--limit <n>', 'at most this many (default and maximum 1000)')
    .action((o: { limit?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const tasks = await baton.lifecycle.escalations(o);
        out.result(tasks, () =>
          tasks.length === 0
            ? ['no escalations']
            : table(
                ['KEY', 'SINCE', 'BY', 'REASON', 'TITLE'],
                tasks.map((t) => [
                  t.key,
                  iso(t.stateAt),
                  cell(t.stateBy),
                  cell(t.stateReason),
                  cell(t.title),
                ]),
              ),
        );
      }),
    );

  program
    .command('resolve <key>')
    .description('return an escalated task to open, so it is worked again')
    .option('--note <text>', 'what was done about it')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, o: ActOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const t = await baton.lifecycle.resolve({ key, reason: o.note, by: cliActor(o.session) });
        out.result(t, () => stateLine(t));
      }),
    );
}

/** Review gates: gate, approve, reject. */
function registerGates(program: Command): void {
  program
    .command('gate <key> <gate>')
    .description('make an open task wait for a human approval (gate: design) before any run')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, gate: string, o: ActOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const t = await baton.lifecycle.gate({ key, gate, by: cliActor(o.session) });
        out.result(t, () => stateLine(t));
      }),
    );

  program
    .command('approve <key>')
    .description('open the design gate, or approve a task in review (to done)')
    .requiredOption('--gate <gate>', 'design or review')
    .option('--note <text>', 'a note for the ledger')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, o: ActOptions & { gate: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const by = cliActor(o.session);
        const t = await baton.lifecycle.approve({ key, gate: o.gate, reason: o.note, by });
        out.result(t, () => stateLine(t));
      }),
    );

  program
    .command('reject <key>')
    .description('send a task in review back to open; the reason is kept for the next run')
    .requiredOption('--reason <text>', 'what to change (the next run reads $BATON_FEEDBACK)')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, o: ActOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const t = await baton.lifecycle.reject({ key, reason: o.reason, by: cliActor(o.session) });
        out.result(t, () => stateLine(t));
      }),
    );
}

/** The store's settings. */
function registerSettings(program: Command): void {
  const setting = program.command('setting').description("set and list the store's settings");
  setting
    .command('set <name> <value>')
    .description('set a setting; vague-words N: tasks added with fewer words are escalated (0: off)')
    .action((name: string, value: string, _o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const s = await baton.lifecycle.setSetting({ name, value, by: cliActor() });
        out.result(s, () => `${s.name} = ${s.value}`);
      }),
    );
  setting
    .command('list')
    .description('list the settings that were set')
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const all = await baton.lifecycle.settings();
        out.result(all, () =>
          all.length === 0
            ? ['no settings (vague-words is 0: off)']
            : table(
                ['NAME', 'VALUE', 'SET', 'BY'],
                all.map((s) => [s.name, s.value, iso(s.updatedAt), cell(s.updatedBy)]),
              ),
        );
      }),
    );
}

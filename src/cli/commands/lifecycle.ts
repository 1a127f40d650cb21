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
import { claimFromRun, needed } from '../run-claim.js';
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
export function stateLine(task: Task, since = false): string {
  const when = since ? ` since ${iso(task.stateAt)}` : '';
  const by = task.stateBy === null ? '' : ` by ${task.stateBy}`;
  const why = task.stateReason === null ? '' : `: ${task.stateReason}`;
  const gate = task.gate === null ? '' : `; waiting for ${task.gate} approval`;
  return `${task.key} is ${task.state.replace('_', ' ')}${when}${by}${why}${gate}`;
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
    .action((key: string, options: ActOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const task = await baton.lifecycle.reopen({
          key,
          reason: options.reason,
          by: cliActor(options.session),
        });
        out.result(task, () => stateLine(task));
      }),
    );

  program
    .command('close <key>')
    .description("close a task as won't do (or with --done, mark it done); cancels its queued job")
    .option('--reason <text>', 'why')
    .option('--done', 'the work is done (elsewhere): the task goes to done instead of closed')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, options: ActOptions & { done?: boolean }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const by = cliActor(options.session);
        const task = await baton.lifecycle.close({
          key,
          reason: options.reason,
          done: options.done === true,
          by,
        });
        out.result(task, () => stateLine(task));
      }),
    );
}

/** The human-action queue: escalate, escalations, resolve. */
function registerEscalations(program: Command): void {
  program
    .command('escalate')
    .argument('[key]', 'the task (default $BATON_KEY)')
    .description('hand a task to a human: ends its claim and job as escalated; exits 3 when fenced off')
    .requiredOption('--reason <text>', 'what the human must do')
    .option('--session <id>', 'the session holding the claim (default $BATON_SESSION)')
    .option('--epoch <n>', "the claim epoch (default $BATON_EPOCH, for the run's own claim only)")
    .action((given: string | undefined, options: ActOptions & { epoch?: string }, cmd: Command) => {
      const named = claimFromRun({ ...options, key: given }, process.env);
      const key = needed(named, 'key', 'escalate');
      const { session, epoch } = named;
      return withApi(cmd, async (baton, out) => {
        const input = { key, reason: options.reason, session, epoch, by: cliActor() };
        const result = await baton.lifecycle.escalate(input);
        if (!result.ok)
          throw fencedRefusal(key, epoch ?? '?', result.current, result.sessionEnded, Number(session));
        out.result({ ...result.task, endedClaimEpoch: result.claimEpoch, endedJob: result.jobId }, () =>
          stateLine(result.task),
        );
      });
    });

  program
    .command('escalations')
    .description('the human-action queue: escalated tasks, oldest first')
    .option('--limit <n>', 'at most this many (default and maximum 1000)')
    .action((options: { limit?: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const tasks = await baton.lifecycle.escalations(options);
        out.result(tasks, () =>
          tasks.length === 0
            ? ['no escalations']
            : table(
                ['KEY', 'SINCE', 'BY', 'REASON', 'TITLE'],
                tasks.map((task) => [
                  task.key,
                  iso(task.stateAt),
                  cell(task.stateBy),
                  cell(task.stateReason),
                  cell(task.title),
                ]),
              ),
        );
      }),
    );

  program
    .command('resolve <key>')
    .description('return an escalated task to open, to be queued again (auto-enqueue does it when on)')
    .option('--note <text>', 'what was done about it, or the answer (the next run reads $BATON_FEEDBACK)')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, options: ActOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const task = await baton.lifecycle.resolve({
          key,
          reason: options.note,
          by: cliActor(options.session),
        });
        out.result(task, () => stateLine(task));
      }),
    );
}

/** Review gates: gate, approve, reject. */
function registerGates(program: Command): void {
  program
    .command('gate <key> <gate>')
    .description('make an open task wait for a human approval (gate: design) before any run')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, gate: string, options: ActOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const task = await baton.lifecycle.gate({ key, gate, by: cliActor(options.session) });
        out.result(task, () => stateLine(task));
      }),
    );

  program
    .command('approve <key>')
    .description('open the design gate, or approve a task in review (to done)')
    .requiredOption('--gate <gate>', 'design or review')
    .option('--note <text>', 'a note for the ledger')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, options: ActOptions & { gate: string }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const by = cliActor(options.session);
        const task = await baton.lifecycle.approve({ key, gate: options.gate, reason: options.note, by });
        out.result(task, () => stateLine(task));
      }),
    );

  program
    .command('reject <key>')
    .description('send a task in review back to open; the reason is kept for the next run')
    .requiredOption('--reason <text>', 'what to change (the next run reads $BATON_FEEDBACK)')
    .option('--session <id>', SESSION_HELP)
    .action((key: string, options: ActOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const task = await baton.lifecycle.reject({
          key,
          reason: options.reason,
          by: cliActor(options.session),
        });
        out.result(task, () => stateLine(task));
      }),
    );
}

/** The store's settings. */
function registerSettings(program: Command): void {
  const settingCommand = program.command('setting').description("set and list the store's settings");
  settingCommand
    .command('set <name> <value>')
    .description(
      'set a setting; vague-words N: tasks added with fewer words are escalated (0: off); ' +
        'auto-enqueue on|off: a leading `baton up` queues a job for each open task nothing works (off)',
    )
    .action((name: string, value: string, _o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const setting = await baton.lifecycle.setSetting({ name, value, by: cliActor() });
        out.result(setting, () => `${setting.name} = ${setting.value}`);
      }),
    );
  settingCommand
    .command('list')
    .description('list the settings that were set')
    .action((_o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const all = await baton.lifecycle.settings();
        out.result(all, () =>
          all.length === 0
            ? ['no settings (vague-words is 0: off; auto-enqueue is off)']
            : table(
                ['NAME', 'VALUE', 'SET', 'BY'],
                all.map((entry) => [entry.name, entry.value, iso(entry.updatedAt), cell(entry.updatedBy)]),
              ),
        );
      }),
    );
}

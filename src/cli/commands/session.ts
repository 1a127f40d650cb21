/** `baton session start | end | list`. */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import type { ListedSession, Session } from '../../core/session.js';
import { describePid } from '../../core/session-report.js';
import { cell, iso, table } from '../output.js';
import { withApi } from '../run.js';
import { cliActor } from './lifecycle.js';

interface StartOptions {
  readonly kind?: string;
  readonly host?: string;
  readonly name?: string;
  readonly pid?: string;
  readonly ttl?: string;
}

export function registerSession(program: Command): void {
  const session = program.command('session').description('start, end and list sessions');

  session
    .command('start')
    .description('start a session and print its id, for example: S=$(baton session start)')
    .option('--kind <kind>', 'agent, human or daemon (default agent)')
    .option('--host <name>', 'host the session runs on (default this host name)')
    .option('--name <name>', 'a name to tell sessions apart')
    // The CLI process exits at once, so its own pid means nothing; the caller (the shell or
    // agent that ran `baton`) is the process that lives as long as the session.
    .option('--pid <n>', 'process that owns the session (default the parent process of baton)')
    .option('--ttl <duration>', 'how long it may stay silent, such as 8h or 30s (default: 8h for a human)')
    .action((options: StartOptions, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const started = await baton.startSession({
          kind: options.kind,
          host: options.host ?? hostname(),
          pid: options.pid ?? process.ppid,
          name: options.name,
          ttl: options.ttl,
        });
        out.result(started, () => String(started.id));
      }),
    );

  session
    .command('end <id>')
    .description(
      'end a session: release every claim it holds and queue its pull jobs again; ' +
        "another's session is recorded as ended by an operator (you)",
    )
    .action((id: string, _o: unknown, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const by = ownSession(await baton.getSession(id)) ? undefined : cliActor();
        const { session: ended, ended: now, jobsRequeued } = await baton.endSession(id, by);
        out.result({ ...ended, ended: now, jobsRequeued }, () =>
          now
            ? `ended session ${ended.id}${requeuedNote(jobsRequeued)}`
            : `session ${ended.id} had already ended (${ended.state})`,
        );
      }),
    );

  session
    .command('list')
    .description('list sessions, oldest first')
    .option('--live', 'only live sessions')
    .action((options: { live?: boolean }, cmd: Command) =>
      withApi(cmd, async (baton, out) => {
        const sessions = await baton.listSessions({ liveOnly: options.live === true });
        out.result(sessions, () => sessionTable(sessions));
      }),
    );
}

/**
 * Whether the caller is the session itself: its $BATON_SESSION (an agent), or the process that
 * started it (`baton session start` records its parent's pid: the shell or script, which is this
 * call's parent too; its --host may name another machine). Else whoever runs `baton session end`
 * ends another's session: an operator.
 */
function ownSession(session: Session): boolean {
  return process.env['BATON_SESSION'] === String(session.id) || session.pid === process.ppid;
}

/** `; queued jobs 12, 13 again`, or nothing when the session held no pull job. */
function requeuedNote(jobs: readonly number[]): string {
  if (jobs.length === 0) return '';
  return `; queued job${jobs.length === 1 ? '' : 's'} ${jobs.join(', ')} again`;
}

/** `ended (stopped)`, `stale (rescued)`, `ended (operator alice@box)`, or the bare state. */
function describeState(session: Session): string {
  if (session.endReason === null) return session.state;
  const who = session.endReason === 'operator' ? ` ${session.endedBy ?? 'unknown'}` : '';
  return `${session.state} (${session.endReason}${who})`;
}

function sessionTable(sessions: readonly ListedSession[]): string[] {
  if (sessions.length === 0) return ['no sessions'];
  return table(
    ['ID', 'KIND', 'STATE', 'HOST', 'PID', 'NAME', 'STARTED', 'HEARTBEAT', 'TTL'],
    sessions.map((session) => [
      String(session.id),
      session.kind,
      describeState(session),
      session.host,
      // A server from before agentPid sends none: the session's own pid, as it was shown.
      describePid({ pid: session.pid, agentPid: session.agentPid ?? null }),
      cell(session.name),
      iso(session.startedAt),
      iso(session.heartbeatAt),
      session.ttlMs === null ? '-' : `${session.ttlMs / 1000} s`,
    ]),
  );
}

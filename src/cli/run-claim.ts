/**
 * An agent's claim flags from its run (decision 0051, session 21). `baton up` starts each agent with
 * BATON_SESSION, BATON_KEY and BATON_EPOCH: its session and the claim the runner took for it. The
 * commands an agent calls under that claim (effect, escalate, release, heartbeat) take them as
 * defaults, as `baton guard install` does, so an agent writes `baton effect --kind pr` rather than
 * repeating what its runner told it. A flag or argument given wins. Outside a run (none set) nothing
 * changes: each command refuses a missing session or epoch with its own line, exit 2.
 *
 * An epoch belongs to one claim: BATON_EPOCH is that of the run's claim, on BATON_KEY by
 * BATON_SESSION. Taken for another task's key, or with another session, it would present a number
 * that means nothing there (at best exit 3, "never granted"; at worst, on a task whose epochs
 * happen to match, a write under someone else's claim presented as ours). So when the key or the
 * session named is not the run's and --epoch is not given, the call is refused, exit 2, one line,
 * before any request: the caller must say which epoch it means. Rejected: taking the epoch anyway
 * and letting the fence answer (it answers, but a plausible number on the wrong claim is exactly
 * what fencing cannot tell from a right one), and ignoring BATON_EPOCH there (a silent difference
 * between `baton effect K` and `baton effect` that the caller did not ask for).
 */
import { InvalidInputError } from '../core/errors.js';
import { validateEpoch, validateId, validateKey } from '../core/validate.js';

/** What a command was given: each part absent when neither its flag nor its argument was. */
export interface ClaimGiven {
  readonly key?: string | undefined;
  readonly session?: string | undefined;
  readonly epoch?: string | undefined;
}

/** The parts after the run's defaults; still absent where neither the call nor the run named one. */
export interface ClaimNamed {
  readonly key: string | undefined;
  readonly session: string | undefined;
  readonly epoch: string | undefined;
}

/**
 * The claim a command names: each part as given, else the run's. `claim: false` for a call that names
 * no claim (`baton heartbeat 7`, a session's beat alone): only its session may come from the run.
 */
export function claimFromRun(given: ClaimGiven, env: NodeJS.ProcessEnv, claim = true): ClaimNamed {
  const run = {
    session: present(env['BATON_SESSION']),
    key: present(env['BATON_KEY']),
    epoch: present(env['BATON_EPOCH']),
  };
  const session =
    given.session ?? checked('BATON_SESSION', run.session, (value) => validateId('session', value));
  if (!claim) return { key: given.key, session, epoch: given.epoch };
  const named = given.key ?? checked('BATON_KEY', run.key, validateKey);
  if (given.epoch !== undefined || run.epoch === undefined)
    return { key: named, session, epoch: given.epoch };
  const epoch = checked('BATON_EPOCH', run.epoch, validateEpoch);
  const otherKey = named !== undefined && !sameKey(named, run.key);
  const otherSession = session !== undefined && !sameSession(session, run.session);
  if (otherKey || otherSession) {
    const what = otherKey ? `the task ${named}` : `session ${session}`;
    throw new InvalidInputError(
      `BATON_EPOCH (${epoch}) is the epoch of this run's claim on ${run.key ?? 'BATON_KEY (unset)'} by ` +
        `session ${run.session ?? 'BATON_SESSION (unset)'}, not of ${what}`,
      `pass --epoch with the epoch of the claim you mean (\`baton claim\` printed it)`,
    );
  }
  return { key: named, session, epoch };
}

/** The run's value checked as its flag would be, the message naming the variable; undefined stays so. */
function checked(
  name: string,
  value: string | undefined,
  check: (value: string) => unknown,
): string | undefined {
  if (value === undefined) return undefined;
  try {
    return String(check(value));
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    // `epoch must be a whole number, got "abc"` → `BATON_EPOCH must be …`; `task key is …` → `BATON_KEY is …`.
    const words = error.message.replace(/^(epoch|session id|task key) /, '');
    const message = words === error.message ? `${name}: ${words}` : `${name} ${words}`;
    throw new InvalidInputError(message, error.hint);
  }
}

/** An empty variable, as `FOO= baton …` leaves it, is no value. */
const present = (value: string | undefined): string | undefined => (value === '' ? undefined : value);

/** Keys as the store compares them: exactly, once valid. */
function sameKey(named: string, run: string | undefined): boolean {
  return run !== undefined && named === run;
}

/** Sessions as the store reads them: `07` is session 7; a malformed one is no match (refused later). */
function sameSession(named: string, run: string | undefined): boolean {
  return same(sessionId, named, run);
}

/**
 * Whether the claim named is the one a runner made for the agent running this command (BATON_SESSION,
 * BATON_KEY and BATON_EPOCH, decision 0051). The runner finishes that job, and so the task, by the
 * agent's exit: released done from inside, the task would be done while its job runs, so the job would
 * end cancelled and the agent be killed. So `baton release --outcome done` there only checks the claim
 * and says to exit (commands/claim.ts). Each part is compared as the store reads it (`07` is session
 * 7, `01` epoch 1); a part not valid on either side, or a variable unset or empty, is no match.
 */
export function isRunsOwnClaim(
  key: string,
  given: { readonly session: string; readonly epoch: string },
  env: NodeJS.ProcessEnv,
): boolean {
  return (
    same(validateKey, key, env['BATON_KEY']) &&
    same(sessionId, given.session, env['BATON_SESSION']) &&
    same(validateEpoch, given.epoch, env['BATON_EPOCH'])
  );
}

const sessionId = (value: unknown): number => validateId('session', value);

/** Whether two values read alike by `check`; false when either is not valid (it is refused elsewhere). */
function same<T>(check: (value: unknown) => T, named: unknown, run: unknown): boolean {
  try {
    return check(named) === check(run);
  } catch (error) {
    if (error instanceof InvalidInputError) return false;
    throw error;
  }
}

const WORDS = {
  key: ["missing required argument 'key'", 'give the task key, or set BATON_KEY'],
  'session-id': ["missing required argument 'session-id'", 'give the session id, or set BATON_SESSION'],
  session: ["required option '--session <id>' not specified", 'give --session, or set BATON_SESSION'],
  epoch: ["required option '--epoch <n>' not specified", 'give --epoch, or set BATON_EPOCH'],
} as const;

/** The part, or the line a missing one gets (exit 2), in the words commander used before it had a default. */
export function needed(named: ClaimNamed, part: keyof ClaimNamed, command: string): string {
  const value = named[part];
  if (value !== undefined) return value;
  // heartbeat takes its session as an argument, the others as --session.
  const [message, hint] = WORDS[part === 'session' && command === 'heartbeat' ? 'session-id' : part];
  throw new InvalidInputError(
    message,
    `${hint} (\`baton up\` sets it for its agents); see \`baton ${command} --help\``,
  );
}

/**
 * `baton up --agent-uids A-B`: the numeric Unix ids its agents run as, one uid per running agent,
 * all of them in group A (the range's first number, as a gid). Parsed and checked here, purely;
 * the host's part (may this process switch ids at all) is os/agent-uid.ts.
 */
import { InvalidInputError } from './errors.js';

export interface AgentUidRange {
  readonly first: number;
  readonly last: number;
  /** The group every agent runs in: the one the workspace's shared git directories are lent to. */
  readonly gid: number;
}

/** The largest id accepted: 2^32 - 2 (2^32 - 1 is the kernel's "no id"). */
const ID_MAX = 4_294_967_294;
/** A pool this large would be a typo: no host runs that many agents at once. */
const POOL_MAX = 65_536;

const HINT = 'give numeric ids above 0 that no account on this host uses, e.g. --agent-uids 20001-20008';

/** `A-B` or `A` as a range; InvalidInputError (exit 2) when malformed or holding 0 or the runner's ids. */
export function parseAgentUids(text: string, runner: { uid: number; gid: number }): AgentUidRange {
  const match = /^\s*(\d{1,10})\s*(?:-\s*(\d{1,10})\s*)?$/.exec(text);
  const first = Number(match?.[1]);
  const last = match?.[2] === undefined ? first : Number(match[2]);
  if (match === null || first > ID_MAX || last > ID_MAX || last < first || last - first + 1 > POOL_MAX)
    throw new InvalidInputError(
      `--agent-uids must be a range A-B (or one id A) of at most ${POOL_MAX} ids, got ${JSON.stringify(text)}`,
      HINT,
    );
  const holds = (id: number): boolean => id >= first && id <= last;
  if (holds(0) || holds(runner.uid))
    throw new InvalidInputError(
      `--agent-uids ${first}-${last} holds ${holds(0) ? 'uid 0 (root)' : `this runner's own uid ${runner.uid}`}: ` +
        'its agents could act as the runner',
      HINT,
    );
  if (first === runner.gid)
    throw new InvalidInputError(
      `--agent-uids ${first}-${last}: its first id is the agents' group, and ${first} is this runner's own gid`,
      HINT,
    );
  return { first, last, gid: first };
}

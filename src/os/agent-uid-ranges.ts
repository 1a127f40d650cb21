/**
 * One machine, disjoint pools (decision 0025): a runner kills every process of a uid when a run
 * gives it back, and takes back what a dead runner lent to it, so two `baton up` sharing a uid
 * would kill each other's agents and take each other's worktrees. Each `baton up --agent-uids`
 * therefore registers its range for as long as it runs, in a directory only its user may write
 * (`/run/baton/agent-uids` for root, else `baton-agent-uids-<uid>` in the temporary directory):
 * one file per runner, named by its pid and start time. Starting, it writes its own, then reads
 * the others: one of a runner that no longer runs is removed, with the agents' HOMEs it left; one
 * of a live runner whose range overlaps refuses the start (ConflictError, exit 3), its own file
 * removed. Two runners starting at once with overlapping ranges may both refuse; neither runs with
 * the other's uids.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, isAbsolute, join } from 'node:path';
import type { AgentUidRange } from '../core/agent-uids.js';
import { ConflictError } from '../core/errors.js';
import { isRunning, processIdentity, type ProcessIdentity } from './process-ancestry.js';
import { ownPrivateDir } from './private-state.js';

const SYSTEM_DIR = '/run/baton/agent-uids';

function registryPath(): string {
  const uid = process.getuid?.() ?? 0;
  return uid === 0 ? SYSTEM_DIR : join(tmpdir(), `baton-agent-uids-${uid}`);
}

/** The registry: the system one when this process may make it, else one of its own user's. */
function registry(): string {
  return ownPrivateDir(registryPath(), '--agent-uids:', ' and start baton up again');
}

interface Held extends AgentUidRange, ProcessIdentity {
  /** The runner's directory of agents' HOMEs (`<tmp>/baton-agents-*`), removed once it is gone. */
  readonly homes?: string;
}

/** Removes a dead runner's directory of agents' HOMEs, if the file names one of the shape it makes. */
function removeHomes(held: Held | null): void {
  const homes = held?.homes;
  if (typeof homes === 'string' && isAbsolute(homes) && /^baton-agents-[\w-]+$/.test(basename(homes)))
    rmSync(homes, { recursive: true, force: true });
}

function read(path: string): Held | null {
  try {
    const held = JSON.parse(readFileSync(path, 'utf8')) as Held;
    return [held.first, held.last, held.pid, held.startTicks].every(Number.isInteger) ? held : null;
  } catch {
    return null;
  }
}

/**
 * Registers `range` for this process, with `homes`, its directory of agents' HOMEs; throws
 * ConflictError when a live runner holds part of it. A dead runner's file goes, and its HOMEs with it.
 */
export function holdUidRange(range: AgentUidRange, homes: string): { release(): void } {
  const me = processIdentity(process.pid);
  if (me === null) return { release: () => undefined }; // no /proc: nothing to tell runners apart by
  const dir = registry();
  const mine = join(dir, `${me.pid}-${me.startTicks}.json`);
  writeFileSync(mine, JSON.stringify({ ...range, ...me, homes }), { mode: 0o600 });
  const release = (): void => rmSync(mine, { force: true });
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (path === mine) continue;
    const other = read(path);
    if (other === null || !isRunning(other)) {
      removeHomes(other);
      rmSync(path, { force: true });
      continue;
    }
    if (other.first <= range.last && range.first <= other.last) {
      release();
      throw new ConflictError(
        `--agent-uids ${range.first}-${range.last} overlaps ${other.first}-${other.last}, ` +
          `held by the baton up running as pid ${other.pid} on this machine`,
        'give each baton up on a machine its own range: each kills the processes of the uids it gives back',
      );
    }
  }
  return { release };
}

/** The live runner other than this process whose registered range holds `id` (a uid, or its group), or null. */
export function heldElsewhere(
  id: number,
): { readonly pid: number; readonly first: number; readonly last: number } | null {
  let names: string[];
  try {
    names = readdirSync(registryPath());
  } catch {
    return null;
  }
  for (const name of names) {
    const other = read(join(registryPath(), name));
    if (
      other !== null &&
      other.pid !== process.pid &&
      other.first <= id &&
      id <= other.last &&
      isRunning(other)
    )
      return other;
  }
  return null;
}

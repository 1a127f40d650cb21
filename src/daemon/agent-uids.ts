/**
 * `baton up --agent-uids A-B` (decision 0025): each running agent gets a uid of the pool that no
 * other running agent of this runner holds, group A, a fresh private HOME and TMPDIR, and the
 * run's worktree lent to it (os/worktree-lend.ts). The uid goes back to the pool once every
 * process it has is dead and the worktree is the runner's again, before the runner's git retires it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentUidRange } from '../core/agent-uids.js';
import { ConflictError } from '../core/errors.js';
import { agentGitconfig, killUid, makeHome, type AgentIdentity } from '../os/agent-uid.js';
import { holdUidRange } from '../os/agent-uid-ranges.js';
import { dropLendRecord, recordLend } from '../os/lent-record.js';
import { lendWorktree, takeBackWorktree, type LentWorktree } from '../os/worktree-lend.js';
import type { RunDirectory } from './run-workspace.js';

export class AgentUids {
  private readonly free: number[] = [];
  /** The range, registered on this machine while this runner runs (agent-uid-ranges.ts). */
  private readonly held: { release(): void };
  /** Where the agents' HOMEs are: 0711, so each reaches its own by name and lists no other. */
  private readonly base: string;
  private readonly name: string;
  private readonly email: string;

  /**
   * @param records where what is lent is recorded until taken back (`.baton/lent`), read by the
   * next `baton up` if this one dies (lent-record.ts)
   */
  constructor(
    readonly range: AgentUidRange,
    readonly records: string,
  ) {
    this.base = mkdtempSync(join(tmpdir(), 'baton-agents-'));
    chmodSync(this.base, 0o711);
    try {
      this.held = holdUidRange(range, this.base);
    } catch (error) {
      rmSync(this.base, { recursive: true, force: true });
      throw error;
    }
    for (let uid = range.first; uid <= range.last; uid++) this.free.push(uid);
    this.name = runnerGit('user.name') ?? 'Baton agent';
    this.email = runnerGit('user.email') ?? 'agent@baton.invalid';
  }

  get size(): number {
    return this.range.last - this.range.first + 1;
  }

  /** A uid no running agent of this runner holds, its HOME made afresh; null when all are taken. */
  take(workdir: string): AgentIdentity | null {
    const uid = this.free.shift();
    if (uid === undefined) return null;
    const home = join(this.base, String(uid));
    const identity = { uid, gid: this.range.gid, home, tmp: join(home, 'tmp') };
    const gitconfig = agentGitconfig(this.name, this.email, workdir);
    try {
      makeHome(identity, gitconfig);
    } catch (error) {
      this.free.push(uid);
      throw error;
    }
    return identity;
  }

  /** Kills whatever the uid still runs, then gives it back to the pool. */
  async give(identity: AgentIdentity): Promise<void> {
    await killUid(identity.uid);
    rmSync(identity.home, { recursive: true, force: true });
    this.free.push(identity.uid);
  }

  close(): void {
    rmSync(this.base, { recursive: true, force: true });
    this.held.release();
  }
}

function runnerGit(key: string): string | null {
  try {
    const value = execFileSync('git', ['config', '--global', '--get', key], { encoding: 'utf8' }).trim();
    return value === '' || /[\n\\"]/.test(value) ? null : value;
  } catch {
    return null;
  }
}

/**
 * The run's directory with a uid of the pool seated in it: its worktree (if it is one) lent to
 * the uid. Its retire() kills what the uid left, takes the worktree back and frees the uid, then
 * retires the directory as before. Throws (the uid given back) when no uid is free or the
 * worktree cannot be lent.
 */
export async function seatAgent(
  pool: AgentUids,
  dir: RunDirectory,
  say: (line: string) => void,
): Promise<RunDirectory> {
  const identity = pool.take(dir.path);
  if (identity === null)
    throw new ConflictError(
      `every agent uid of ${pool.range.first}-${pool.range.last} is held by a running agent`,
      'the runner starts no more agents than --agent-uids has ids: report this as a bug',
    );
  const runner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  const branch = dir.env['BATON_BRANCH'];
  let lent: LentWorktree | null = null;
  // Kept on disk until taken back, so the next baton up can if this one dies (lent-record.ts).
  const held: { record?: { path: string; lent: LentWorktree } } = {};
  const remember = (what: LentWorktree): void => {
    held.record = { path: recordLend(pool.records, what, identity.home), lent: what };
  };
  try {
    if (branch !== undefined) lent = lendWorktree(dir.path, branch, identity.uid, identity.gid, remember);
  } catch (error) {
    if (held.record !== undefined) {
      // Lending failed halfway: undo what it did at once.
      takeBackWorktree(held.record.lent, runner.uid, runner.gid);
      dropLendRecord(held.record.path);
    }
    await pool.give(identity);
    throw error;
  }
  let back: Promise<void> | null = null;
  const giveBack = async (): Promise<void> => {
    try {
      await killUid(identity.uid);
      if (lent !== null) takeBackWorktree(lent, runner.uid, runner.gid);
      if (held.record !== undefined) dropLendRecord(held.record.path);
    } catch (error) {
      say(`worktree ${dir.path} not taken back from uid ${identity.uid}: ${String(error)}`);
    } finally {
      await pool.give(identity).catch(() => undefined);
    }
  };
  return {
    ...dir,
    identity,
    retire: async () => {
      await (back ??= giveBack());
      await dir.retire();
    },
  };
}

/**
 * The host's slots under --agent-uids: never more than the pool has uids, so a free slot always
 * finds a free uid (a run gives its uid back before its job's outcome frees the slot). Says so.
 */
export function seatedSlots(
  slotsMax: number,
  pool: AgentUids,
  log: (line: string) => void,
): { slotsMax: number } {
  const { first, last, gid } = pool.range;
  const ids = first === last ? `uid ${first}` : `uids ${first}-${last}`;
  if (slotsMax <= pool.size) {
    log(`agents run as ${ids} (group ${gid}), one uid per running agent`);
    return { slotsMax };
  }
  log(
    `agents run as ${ids} (group ${gid}), one uid per running agent: at most ${pool.size} at once, not ${slotsMax}`,
  );
  return { slotsMax: pool.size };
}

/**
 * The host's side of running agents as other Unix uids (`baton up --agent-uids`, decision 0025):
 * whether this process may switch ids, the agent's private HOME, the command that drops to its
 * uid, and the sweep that kills every process a uid still has once its run is over.
 */
import {
  chownSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { parseAgentUids, type AgentUidRange } from '../core/agent-uids.js';
import { InvalidInputError } from '../core/errors.js';

/** Who one agent runs as, and its own directories (both 0700, its own). */
export interface AgentIdentity {
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
  readonly tmp: string;
}

/** The program that switches ids (util-linux), by absolute path: an agent's PATH is its own. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'];

/** CAP_CHOWN (lend and take back worktrees), CAP_KILL (kill another uid), CAP_SETGID, CAP_SETUID. */
const NEEDED = [
  ['CAP_CHOWN', 0],
  ['CAP_KILL', 5],
  ['CAP_SETGID', 6],
  ['CAP_SETUID', 7],
] as const;

function setpriv(): string | null {
  return SETPRIV.find((path) => statOf(path)?.isFile() === true) ?? null;
}

function statOf(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

/**
 * Why this process cannot run agents as other uids, in one line, or null when it can: it needs
 * CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL in its effective set (root has them) and setpriv.
 */
function cannotSwitchUids(status = readFileSync('/proc/self/status', 'utf8')): string | null {
  const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  const effective = hex === undefined ? 0n : BigInt(`0x${hex}`);
  const missing = NEEDED.filter(([, bit]) => (effective & (1n << BigInt(bit))) === 0n).map(([name]) => name);
  if (missing.length > 0) return `this process lacks ${missing.join(', ')}`;
  if (setpriv() === null) return 'setpriv (util-linux) is not installed in /usr/bin or /bin';
  return null;
}

/**
 * `--agent-uids` checked against this host before anything starts: the range (core/agent-uids.ts),
 * the rights to switch to it, and a way for the agents to reach their worktrees below `stateDir`
 * (made 0711 by `baton up`). InvalidInputError (exit 2) with one line otherwise.
 */
export function agentUidsOf(text: string, stateDir: string): AgentUidRange {
  const range = parseAgentUids(text, { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 });
  const cannot = cannotSwitchUids();
  if (cannot !== null)
    throw new InvalidInputError(
      `--agent-uids: cannot run agents as other uids: ${cannot}`,
      'start baton up as root (or grant it those capabilities), or leave --agent-uids out',
    );
  const closed = unsearchableOnTheWay(stateDir);
  if (closed !== null)
    throw new InvalidInputError(
      `--agent-uids: agents could not reach their worktrees under ${stateDir}: ${closed} is not searchable`,
      `let others search it (chmod o+x ${closed}), or start baton up from another directory`,
    );
  return range;
}

/** The first directory on the way to `path` that other uids cannot search (no o+x), or null. */
export function unsearchableOnTheWay(path: string): string | null {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const mode = statOf(dir)?.mode;
    if (mode !== undefined && (mode & 0o001) === 0) return dir;
    if (dirname(dir) === dir) return null;
  }
}

const quote = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`;

/**
 * The agent's command, run as its uid: the shell that entered its cgroup (as the runner) execs
 * setpriv, which drops every capability and supplementary group, sets no_new_privs (a setuid
 * program gives nothing back) and execs the command's shell as the agent.
 */
export function asAgent(command: string, identity: AgentIdentity): string {
  const tool = setpriv() ?? SETPRIV[0];
  return (
    `exec ${tool} --reuid=${identity.uid} --regid=${identity.gid} --clear-groups --no-new-privs ` +
    `-- /bin/sh -c ${quote(command)}`
  );
}

/**
 * The agent's `.gitconfig`: its name and email (an id without a passwd entry has none for git to
 * guess), its worktree as `safe.directory` (git reads that from global config only), and how its
 * git writes into the repository's shared directories (os/worktree-lend-repo.ts).
 */
export function agentGitconfig(name: string, email: string, workdir: string): string {
  return [
    '[user]',
    `\tname = ${name}`,
    `\temail = ${email}`,
    '[safe]',
    `\tdirectory = ${workdir}`,
    '[core]',
    // Its ref files 0644, never group-writable: another agent, in the same group, cannot rewrite them.
    '\tsharedRepository = 0644',
    // Reflogs only where one exists (its branch's, lent): the repository's logs/ is the runner's.
    '\tlogAllRefUpdates = false',
    '[gc]',
    '\tauto = 0', // no repacking or pruning in shared directories of other owners
    '[fetch]',
    '\tunpackLimit = 2147483647', // what it fetches lands as loose objects: objects/pack is not lent
    '',
  ].join('\n');
}

/**
 * Makes the agent's HOME afresh (nothing of an earlier run of the uid is left), with its TMPDIR
 * and a .gitconfig: git's `safe.directory` is read only from global config, and an agent without
 * an /etc/passwd entry has no name for git to fall back on.
 */
export function makeHome(identity: AgentIdentity, gitconfig: string): void {
  rmSync(identity.home, { recursive: true, force: true });
  mkdirSync(identity.tmp, { recursive: true, mode: 0o700 });
  const config = join(identity.home, '.gitconfig');
  writeFileSync(config, gitconfig, { mode: 0o600 });
  for (const path of [identity.home, identity.tmp, config]) chownSync(path, identity.uid, identity.gid);
}

/** The pids of every live process whose real, effective, saved or file-system uid is `uid`. */
function pidsOfUid(uid: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const ids = /^Uid:\s+(.*)$/m.exec(status)?.[1] ?? '';
      const zombie = /^State:\s+Z/m.test(status); // dead already, waiting for its parent to reap it
      if (!zombie && ids.split(/\s+/).some((id) => Number(id) === uid)) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Kills every process of `uid` until none is left (about 2 s at most); how many signals it sent. */
export async function killUid(uid: number): Promise<number> {
  let killed = 0;
  for (let round = 0; round < 100; round++) {
    const pids = pidsOfUid(uid);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // Gone meanwhile.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return killed;
}

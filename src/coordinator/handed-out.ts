/**
 * What an agent may claim: only work Baton would hand out (docs/decisions/0059). A design gate and
 * a dependency not done stop placement, `next` and pull mode in the store's one SQL rule
 * (`taskOpen`), but not an explicit claim, which a person makes by hand (decisions 0010, 0035).
 * An agent token is no person: its claim of a task behind a gate, or waiting for a task not done,
 * would let it release the task done with no human approval. So the HTTP adapter, which knows the
 * token's scope, has its claims judged here first.
 *
 * Checked before the store's guarded grant, not inside it: a gate or an edge that lands between
 * this read and the grant finds the claim granted, which is the order "grant, then gate", and a
 * gate keeps the claim (architecture.md, Task). A session that holds the task already claims it
 * again as the same claim (idempotent), so a run whose task was gated after its placement keeps it.
 */
import type { SessionId } from '../core/session.js';
import type { Task } from '../core/task.js';
import type { TaskLink } from '../store/lifecycle-store.js';
import type { Store } from '../store/store.js';
import { Refusal } from './refusals.js';

/** Who claims: a person (the CLI, an operator's token, a local MCP server) or an agent's token. */
export type Claimer = 'person' | 'agent';

/**
 * Throws `task_gated` or `task_blocked` (exit 3, HTTP 409) when an agent asks for an open task
 * that is not handed out and that its session does not hold; anything else is left to the grant
 * (an unknown task, a state that refuses claims, a holder), which answers as it always did.
 */
export async function refuseUnhandedOut(store: Store, key: string, session: SessionId): Promise<void> {
  const task = await store.tasks.get(key);
  if (task === null || task.state !== 'open' || task.holder?.session === session) return;
  if (task.gate !== null) throw gatedRefusal(task);
  // Read only for a task that exists, and never swallowed: a failed read refuses the claim (the
  // caller sees the store's error) rather than letting the agent past an edge it could not see.
  const links = await store.lifecycle.dependencies(key);
  const pending = links.waitsFor.filter((link) => link.state !== 'done');
  if (pending.length > 0) throw blockedRefusal(key, pending);
}

function gatedRefusal(task: Task): Refusal {
  const { key, gate } = task;
  return new Refusal(
    'conflict',
    'task_gated',
    `task ${key} is waiting for ${gate} approval: an agent's token may not claim it until a person approves`,
    `a person approves it with \`baton approve ${key} --gate ${gate}\`; pick another task meanwhile ` +
      '(`baton next` hands out only what may be worked)',
    { key, gate },
  );
}

function blockedRefusal(key: string, pending: readonly TaskLink[]): Refusal {
  const waits = pending.map((link) => `${link.key} (${link.state.replace('_', ' ')})`).join(', ');
  const first = pending[0]?.key ?? '';
  const tasks = pending.length === 1 ? `task ${waits}` : `tasks ${waits}`;
  const until = pending.length === 1 ? 'that task is' : 'they are';
  return new Refusal(
    'conflict',
    'task_blocked',
    `task ${key} waits for ${tasks}: an agent's token may not claim it until ${until} done`,
    `finish ${pending.map((link) => link.key).join(', ')} first (a closed task is reopened and finished), ` +
      `or a person removes the edge with \`baton task undepend ${key} --on ${first}\`; pick another task meanwhile`,
    { key, waitsFor: pending.map((link) => ({ key: link.key, state: link.state })) },
  );
}

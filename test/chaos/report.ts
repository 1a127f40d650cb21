/** The chaos report: faults by kind, operations and outcomes, invariants checked, violations. */
import type { ScenarioResult } from './scenario.js';

function counts<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of items) out.set(key(item), (out.get(key(item)) ?? 0) + 1);
  return out;
}

/** How the unknown writes turned out, read from the server history. */
function unknownOutcomes(r: ScenarioResult): string {
  const { server } = r.input;
  const id = (l: { pid: number; n: number }) => `${l.pid}#${l.n}`;
  const payloads = server.effects.map((e) => e.payload as { pid?: number; n?: number } | null);
  const written = new Set(payloads.map((p) => `${p?.pid ?? '?'}#${p?.n ?? '?'}`));
  const jobKeys = new Set(server.jobs.map((j) => j.key));
  const answered = new Set(r.client.filter((l) => l.phase !== 'invoke' && l.op !== 'hold').map(id));
  const unknown = r.client.filter(
    (l) => l.phase === 'info' || (l.phase === 'invoke' && !answered.has(id(l))),
  );
  const effects = unknown.filter((l) => l.op === 'effect');
  const enqueues = unknown.filter((l) => l.op === 'enqueue');
  const applied = effects.filter((l) => written.has(id(l))).length;
  const queued = enqueues.filter((l) => jobKeys.has(String(l['key']))).length;
  const cut = r.client.filter((l) => l.phase === 'invoke' && !answered.has(id(l))).length;
  return (
    `Unknown outcomes (\`info\`, or no answer before the process was killed: ${cut} operations), ` +
    `as the server history settles them: of ${effects.length} effect writes ${applied} were applied and ` +
    `${effects.length - applied} were not; of ${enqueues.length} enqueues ${queued} were applied and ` +
    `${enqueues.length - queued} were not.`
  );
}

const row = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;

export function formatReport(r: ScenarioResult, command: string): string {
  const o = r.options;
  const out: string[] = [];
  out.push(`## ${o.engine}, seed ${o.seed}, fencing ${o.fencing ? 'on' : 'OFF (negative control)'}`, '');
  out.push(`\`${command}\``, '');
  const minutes = ((r.endedAt - r.startedAt) / 60_000).toFixed(1);
  const faultMinutes = (o.durationMs / 60_000).toFixed(1);
  out.push(`Faults for ${faultMinutes} min, ${minutes} min with the drain; run folder ${r.dir}`, '');

  out.push(
    '### Faults injected',
    '',
    row(['kind', 'injected', 'not injected (no target / never triggered)']),
  );
  out.push(row(['---', '---:', '---:']));
  const injected = counts(
    r.faults.filter((f) => f.phase === 'inject'),
    (f) => f.kind,
  );
  const skipped = counts(
    r.faults.filter((f) => f.phase === 'skip'),
    (f) => f.kind,
  );
  for (const kind of r.input.kinds) out.push(row([kind, injected.get(kind) ?? 0, skipped.get(kind) ?? 0]));
  const spawns = r.procs.filter((p) => p.event === 'spawn');
  const skewed = spawns.filter((p) => (p.offsetMs ?? 0) !== 0).map((p) => p.offsetMs ?? 0);
  out.push(row(['clock offset (per process)', skewed.length, spawns.length - skewed.length]));
  out.push(
    '',
    `Processes started ${spawns.length} times (restarts after kills and unknown outcomes included); ` +
      `clock offsets from ${Math.min(0, ...skewed)} ms to ${Math.max(0, ...skewed)} ms.`,
    '',
  );

  out.push(
    '### Operations (worker histories)',
    '',
    row(['operation', 'invoked', 'ok', 'fail', 'info (unknown)']),
  );
  out.push(row(['---', '---:', '---:', '---', '---:']));
  const byOp = new Map<string, { invoke: number; ok: number; info: number; fail: Map<string, number> }>();
  for (const l of r.client) {
    const s = byOp.get(l.op) ?? { invoke: 0, ok: 0, info: 0, fail: new Map<string, number>() };
    byOp.set(l.op, s);
    if (l.phase === 'fail') s.fail.set(String(l['reason']), (s.fail.get(String(l['reason'])) ?? 0) + 1);
    else s[l.phase]++;
  }
  for (const [op, s] of [...byOp].sort()) {
    const fail = [...s.fail].map(([reason, n]) => `${n} ${reason}`).join(', ') || '0';
    out.push(row([op, s.invoke, s.ok, fail, s.info]));
  }
  const { server } = r.input;
  out.push('', unknownOutcomes(r));
  const jobs = counts(server.jobs, (j) => j.status);
  out.push(
    '',
    'Server history: ' +
      [
        `${server.ledger.length} ledger rows`,
        `${server.claims.length} claims granted`,
        `${server.effects.length} effects accepted ` +
          `(${server.effects.filter((e) => e.kind === 'job-run').length} by job agents)`,
        `${server.jobs.length} jobs (${[...jobs].map(([s, n]) => `${n} ${s}`).join(', ')})`,
        `${server.ledger.filter((e) => e.type === 'session:stale').length} sessions rescued`,
        `${server.ledger.filter((e) => e.type === 'lease:acquired').length} dispatcher terms`,
      ].join('; ') +
      '.',
    '',
  );

  out.push('### Invariants', '', row(['invariant', 'checked', 'violations', 'notes']));
  out.push(row(['---', '---:', '---:', '---']));
  for (const c of r.checks) {
    out.push(row([`**${c.name}**: ${c.invariant}`, c.checked, c.count, (c.notes ?? []).join('; ')]));
  }
  out.push('');
  if (r.violations > 0) {
    out.push('### Violations (smallest windows)', '');
    for (const c of r.checks) {
      for (const v of c.violations) out.push(`- ${c.name}: ${v.message}`, ...v.window.map((w) => `    ${w}`));
    }
    out.push('');
  }
  const verdict = r.violations === 0 ? 'PASS: no invariant broke' : `FAIL: ${r.violations} violations`;
  out.push(`**${verdict}**`, '');
  return out.join('\n');
}

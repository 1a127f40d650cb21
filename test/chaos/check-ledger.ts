/**
 * The ledger's tamper evidence under faults: the two `baton up`s seal the ledger while they lead
 * (killed, paused, cut off and restarted by the nemesis meanwhile), the run ends with one last
 * seal, and nobody tampered, so every row must verify: no false alarm from a checkpoint written
 * by a leader that lost its lease, a sealer killed mid-way, or rows that committed out of order.
 */
import type { Checkpoint } from '../../src/core/ledger.js';
import type { VerifyReport } from '../../src/coordinator/ledger/verify.js';
import type { CheckResult } from './check-types.js';

export function checkLedgerVerifies(
  report: VerifyReport,
  sealedDuringRun: readonly Checkpoint[],
): CheckResult {
  const violations = report.problems.slice(0, 5).map((p) => ({
    message: `row ${p.id} ${p.problem} (checkpoint ${p.checkpoint ?? '-'})`,
    window: [p.detail],
  }));
  const idle =
    sealedDuringRun.length === 0
      ? [{ message: 'the leaders sealed nothing during the run', window: ['see the up-*.log files'] }]
      : [];
  const rows = sealedDuringRun.reduce((n, c) => n + c.rowCount, 0);
  return {
    name: 'ledger verifies',
    invariant: 'an untouched ledger, sealed by the leaders under faults, always verifies',
    checked: report.rows,
    count: report.problemCount + idle.length,
    violations: [...violations, ...idle],
    notes: [
      `${sealedDuringRun.length} checkpoints (${rows} rows) sealed by the leaders during the run; ` +
        `${report.seals} in all after the last seal; ${report.unsealed.count} rows left unsealed`,
    ],
  };
}

/**
 * Who revoked a token (docs/decisions/0048, "Loose ends"): the person named in the ledger row's
 * `by`, or null for a run's token revoked by its runner at the run's end, which names nobody. A
 * token a person revoked answers `revoked` even after its session or run ended, and its uses are
 * written; the runner's revocation stays `ended`, routine and quiet. Filled from the `token:revoked`
 * rows still in the ledger (one read of it); a revocation whose row was pruned reads as the runner's.
 */
export default {
  version: 47,
  name: 'token-revoked-by',
  sql: `
ALTER TABLE tokens ADD COLUMN revoked_by text;
UPDATE tokens t SET revoked_by = a.detail ->> 'by'
FROM audit_events a
WHERE a.type = 'token:revoked' AND a.detail ? 'by' AND a.detail ->> 'id' = t.id AND t.revoked_at IS NOT NULL;
`,
};

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
ALTER TABLE tokens ADD COLUMN revoked_by TEXT;
UPDATE tokens SET revoked_by = r.by
FROM (
  SELECT json_extract(detail, '$.id') AS id, json_extract(detail, '$.by') AS by FROM audit_events
  WHERE type = 'token:revoked' AND json_extract(detail, '$.by') IS NOT NULL
) AS r
WHERE tokens.id = r.id AND tokens.revoked_at IS NOT NULL;
`,
};

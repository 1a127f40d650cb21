/**
 * A seal checkpoint's leaves are stored out of line without a compression attempt (STORAGE
 * EXTERNAL; docs/decisions/0011-tamper-evident-ledger.md, "the sealer's appends"). Leaves are
 * sha256 hashes behind 8-byte ids: pglz finds the ids' zero bytes, works through the whole value
 * (320 KB for 8,192 rows) and gives up, since it saves less than its 25 %, so every checkpoint was
 * stored as it came after the server spent about 11 ms of CPU trying (1.4 µs a sealed row, a third
 * of the sealer's share of the server). Existing checkpoints keep what they have (also stored as
 * they came); only new ones skip the attempt. SQLite never compresses: no migration there.
 */
export default {
  version: 29,
  name: 'leaves-uncompressed',
  sql: `ALTER TABLE audit_checkpoints ALTER COLUMN leaves SET STORAGE EXTERNAL;`,
};

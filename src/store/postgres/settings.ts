/** Settings on PostgreSQL: named values, each set with its ledger row in one statement. */
import { assert } from '../../core/assert.js';
import type { LifecycleStore, Setting } from '../lifecycle-store.js';
import { NOW, hostOf, ms } from './rows.js';
import type { PgExecutor } from './executor.js';

interface SettingRow {
  name: string;
  value: string;
  updated_at: Date;
  updated_by: string | null;
}

const toSetting = (row: SettingRow): Setting => ({
  name: row.name,
  value: row.value,
  updatedAt: ms(row.updated_at),
  updatedBy: row.updated_by,
});

export function postgresSettings(exec: PgExecutor): LifecycleStore['settings'] {
  return {
    get: async (name) =>
      (await exec.one<{ value: string }>('SELECT value FROM settings WHERE name = $1::text', [name]))
        ?.value ?? null,
    set: async (params) => {
      const row = await exec.one<SettingRow>(
        `WITH s AS (
           INSERT INTO settings (name, value, updated_at, updated_by)
           VALUES ($1::text, $2::text, ${NOW}, $3::text)
           ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
             updated_by = excluded.updated_by
           RETURNING name, value, updated_at, updated_by
         ), a AS (
           INSERT INTO audit_events (at, type, session_id, host, detail)
           SELECT updated_at, 'setting:set', $4::bigint, ${hostOf('$4::bigint')},
             jsonb_build_object('name', name, 'value', value, 'by', updated_by)
           FROM s
         )
         SELECT * FROM s`,
        [params.name, params.value, params.by.name, params.by.session ?? null],
      );
      assert(row !== undefined, 'an upsert returns its row');
      return toSetting(row);
    },
    list: async () =>
      (
        await exec.rows<SettingRow>('SELECT name, value, updated_at, updated_by FROM settings ORDER BY name')
      ).map(toSetting),
  };
}

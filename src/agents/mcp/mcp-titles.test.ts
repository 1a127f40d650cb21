/**
 * What `baton mcp` tells a model about a task it takes or reads (docs/decisions/0046): the title
 * quoted as a JSON string, and `(no title)` for a task added without one (`baton enqueue <key>`
 * adds such a task), never an empty `""`. The real server over stdio, a real database.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sqliteDatabase } from '../../../test/support/databases.js';
import { connect, structured, withBaton } from '../../../test/support/mcp-client.js';

test('baton_next and baton_show_task name a task without a title as (no title), and quote one with quotes', () =>
  withBaton(sqliteDatabase(), async (url, store) => {
    await store.tasks.add({ key: 'bare', title: '', priority: 1 });
    await store.tasks.add({ key: 'quoted', title: 'Fix "login" race', priority: 2 });
    const client = await connect(url);
    try {
      const next = structured(await client.callTool({ name: 'baton_next', arguments: {} }));
      assert.equal(next.key, 'bare');
      assert.match(next.message ?? '', /^You now hold bare \(no title\) at epoch 1\. /);
      const shown = structured(
        await client.callTool({ name: 'baton_show_task', arguments: { key: 'quoted' } }),
      );
      assert.match(shown.message ?? '', /^quoted "Fix \\"login\\" race": no one holds it; /);
      const bare = structured(await client.callTool({ name: 'baton_show_task', arguments: { key: 'bare' } }));
      assert.match(bare.message ?? '', /^bare \(no title\): held by session \d+ on /);
    } finally {
      await client.close();
    }
  }));

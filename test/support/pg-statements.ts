/**
 * The SQL texts pg's Client.query is given while `work` runs, in order: as a string, a config or
 * a Query object, as the store sends them (prepared statements included).
 */
import pg from 'pg';

export async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = proto.query;
  const texts: string[] = [];
  proto.query = function (this: unknown, ...args: unknown[]): unknown {
    const config = args[0] as { text?: unknown } | string;
    texts.push(typeof config === 'string' ? config : String(config.text));
    return query.apply(this, args);
  };
  try {
    await work();
  } finally {
    proto.query = query;
  }
  return texts;
}

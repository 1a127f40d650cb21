/**
 * An autocommit statement whose rows reach the client while its commit is still being made
 * durable (docs/decisions/0002, "Seventh round").
 *
 * pg sends a prepared statement as Bind, Describe, Execute and Sync in one write. PostgreSQL
 * executes at Execute, keeping the rows in its output buffer, commits the implicit transaction
 * at Sync (the WAL flush), and sends everything only with ReadyForQuery. So the client parses
 * the rows after the flush, in series with it, and a batch of eight jobs spent 0.15-0.2 ms
 * there. A Flush message between Execute and Sync makes the server send the rows and
 * CommandComplete before it starts the commit: the client parses them while the server flushes.
 *
 * Nothing is acknowledged earlier than before: the query still settles at ReadyForQuery, or
 * with the error that replaces it (an error at commit discards the rows already parsed, and a
 * connection lost during the commit fails the query as it always did).
 *
 * PgExecutor.manyRows uses it for the worker loop's batch only. A one-row answer to an idle client
 * was slower this way (the client is woken twice), and inside an explicit transaction there is
 * no commit at Sync to overlap.
 */
import pg from 'pg';

/** The part of pg's connection a query writes its protocol messages to. */
interface ProtocolConnection {
  execute(config: { portal: string }): void;
  flush(): void;
  sync(): void;
}

/** pg's Query as this subclass sees it: `_getRows` sends the Execute and what follows it. */
interface QueryInternals {
  portal: string;
  _getRows(connection: ProtocolConnection): void;
}

const internals = pg.Query.prototype as unknown as Partial<QueryInternals>;
if (typeof internals._getRows !== 'function') {
  // pg is pinned; a release that renames this hook must fail here, not quietly lose the overlap.
  throw new Error('pg.Query has no _getRows: rows-before-commit.ts needs updating for this pg release');
}

export class RowsBeforeCommitQuery extends pg.Query {
  /** Execute (every row at once), then Flush (the rows go out now), then Sync (the commit). */
  _getRows(connection: ProtocolConnection): void {
    connection.execute({ portal: (this as unknown as QueryInternals).portal });
    connection.flush();
    connection.sync();
  }
}

/** Runs one prepared autocommit statement on `client`, its rows parsed during its commit. */
export function queryRowsBeforeCommit<R>(client: pg.ClientBase, config: pg.QueryConfig): Promise<R[]> {
  return new Promise<R[]>((resolve, reject) => {
    const query = new RowsBeforeCommitQuery(config, (error, result) => {
      if (error !== undefined && error !== null) reject(error);
      else resolve(result.rows as R[]);
    });
    client.query(query);
  });
}

/**
 * `baton init`, `baton db migrate` and `baton db roles`: bringing the schema up to date (with the owner's URL
 * once roles are split) and splitting the roles on PostgreSQL (docs/security.md). `baton db copy`: db-copy.ts;
 * `baton db backup`: db-backup.ts.
 */
import type { Command } from 'commander';
import { redactSecrets } from '../../core/redact.js';
import { migrateDatabase, setUpRoles } from '../../store/roles.js';
import { Output } from '../output.js';
import { registerDbCopy } from './db-copy.js';
import { registerDbBackup } from './db-backup.js';
import { dbUrl, refuseRemote, type GlobalOptions } from '../run.js';

interface RolesOptions {
  readonly owner?: string;
  readonly runtime?: string;
  readonly print?: boolean;
}

export function registerDb(program: Command): void {
  program
    .command('init')
    .description(
      'create the database (a SQLite file, or the tables in a PostgreSQL database) or bring it up to date; ' +
        'only this and `baton up` create one',
    )
    .action(async (_o: unknown, cmd: Command) => {
      refuseRemote(cmd);
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      const url = dbUrl(globals);
      const version = await migrateDatabase(url, 'create');
      const where = redactSecrets(url);
      new Output(globals.json === true).result(
        { database: where, version },
        () => `database ready: ${where} (schema version ${version})`,
      );
    });
  const db = program
    .command('db')
    .description(
      'database administration: migrations, least-privilege roles, online SQLite backups, ' +
        'a copy from SQLite to PostgreSQL',
    );
  registerDbBackup(db);
  db.command('migrate')
    .description(
      "apply missing schema migrations to an existing database (needs the tables' owner once roles are split)",
    )
    .action(async (_o: unknown, cmd: Command) => {
      refuseRemote(cmd);
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      const version = await migrateDatabase(dbUrl(globals), 'migrate');
      new Output(globals.json === true).result(
        { migrated: true, version },
        () => `schema up to date (version ${version})`,
      );
    });
  registerDbCopy(db);
  db.command('roles')
    .description(
      'PostgreSQL: make an owner role (migrations) and a runtime role that may only append to the ledger',
    )
    .option('--owner <role>', 'the role that owns the tables and runs migrations', 'baton_owner')
    .option('--runtime <role>', 'the role baton up, the CLI and the API use', 'baton_runtime')
    .option('--print', 'print the SQL instead of running it')
    .action(async (options: RolesOptions, cmd: Command) => {
      refuseRemote(cmd);
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      const roles = { owner: options.owner ?? 'baton_owner', runtime: options.runtime ?? 'baton_runtime' };
      const statements = await setUpRoles(dbUrl(globals), roles, options.print !== true);
      new Output(globals.json === true).result(
        { ...roles, applied: options.print !== true, statements },
        () =>
          options.print === true
            ? statements.map((statement) => `${statement};`)
            : [
                `roles ready: ${roles.owner} owns the tables, ` +
                  `${roles.runtime} may append to the ledger but not change it`,
                `set their passwords (ALTER ROLE … PASSWORD) or pg_hba entries, then run baton with ` +
                  `${redactSecrets('postgres://' + roles.runtime + '@…')} and migrations with ${roles.owner}`,
              ],
      );
    });
}

/**
 * The composition root behind `npm start`. For now it opens the default store, which applies any
 * pending migrations, says where it is and how to use the CLI, and exits; the dispatcher and its
 * services will be wired here.
 */
import { DEFAULT_DB, openStore } from './store/open.js';

const db = process.env['BATON_DB'] || DEFAULT_DB;
// Never print a password from a postgres:// URL.
const shown = db.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');

try {
  const store = await openStore(db);
  await store.close();
  process.stdout.write(
    [
      `Baton: ${store.engine} database at ${shown} is ready (set BATON_DB to use another).`,
      '',
      'Coordinate work from any shell or agent with the CLI:',
      '  npx baton task add github:acme/api#1246 --title "Fix login"',
      '  S=$(npx baton session start)',
      '  npx baton claim github:acme/api#1246 --session "$S"',
      '  npx baton release github:acme/api#1246 --session "$S" --epoch 1 --outcome done',
      '  npx baton --help',
      '',
    ].join('\n'),
  );
} catch (error) {
  const { message, hint } = error as { message?: string; hint?: string };
  const advice = hint === undefined ? '' : ` — ${hint}`;
  process.stderr.write(`baton: ${message ?? String(error)}${advice}\n`);
  process.exitCode = 1;
}

/**
 * The composition root behind `npm start`: `baton up` on the database BATON_DB names (default
 * the embedded .baton/baton.db), with any extra arguments passed through, e.g.
 * `npm start -- --host box-1 --lease-ttl 5`.
 */
import { main } from './cli/main.js';

const passthrough = process.argv.slice(2);
process.stdout.write(
  [
    'Baton: joining as dispatcher candidate and runner of this host (Ctrl-C to leave).',
    "In another shell: npx baton enqueue <key> --command '<agent command>' ; npx baton queue list",
    '',
  ].join('\n'),
);
await main([process.argv[0] ?? 'node', 'baton', 'up', ...passthrough]);

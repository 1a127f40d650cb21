/**
 * The composition root behind `npm start`: `baton up` on the database BATON_DB names (default
 * the embedded .baton/baton.db), with any extra arguments passed through, e.g.
 * `npm start -- --host box-1 --lease-ttl 5`.
 */
import { fileURLToPath } from 'node:url';
import { main } from './cli/main.js';

const passthrough = process.argv.slice(2);
// This checkout's bin/ (dist/src/main.js is two levels below the root). Not npx: `npx baton`
// fetches an unrelated package of that name from the registry (README, "Use it").
const bin = fileURLToPath(new URL('../../bin', import.meta.url));
process.stdout.write(
  [
    'Baton: joining as dispatcher candidate and runner of this host (Ctrl-C to leave).',
    `In another shell: export PATH="${bin}:$PATH"`,
    "  then: baton enqueue <key> --command '<agent command>' ; baton queue list",
    '',
  ].join('\n'),
);
await main([process.argv[0] ?? 'node', 'baton', 'up', ...passthrough]);

#!/usr/bin/env node
// `npm run build`'s second step: the `baton` command (src/cli/main.ts) as one ES module, so a
// CLI call reads one file of Baton's code instead of about ninety (docs/decisions/0007). Packages
// stay external (node_modules, as installed); each engine stays a chunk of its own, loaded only
// for its URLs. The output sits at dist/src/cli-bundle/, one folder below dist/src like the
// modules it merges, so their paths relative to import.meta.url (the agent shim, ../os/…) still
// resolve. bin/baton.js imports it.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

const outdir = new URL('../dist/src/cli-bundle', import.meta.url).pathname;
// Chunk names carry a content hash: clear the last build's, or they pile up.
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: [new URL('../src/cli/main.ts', import.meta.url).pathname],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});

#!/usr/bin/env node
// The CLI bundled into one file by `npm run build` (scripts/bundle-cli.mjs), run from the V8 code
// cache beside it (src/cli/launch.ts): a call compiles next to none of Baton's code.
import { fileURLToPath } from 'node:url';
import { launch } from '../dist/src/cli/launch.js';

await launch(fileURLToPath(new URL('../dist/src/cli-bundle/main.cjs', import.meta.url)), process.argv);

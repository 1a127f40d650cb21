#!/usr/bin/env node
// The CLI bundled into one module by `npm run build` (scripts/bundle-cli.mjs): a call loads one
// file of Baton's code, not one per module.
import { main } from '../dist/src/cli-bundle/main.js';

await main(process.argv);

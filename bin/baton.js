#!/usr/bin/env node
// The CLI bundled by `npm run build` (scripts/bundle-cli.mjs) into one file, and an agent's
// commands into another, run from the V8 code cache beside each by the launcher bundled beside
// them (src/cli/launch.ts): a call compiles next to none of Baton's code. CommonJS
// (bin/package.json), so that a call never starts Node's ES module loader.
'use strict';
const { join } = require('node:path');

const bundle = join(__dirname, '..', 'dist', 'src', 'cli-bundle');
const { bundleFor, launch } = require(join(bundle, 'launch.cjs'));
// A dist/ built before bundleFor (bin/ pulled, `npm run build` not run yet) has main.cjs alone.
const file = typeof bundleFor === 'function' ? bundleFor(bundle, process.argv) : join(bundle, 'main.cjs');
launch(file, process.argv);

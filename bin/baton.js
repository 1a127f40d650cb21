#!/usr/bin/env node
// The CLI bundled into one file by `npm run build` (scripts/bundle-cli.mjs), run from the V8 code
// cache beside it by the launcher bundled beside it (src/cli/launch.ts): a call compiles next to
// none of Baton's code. CommonJS (bin/package.json), so that a call never starts Node's ES module
// loader.
'use strict';
const { join } = require('node:path');

const bundle = join(__dirname, '..', 'dist', 'src', 'cli-bundle');
require(join(bundle, 'launch.cjs')).launch(join(bundle, 'main.cjs'), process.argv);

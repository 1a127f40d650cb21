/**
 * Baton's version, from the package.json of the checkout or install that runs: the first one
 * above this file (dist/src/cli/ or the bundle's dist/src/cli-bundle/) that names the package
 * `baton`. `baton --version` prints it; `baton mcp` tells its client.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function batonVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (pkg.name === 'baton' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // No package.json here, or not one to read: look further up.
    }
    const up = dirname(dir);
    if (up === dir) return 'unknown (no package.json of baton above this install)';
    dir = up;
  }
}

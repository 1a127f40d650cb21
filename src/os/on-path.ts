/** Whether a program an agent command names would be found: on PATH, or at the path it gives. */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** As a shell finds `program`: a name with a slash as that path, else the first PATH entry holding it. */
export function onPath(program: string, path: string = process.env['PATH'] ?? ''): boolean {
  if (program.includes('/')) return executable(isAbsolute(program) ? program : resolve(program));
  return path
    .split(delimiter)
    .filter((dir) => dir !== '')
    .some((dir) => executable(join(dir, program)));
}

/**
 * `baton doctor --json` run as a user runs it (the bin, `--db` only: no BATON_DB, BATON_URL or
 * token from the test's environment), answering its exit code and the one check the test reads.
 */
import { execFile } from 'node:child_process';
import { repoRoot } from './cli.js';

export interface DoctorCheck {
  readonly id: string;
  readonly level: string;
  readonly found: string;
  readonly fix: string | null;
}

/** Runs `baton --db <url> doctor --json`; `check` is the one with id `id`, if doctor ran it. */
export function doctorCheck(
  url: string,
  id: string,
): Promise<{ code: number; check: DoctorCheck | undefined }> {
  const env = { ...process.env };
  for (const name of ['BATON_DB', 'BATON_URL', 'BATON_TOKEN', 'BATON_DEBUG']) delete env[name];
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['bin/baton.js', '--db', url, 'doctor', '--json'],
      { cwd: repoRoot(), env },
      (error, stdout) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        const checks = (JSON.parse(stdout) as { checks: DoctorCheck[] }).checks;
        done({ code, check: checks.find((one) => one.id === id) });
      },
    );
  });
}

/**
 * Placeholders stay data wherever they are allowed, and are refused where they would not. The
 * rendered commands run in a real /bin/sh with hostile titles: nothing globs, splits or runs.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidInputError } from './errors.js';
import { renderCommand, validateCommandTemplate } from './command-template.js';

/** Runs a template in /bin/sh in a fresh directory with the title set; returns stdout lines. */
function run(template: string, title: string): { lines: string[]; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'baton-tpl-'));
  writeFileSync(join(dir, 'a-file'), '');
  const out = execFileSync('/bin/sh', ['-c', renderCommand(template)], {
    cwd: dir,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', BATON_TITLE: title, BATON_KEY: 'k' },
    encoding: 'utf8',
  });
  return { lines: out.split('\n').filter((l) => l !== ''), dir };
}

const ARGS = 'for a in "$@"; do printf "[%s]\\n" "$a"; done';

describe('command templates', () => {
  test('a bare placeholder is one argument: no glob, no word splitting, no code', () => {
    for (const title of [
      '* --version',
      '-rf /',
      'a  b',
      '$(touch pwned)',
      '`touch pwned`',
      'x; touch pwned',
    ]) {
      const { lines, dir } = run(`sh -c '${ARGS}' sh {{title}}`, title);
      assert.deepEqual(lines, [`[${title}]`]);
      assert.ok(!readdirSync(dir).includes('pwned'), `ran code from ${title}`);
    }
  });

  test('a placeholder inside double quotes or glued to other text stays data too', () => {
    assert.deepEqual(run(`sh -c '${ARGS}' sh "T: {{title}}!"`, '* ; $(id)').lines, ['[T: * ; $(id)!]']);
    assert.deepEqual(run(`sh -c '${ARGS}' sh --title={{title}}`, 'a b*').lines, ['[--title=a b*]']);
  });

  test('refuses a placeholder in single quotes, backticks, $(…), ${…}, or a here-document', () => {
    for (const template of [
      "echo '{{title}}'",
      "echo $'{{title}}'",
      'echo `{{title}}`',
      'echo "$(echo {{title}})"',
      'echo ${X:-{{title}}}',
      'cat <<EOF\n{{title}}\nEOF',
    ]) {
      assert.throws(() => validateCommandTemplate(template), InvalidInputError, template);
    }
  });

  test('refuses a placeholder that a nested shell, eval, ssh or an interpreter would run as code', () => {
    for (const template of [
      'sh -c "echo {{title}}"',
      'bash -lc {{title}}',
      'env A=1 timeout 5 sh -c "{{title}}"',
      'su -c "{{title}}" bob',
      'eval "echo {{title}}"',
      'ssh host echo {{title}}',
      'python3 -c "print(\'{{title}}\')"',
      'node -e "{{title}}"',
      'node --no-warnings -p "{{title}}"',
      'python3 -W ignore -c {{title}}',
    ]) {
      assert.throws(
        () => validateCommandTemplate(template),
        /runs it as code|as code|program text/,
        template,
      );
    }
  });

  test('accepts a placeholder passed as an argument after the code, and the documented agent commands', () => {
    for (const template of [
      `sh -c 'echo "$1"' sh {{title}}`,
      'python3 -c "import sys; print(sys.argv[1])" {{title}}',
      'claude -p "Work on {{key}}: {{title}}"',
      'node "/opt/claude/cli.js" -p "Work on {{key}}" --output-format json',
      'python3 tools/run.py -c {{title}}',
      "docker inspect -f '{{.State}}' {{key}}",
      'echo {{key}} # {{title}} in a comment',
    ]) {
      assert.equal(validateCommandTemplate(template), template);
    }
  });

  test('refuses an unknown placeholder, naming the ones there are', () => {
    assert.throws(() => validateCommandTemplate('echo {{tittle}}'), /unknown placeholder \{\{tittle\}\}/);
  });

  test("takes Object's own names as words, never as a placeholder or a program's code flags", () => {
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      assert.throws(() => validateCommandTemplate(`echo {{${name}}}`), /unknown placeholder/, name);
      const template = `${name} -e {{key}}`;
      assert.equal(validateCommandTemplate(template), template);
      assert.equal(renderCommand(template), `${name} -e "\${BATON_KEY}"`);
    }
  });
});

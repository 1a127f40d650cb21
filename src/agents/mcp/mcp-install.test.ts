/**
 * `baton mcp --install <client>` on real config files: twice gives one Baton entry, the user's
 * other tables and servers stay as they were (a TOML file byte for byte), a file from the old
 * `--print-config codex >> config.toml` run twice is repaired, and a file it cannot read is refused.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baton } from '../../../test/support/cli.js';
import { assertOneErrorLine } from '../../../test/support/cli-suite.js';

const MINE = [
  '# my codex settings',
  'model = "o3"',
  'notes = """',
  '[mcp_servers.baton]',
  'a multi-line string, not a table"""',
  '',
  '[mcp_servers.other]',
  'command = "other-server"',
  'args = [',
  '  "--flag", # a comment in an array',
  ']',
  '',
  '[mcp_servers.other.env]',
  'TOKEN = "x"',
  '# a last comment',
].join('\n');

const headers = (text: string): number => text.split('\n').filter((l) => l === '[mcp_servers.baton]').length;

describe('baton mcp --install', () => {
  test('codex: twice gives one table after the untouched rest; a new database replaces it in place', async () => {
    const home = mkdtempSync(join(tmpdir(), 'baton-codex-'));
    const file = join(home, 'config.toml');
    writeFileSync(file, MINE);
    const snippet = (await baton('/srv/a.db', 'mcp', '--print-config', 'codex')).stdout;
    const first = await baton('/srv/a.db', 'mcp', '--install', 'codex', '--file', file);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, `wrote Baton's MCP server into ${file}\n`);
    assert.equal(readFileSync(file, 'utf8'), `${MINE}\n\n${snippet}`);
    const second = await baton('/srv/a.db', '--json', 'mcp', '--install', 'codex', '--file', file);
    assert.deepEqual(JSON.parse(second.stdout), { client: 'codex', file, changed: false });
    assert.equal(readFileSync(file, 'utf8'), `${MINE}\n\n${snippet}`, 'twice: one table');

    writeFileSync(file, `${MINE}\n\n${snippet}\n[profiles.fast]\nmodel = "o4-mini"\n`);
    const moved = (await baton('/srv/b.db', 'mcp', '--print-config', 'codex')).stdout;
    assert.equal((await baton('/srv/b.db', 'mcp', '--install', 'codex', '--file', file)).code, 0);
    assert.equal(readFileSync(file, 'utf8'), `${MINE}\n\n${moved}\n[profiles.fast]\nmodel = "o4-mini"\n`);
  });

  test('codex: the default file is $CODEX_HOME/config.toml, and a file appended to twice is repaired', async () => {
    const home = mkdtempSync(join(tmpdir(), 'baton-codex-'));
    const file = join(home, 'config.toml');
    const snippet = (await baton('/srv/a.db', 'mcp', '--print-config', 'codex')).stdout;
    writeFileSync(file, `${MINE}\n${snippet}${snippet}`);
    const r = await baton('/srv/a.db', 'mcp', '--install', 'codex', '--file', file);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(file, 'utf8'), `${MINE}\n${snippet}`);
    assert.equal(headers(readFileSync(file, 'utf8')), 2, "one table, and the string's line");
    process.env['CODEX_HOME'] = home;
    try {
      const viaHome = await baton('/srv/a.db', '--json', 'mcp', '--install', 'codex');
      assert.deepEqual(JSON.parse(viaHome.stdout), { client: 'codex', file, changed: false });
    } finally {
      delete process.env['CODEX_HOME'];
    }
  });

  test('refuses a file it cannot read, a defined-twice table, or a missing folder, and changes nothing', async () => {
    const home = mkdtempSync(join(tmpdir(), 'baton-codex-'));
    const file = join(home, 'config.toml');
    for (const [text, why] of [
      ['model = "o3\n[x]\n', 'line 1: a string is not closed'],
      ['[model\n', 'line 1: a table header is not closed'],
      ['args = ["a",\n', 'an array or inline table is not closed'],
      ['[x]\na = 1\n[x]\nb = 2\n', 'line 3: table x is defined twice'],
      ['[mcp_servers]\nbaton = { command = "b" }\n', "defines Baton's server as mcp_servers.baton"],
    ] as const) {
      writeFileSync(file, text);
      const line = assertOneErrorLine(
        await baton('/srv/a.db', 'mcp', '--install', 'codex', '--file', file),
        2,
        text,
      );
      assert.ok(line.includes(why), line);
      assert.match(line, /nothing was changed/);
      assert.equal(readFileSync(file, 'utf8'), text);
    }
    const missing = join(home, 'nope', 'config.toml');
    assertOneErrorLine(await baton('/srv/a.db', 'mcp', '--install', 'codex', '--file', missing), 2, 'folder');
    assert.equal(existsSync(join(home, 'nope')), false);
  });

  test('codex: a private file stays private, and a linked file is written through its link', async () => {
    const home = mkdtempSync(join(tmpdir(), 'baton-codex-'));
    const dotfiles = join(home, 'dotfiles-config.toml');
    writeFileSync(dotfiles, MINE, { mode: 0o600 });
    chmodSync(dotfiles, 0o600);
    const file = join(home, 'config.toml');
    symlinkSync(dotfiles, file);
    const installed = await baton('/srv/a.db', 'mcp', '--install', 'codex', '--file', file);
    assert.equal(installed.code, 0, installed.stderr);
    assert.equal(lstatSync(file).isSymbolicLink(), true, 'the link stays a link');
    assert.equal(headers(readFileSync(dotfiles, 'utf8')), headers(MINE) + 1, 'its target holds Baton');
    assert.equal(statSync(dotfiles).mode & 0o777, 0o600, 'still private');
    assert.deepEqual(readdirSync(home).sort(), ['config.toml', 'dotfiles-config.toml'], 'no temporary left');
  });

  test("claude: merges into .mcp.json, keeping the user's other servers, idempotently", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-mcp-json-'));
    const file = join(dir, '.mcp.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { other: { command: 'o' } }, extra: 1 }));
    assert.equal((await baton('/srv/a.db', 'mcp', '--install', 'claude', '--file', file)).code, 0);
    const once = readFileSync(file, 'utf8');
    const config = JSON.parse(once) as { mcpServers: Record<string, { env?: unknown }>; extra: number };
    assert.deepEqual(Object.keys(config.mcpServers), ['other', 'baton']);
    assert.deepEqual(config.mcpServers['baton']?.env, { BATON_DB: '/srv/a.db' });
    assert.equal(config.extra, 1);
    assert.equal((await baton('/srv/a.db', 'mcp', '--install', 'claude', '--file', file)).code, 0);
    assert.equal(readFileSync(file, 'utf8'), once);
    writeFileSync(file, '{ "mcpServers": ');
    assertOneErrorLine(await baton('/srv/a.db', 'mcp', '--install', 'claude', '--file', file), 2, 'not JSON');
    assert.equal(readFileSync(file, 'utf8'), '{ "mcpServers": ');
  });

  test("replaces Baton's table and its subtables in place, nothing else", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-codex-')), 'config.toml');
    const ours = (await baton('/srv/a.db', 'mcp', '--print-config', 'codex')).stdout;
    writeFileSync(
      file,
      'a = 1\n\n[mcp_servers.baton]\ncommand = "old"\n\n[mcp_servers.baton.env]\nX = "1"\n# kept\n[b]\nc = 2\n',
    );
    assert.equal((await baton('/srv/a.db', 'mcp', '--install', 'codex', '--file', file)).code, 0);
    assert.equal(readFileSync(file, 'utf8'), `a = 1\n\n${ours}# kept\n[b]\nc = 2\n`);
  });
});

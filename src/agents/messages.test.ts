/**
 * Guidance for models: every message that tells an agent it is held off or fenced off (in an MCP
 * tool result or a Claude Code hook) names who holds the task now, when anyone does, and says what
 * to do next; and each MCP tool that can answer ok:false says so in its description.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Holder } from '../core/claim.js';
import { fencedRefusal } from '../coordinator/refusals.js';
import { fencedMessage, heldAtStartMessage, heldMessage } from './messages.js';
import { TOOL_DESCRIPTIONS } from './mcp/descriptions.js';

const KEY = 'github:acme/api#5';
const holder: Holder = { session: 7, host: 'desk-7', since: Date.UTC(2026, 0, 2, 3, 4, 5), epoch: 3 };
const NEXT_STEP = /(Pick another task|[Tt]ell the user)/;

test('every held or fenced message names the holder, tells the model to stop, and says what to do next', () => {
  const withHolder = [
    heldMessage(KEY, holder),
    heldAtStartMessage(KEY, holder),
    fencedMessage(KEY, 2, holder),
    fencedMessage(KEY, 2, holder, 'moved'),
    fencedMessage(KEY, 2, holder, 'session_ended'),
  ];
  for (const message of withHolder) {
    assert.match(message, /session 7 on desk-7 since 2026-01-02T03:04:05\.000Z \(epoch 3\)/, message);
    assert.match(message, new RegExp(KEY.replace(/[#/]/g, '\\$&')), message);
    assert.match(message, /\bStop\b/, message);
    assert.match(message, NEXT_STEP, message);
  }
  const noHolder = [
    [fencedMessage(KEY, 2, null), /at epoch 2 is not current: no one holds it now\./],
    [fencedMessage(KEY, 2, null, 'released'), /at epoch 2 is not current: no one holds it now\./],
    [
      fencedMessage(KEY, 2, null, 'session_ended'),
      /its session has ended, and no one holds github:acme\/api#5 now/,
    ],
  ] as const;
  for (const [message, who] of noHolder) {
    assert.match(message, who, message);
    assert.match(message, /\bStop\b/, message);
    assert.match(message, NEXT_STEP, message);
  }
});

test("a fenced message says the CLI's words: never granted, another session's, older, none, ended", () => {
  const cases = [
    {
      epoch: 4,
      current: holder,
      ended: false,
      says: /^Baton: epoch 4 was never granted for \S+: it is held by session 7 /,
    },
    {
      epoch: 3,
      current: holder,
      ended: false,
      says: /at epoch 3 is not this session's: it is held by session 7 /,
    },
    {
      epoch: 2,
      current: holder,
      ended: false,
      says: /at epoch 2 is no longer current: it is now held by session 7 /,
    },
    { epoch: 2, current: null, ended: false, says: /at epoch 2 is not current: no one holds it now\. / },
    {
      epoch: 2,
      current: holder,
      ended: true,
      says: /at epoch 2 is not current: its session has ended, and \S+ is held by /,
    },
  ];
  for (const { epoch, current, ended, says } of cases) {
    const message = fencedMessage(KEY, epoch, current, ended ? 'session_ended' : undefined);
    assert.match(message, says, message);
    const cli = fencedRefusal(KEY, String(epoch), current, ended).message;
    assert.ok(message.startsWith(`Baton: ${cli}. Stop working on ${KEY} now`), `${message}\nvs ${cli}`);
  }
});

test('each MCP tool that can refuse says in its description what to do on ok:false', () => {
  const refusing = [
    'baton_next',
    'baton_claim',
    'baton_heartbeat',
    'baton_release',
    'baton_effect',
    'baton_escalate',
  ] as const;
  for (const name of refusing) {
    const description = TOOL_DESCRIPTIONS[name];
    assert.match(description, /ok:false/, name);
    assert.match(description, /\bstop\b|do not work on it/i, name);
    assert.match(description, /[Cc]all it|when|before/, `${name} says when to call it`);
  }
  assert.match(TOOL_DESCRIPTIONS.baton_status, /current:false .* stop working on that task/);
});

/**
 * The MCP tools' input and output schemas. Each input field's error message is the hint a model
 * needs to fix its call, since the SDK turns a failed parse into a tool error carrying it.
 */
import { z } from 'zod';
import { RELEASE_OUTCOMES } from '../../core/claim.js';

/**
 * The message for a field that is missing or of the wrong type: "is required" only when it is
 * missing, else what was given (a model that writes "2" for 2 is not told the epoch is missing).
 */
const missingOr =
  (required: string, mustBe: string, hint: string) =>
  (issue: { readonly input?: unknown }): string =>
    issue.input === undefined ? required : `${mustBe}, not ${JSON.stringify(issue.input)}: ${hint}`;

const key = z
  .string({
    error: missingOr(
      'key is required: the task key, such as github:acme/api#12 (baton_status lists yours)',
      'key must be a string',
      'the task key, such as "github:acme/api#12"',
    ),
  })
  .min(1, { error: 'key must not be empty: give the task key, such as github:acme/api#12' })
  .max(200, { error: 'key is at most 200 characters: give the task key, such as github:acme/api#12' })
  .describe('The task key, such as github:acme/api#12.');

const epoch = z
  .number({
    error: missingOr(
      'epoch is required: the number baton_claim returned for this task (baton_status shows it)',
      'epoch must be a JSON number',
      'the one baton_claim returned, written as a number (2, not "2")',
    ),
  })
  .int({ error: 'epoch is a whole number: the one baton_claim returned' })
  .min(1, { error: 'epoch is 1 or more: the number baton_claim returned' })
  .describe('The epoch baton_claim returned for this task.');

export const holderSchema = z
  .object({
    session: z.number().int().describe('The Baton session that holds the task.'),
    host: z.string().describe('The machine that session runs on.'),
    since: z.string().describe('When it claimed the task (ISO 8601).'),
    epoch: z.number().int().describe("The epoch of that session's claim."),
  })
  .describe('Who holds the task.');

const message = z.string().describe('What happened and what to do next, in words.');

/**
 * A tool's arguments, strict: the SDK wraps a bare shape in a non-strict object, which drops a
 * misspelt argument ({"epok": 2}) without a word while the call goes on. A strict object refuses
 * it, naming it and the arguments the tool takes, as the HTTP API refuses an unknown body field
 * (http/kit.ts); its JSON Schema says additionalProperties: false.
 */
const strict = <Shape extends z.ZodRawShape>(shape: Shape) =>
  z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? unknownArguments(issue.keys, shape) : undefined),
  });

function unknownArguments(unknown: readonly string[], shape: z.ZodRawShape): string {
  const many = unknown.length > 1;
  const names = unknown.map((name) => `"${name}"`).join(', ');
  const taken = Object.keys(shape);
  const takes = taken.length === 0 ? 'no arguments' : taken.join(', ');
  const fix = many ? 'leave them out or correct their names' : 'leave it out or correct its name';
  return `unknown argument${many ? 's' : ''} ${names}: ${fix}; this tool takes ${takes}`;
}

export const claimInput = strict({ key });
export const claimRefInput = strict({ key, epoch });
export const releaseInput = strict({
  key,
  epoch,
  outcome: z
    .enum(RELEASE_OUTCOMES, {
      error: 'outcome must be done (finished), failed (could not do it) or released (stopped)',
    })
    .describe(
      'done: the work is finished; failed: you could not do it; released: you stop without finishing.',
    ),
});
export const effectInput = strict({
  key,
  epoch,
  kind: z
    .string({ error: 'kind is required: a short word such as pr, push or comment' })
    .min(1, { error: 'kind must not be empty: a short word such as pr, push or comment' })
    .max(100, { error: 'kind is at most 100 characters: a short word such as pr' })
    .describe('What you did, in one word: pr, push, comment, deploy...'),
  payload: z
    .unknown()
    .optional()
    .describe('A JSON value describing it, such as {"url": "https://github.com/acme/api/pull/7"}.'),
});
export const showTaskInput = strict({ key });
export const statusInput = strict({});

const filter = (what: string, example: string) =>
  z
    .string({ error: `${what} is a name, such as ${example}` })
    .min(1, { error: `${what} must not be empty: leave it out to take any task` })
    .max(100, { error: `${what} is at most 100 characters, such as ${example}` })
    .optional();

export const nextInput = strict({
  label: filter('label', 'bug').describe('Only tasks with this label. Leave out to take any task.'),
  project: filter('project', 'acme/api').describe('Only tasks of this project. Leave out for any.'),
});

export const escalateInput = strict({
  key,
  epoch,
  reason: z
    .string({ error: 'reason is required: say in a sentence what the human must decide or do' })
    .min(1, { error: 'reason must not be empty: say what the human must decide or do' })
    .max(2000, { error: 'reason is at most 2000 characters: say it in a few sentences' })
    .describe('What a human must decide or do before the work can go on, in a sentence or two.'),
});

/** The answer of every claim-bearing tool: ok, and on ok:false why and who holds the task now. */
export const claimOutput = {
  ok: z.boolean().describe('true: go on; false: stop working on this task (unless reason is wrong_epoch).'),
  key: z.string(),
  session: z.number().int().nullable().describe('Your Baton session.'),
  epoch: z.number().int().optional().describe('The epoch of your claim: pass it to the other tools.'),
  granted: z.boolean().optional().describe('false when you held the task already (the same epoch).'),
  reason: z
    .enum(['held', 'fenced', 'wrong_epoch'])
    .optional()
    .describe(
      'held: someone else has it; fenced: your claim is gone; wrong_epoch: you hold it at holder.epoch, ' +
        'not the epoch you gave: nothing changed, use that epoch.',
    ),
  holder: holderSchema.nullable().optional().describe('Who holds the task now; null when no one does.'),
  message,
};

/** baton_release's answer: a claim's, and whether it was released or kept for the runner. */
export const releaseOutput = {
  ...claimOutput,
  released: z
    .boolean()
    .optional()
    .describe(
      'false: nothing released, the runner holds the claim for this run and records it by your exit.',
    ),
};

export const nextOutput = {
  ...claimOutput,
  key: z.string().nullable().describe('The task you now hold; null when no task was free.'),
  title: z.string().optional().describe('Its title.'),
  url: z.string().nullable().optional().describe('Its web page (an issue), if it has one.'),
  gated: z
    .array(z.object({ key: z.string(), gate: z.string().nullable() }))
    .optional()
    .describe('With no task free: open tasks that wait for a human approval gate.'),
};

export const effectOutput = {
  ...claimOutput,
  effect: z
    .object({ id: z.number().int(), kind: z.string(), recordedAt: z.string() })
    .optional()
    .describe('The recorded effect.'),
};

export const statusOutput = {
  session: z.number().int().nullable().describe('Your Baton session; null until a tool needed one.'),
  state: z.enum(['none', 'live', 'ended', 'stale']).describe('live: in good standing.'),
  claims: z
    .array(
      z.object({
        key: z.string(),
        epoch: z.number().int(),
        current: z.boolean().describe('false: fenced off, stop working on it.'),
        since: z.string().optional().describe('When your session claimed it (ISO 8601), while it holds it.'),
        heartbeatAt: z
          .string()
          .optional()
          .describe("The claim's last heartbeat (ISO 8601), while it holds it."),
        holder: holderSchema.nullable().describe('Who holds the task now.'),
      }),
    )
    .describe(
      "Your session's live claims, whichever process made them, and those this server made that are gone.",
    ),
  tokenSession: z
    .number()
    .int()
    .optional()
    .describe('Set when BATON_TOKEN is bound to another session than yours: every change is refused.'),
  message,
};

export const taskOutput = {
  key: z.string(),
  title: z.string(),
  priority: z.number().int(),
  labels: z.array(z.string()),
  holder: holderSchema.nullable(),
  jobs: z.array(
    z.object({
      id: z.number().int(),
      status: z.string(),
      attempt: z.number().int(),
      host: z.string().nullable(),
      reason: z.string().nullable(),
    }),
  ),
  message,
};

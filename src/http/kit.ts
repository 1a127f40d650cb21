/**
 * What every route of the API shares: the error schema and responses for the OpenAPI document,
 * JSON bodies and results, and the hook that turns a schema's refusal into a 400 with the field
 * named. Routes are declared with @hono/zod-openapi, so one schema both checks the request and
 * documents it in /openapi.json.
 */
import { isUtf8 } from 'node:buffer';
import { createRoute, OpenAPIHono, z, type RouteConfig } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler, ValidationTargets } from 'hono';
import type { Coordinator } from '../coordinator/coordinator.js';
import { LIST_LIMIT_MAX } from '../coordinator/inputs.js';
import { toWire } from '../coordinator/wire.js';
import { quoted } from '../core/text.js';
import { PLAIN_DIGITS } from '../core/validate.js';
import type { AuthEnv } from './auth.js';
import { errorBody } from './errors.js';

export type Api = OpenAPIHono<AuthEnv>;

export interface ApiDeps {
  readonly coordinator: Coordinator;
  /** Where this process reads job logs (`baton up`'s log folder); left out, none are read here. */
  readonly logDir?: string | undefined;
}

const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: 'held' }),
      message: z.string(),
      hint: z.string().nullable(),
      details: z.record(z.string(), z.unknown()),
    }),
  })
  .openapi('Error');

const errorContent = (description: string) => ({
  description,
  content: { 'application/json': { schema: ErrorSchema } },
});

/** The refusals every route may answer with, in the document. */
const ERRORS = {
  400: errorContent('bad input: the field and how to fix it'),
  401: errorContent('no token, or one that is unknown, expired or revoked'),
  403: errorContent("beyond the token's scope; written to the ledger as auth:refused"),
  404: errorContent('no such task, session, job, host or token'),
  409: errorContent("held (naming the holder), fenced, lost, or the task's state refuses it"),
  422: errorContent('the request cannot be carried out as configured (workspace_unresolved)'),
  503: errorContent('the database is unreachable'),
} as const;

/** A 200 answer whose body is described in words (the CLI's --json shape of the same command). */
export const ok = (description: string) => ({
  200: { description, content: { 'application/json': { schema: z.any() } } },
  ...ERRORS,
});

/** A 200 answer whose body the document describes field by field with `schema`. */
export const okWith = (description: string, schema: z.ZodType) => ({
  200: { description, content: { 'application/json': { schema } } },
  ...ERRORS,
});

/**
 * A route's JSON body. Its schema is strict (z.strictObject, its nested objects too; the document
 * says additionalProperties: false): a field the route does not take, such as a misspelt
 * "priorty", is refused with 400 naming it rather than dropped while the rest is carried out.
 * test/http/strict-bodies.test.ts checks every object of every body in the document.
 *
 * Query strings are not strict, on purpose: they only filter reads (no route changes anything
 * from its query), and browsers, proxies and dashboards add parameters of their own (cache
 * busters, utm_*), which would turn a harmless read into a refusal.
 */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  body: { content: { 'application/json': { schema } }, required: true },
});

/**
 * A body sent to a route that takes none is refused the same way (400 `invalid_input` naming the
 * route), rather than ignored while the route is carried out: `{"force": true}` to
 * `POST /v1/jobs/{id}/cancel` would otherwise cancel the job as if it meant something. An
 * empty body and `{}` (what Baton's own clients send) are taken.
 */
const noBody: MiddlewareHandler = async (context, next) => {
  const text = (await context.req.text()).trim();
  if (text === '' || /^\{\s*\}$/.test(text)) return next();
  const route = routeName(context);
  return context.json(
    errorBody(
      'invalid_input',
      `${route} takes no body, got ${JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text)}`,
      `leave the body out: GET /openapi.json lists what ${route} takes`,
      {},
    ),
    400,
  );
};

/** A JSON content type, as the route's validator takes one (application/json, application/x+json). */
const JSON_TYPE = /^application\/([a-z-.]+\+)?json/i;

/**
 * A JSON body that is not valid UTF-8 is refused with 400, changing nothing. JSON is UTF-8
 * (RFC 8259), and the validator decodes it leniently: a byte such as 0xFF became U+FFFD, which was
 * then stored in a task's title or a progress note. Only the bodies of routes that take JSON are
 * checked here, when they are sent as JSON (any other type is the validator's 415); the bytes are
 * read once, and the validator parses them from Hono's cache.
 */
const utf8Body: MiddlewareHandler = async (context, next) => {
  if (!JSON_TYPE.test(context.req.header('content-type') ?? '')) return next();
  if (isUtf8(await context.req.arrayBuffer())) return next();
  return context.json(
    errorBody(
      'invalid_input',
      `the body is not valid UTF-8: ${routeName(context)} takes JSON, which is UTF-8 text`,
      'encode the body as UTF-8 (a byte such as 0xFF, or Latin-1 text, is not)',
    ),
    400,
  );
};

/**
 * Declares a route (createRoute): one that takes a JSON body checks that it is UTF-8; one that
 * changes something without a body refuses any.
 */
export const route = <P extends string, R extends Omit<RouteConfig, 'path'> & { path: P }>(config: R) => {
  const takesNone = config.method !== 'get' && config.request?.body === undefined;
  const own = config.middleware === undefined ? [] : [config.middleware].flat();
  const checks = takesNone ? [noBody] : config.request?.body === undefined ? [] : [utf8Body];
  return createRoute<P, R>(checks.length === 0 ? config : { ...config, middleware: [...own, ...checks] });
};

/**
 * The form of every whole number the API reads from a path or a query, in one set of words: the
 * range, the form and what was given (`limit: must be a whole number from 1 to 1000 in plain digits
 * (no sign, spaces, decimals, exponent or leading zeros), got "05"`, the hook adding the name).
 */
const wholeForm = (min: number, max: number) =>
  `a whole number from ${min} to ${max} in plain digits (no sign, spaces, decimals, exponent or leading zeros)`;
const wholeWords = (min: number, max: number) => (issue: { readonly input?: unknown }) =>
  `must be ${wholeForm(min, max)}, got ${quoted(issue.input)}`;

/**
 * A whole number in [min, max] written in plain digits, read as a number; one message for every
 * way it can be wrong (not a number, a fraction, out of range, an odd form). JavaScript's Number()
 * and the coordinator's validateInteger (which the CLI's flags go through, trimmed) would take
 * `05`, ` 5`, `+5`, `5.0`, `1e1` or `0x5` as 5 or 10: in a URL those are typos, refused naming the
 * parameter rather than read as something the caller did not write.
 */
const whole = (min: number, max: number) =>
  z
    .string()
    .refine((digits) => PLAIN_DIGITS.test(digits) && Number(digits) >= min && Number(digits) <= max, {
      error: wholeWords(min, max),
    })
    .transform(Number);

/**
 * A path id: the digits of a whole number from 1, as `baton` prints it, and nothing else: a
 * `POST /v1/jobs/0x1/cancel` cancelled job 1, where the CLI refuses `baton job show 0x2`.
 */
export const Id = whole(1, Number.MAX_SAFE_INTEGER).openapi({
  param: { in: 'path' },
  type: 'integer',
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
  example: 7,
});

/**
 * A whole number in a query, in [min, max] (the coordinator's range for it, which it checks again
 * for the CLI's flags), written as a path id is (`whole`). Documented as an integer parameter.
 */
export const QueryNumber = (min: number, max: number, description: string) =>
  whole(min, max).openapi({ type: 'integer', minimum: min, maximum: max, description });

const MANY = Number.MAX_SAFE_INTEGER;
/** The whole numbers the reads take in their queries, by name (`Query`). */
const QUERY_NUMBERS = {
  limit: QueryNumber(1, LIST_LIMIT_MAX, `at most this many (1 to ${LIST_LIMIT_MAX})`),
  before: QueryNumber(1, MANY, 'a job id: only the finished jobs older than it'),
  after: QueryNumber(0, MANY, 'a row id: only the rows after it'),
  session: QueryNumber(1, MANY, "a session id: only that session's rows"),
  job: QueryNumber(1, MANY, "a job id: only that job's rows"),
} as const;

/** A read's query: `names` as text, `numbers` whole numbers as QUERY_NUMBERS checks them. */
export const Query = (names: readonly string[], numbers: readonly (keyof typeof QUERY_NUMBERS)[] = []) =>
  z.object({
    ...Object.fromEntries(names.map((name) => [name, z.string().optional()])),
    ...Object.fromEntries(numbers.map((name) => [name, QUERY_NUMBERS[name].optional()])),
  });

/** The latest time a JavaScript Date holds, in epoch ms (Date.parse's own range). */
const MAX_DATE_MS = 8.64e15;
/** An ISO date, perhaps with its time: 2026-12-07, 2026-12-07T10:00:00Z, +275760-09-13. */
const ISO_DATE = /^([+-]\d{6}|\d{4})-\d{2}-\d{2}([T ]|$)/;
const instantMs = (text: string): number =>
  PLAIN_DIGITS.test(text) ? Number(text) : ISO_DATE.test(text) ? Date.parse(text) : Number.NaN;

/**
 * A time in a query: epoch ms, in plain digits as every whole number the API reads (`05`, ` 5`
 * and `+5` were read by Date.parse as May 2001), or an ISO date; one JavaScript holds (|ms| <=
 * 8.64e15): beyond it PostgreSQL refuses the bigint or the interval, which answered 500.
 */
export const QueryInstant = (description: string) =>
  z
    .string()
    .refine((text) => Math.abs(instantMs(text)) <= MAX_DATE_MS, {
      error: (issue) =>
        `must be epoch ms, ${wholeForm(0, MAX_DATE_MS)}, or an ISO time no later than the year 275760, ` +
        `got ${quoted(issue.input)}`,
    })
    .transform(instantMs)
    .openapi({ type: 'string', description, example: '2026-12-07T00:00:00Z' });

export const Key = z
  .string()
  .min(1)
  .openapi({
    param: { in: 'path' },
    description: 'the task key, URL-encoded',
    example: 'github:acme/api#1246',
  });
export const SessionId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER).openapi({ example: 7 });
export const Epoch = z.number().int().positive().max(Number.MAX_SAFE_INTEGER).openapi({ example: 1 });
const text = z.string().max(100_000);
export const Text = text;

/** The result as the CLI's --json prints it: Instants as ISO strings. */
export function result(context: Context<AuthEnv>, value: unknown) {
  return context.json(toWire(value) as Record<string, unknown>, 200);
}

/** A body field the route does not take, named by its path ("priorty", "finish.0.epok"). */
function unknownFields(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...issue.path, key].join('.')) : [],
  );
}

/** The route as the OpenAPI document names it: POST /v1/tasks/{key}/close. */
const routeName = (context: Context) =>
  `${context.req.method} ${context.req.routePath.replace(/:(\w+)/g, '{$1}')}`;

/** The 400 for body fields the route does not take: each named, and where to read the right ones. */
function unknownFieldsBody(unknown: readonly string[], where: string, issues: readonly unknown[]) {
  const many = unknown.length > 1;
  const names = unknown.map((name) => `"${name}"`).join(', ');
  const fix = many ? 'leave them out or correct their names' : 'leave it out or correct its name';
  return errorBody(
    'invalid_input',
    `unknown field${many ? 's' : ''} ${names} in the body of ${where}`,
    `${fix}: GET /openapi.json lists the fields of ${where}`,
    { unknown, issues },
  );
}

/**
 * Whether `issue` is about a field the request left out: zod calls that a value of the wrong type
 * (code invalid_type), and the input the hook is given has nothing at the issue's path. Read from
 * the issue's code and the input, not from zod's words ("…, received undefined"), which change
 * between its versions (zod 4 no longer says what it received in the issue itself).
 */
function leftOut(issue: z.core.$ZodIssue | undefined, input: unknown): boolean {
  if (issue?.code !== 'invalid_type' || issue.path.length === 0) return false;
  let value = input;
  for (const step of issue.path) {
    if (typeof value !== 'object' || value === null) return value === undefined;
    value = Object.hasOwn(value, step) ? (value as Record<PropertyKey, unknown>)[step] : undefined;
  }
  return value === undefined;
}

/** What the request gave for the part a schema refused: its JSON body (as read), query or path. */
async function given(context: Context, target: keyof ValidationTargets): Promise<unknown> {
  if (target === 'json') return context.req.json<unknown>().catch(() => undefined);
  if (target === 'query') return context.req.query();
  if (target === 'param') return context.req.param();
  return undefined;
}

export function newApi(): Api {
  return new OpenAPIHono<AuthEnv>({
    defaultHook: async (outcome, context) => {
      if (outcome.success) return undefined;
      const issues = outcome.error.issues.map((issue) => ({
        path: issue.path.join('.'),
        message: issue.message,
      }));
      // A misspelt field is also a required one missing: the unknown name is what to fix first.
      const unknown = outcome.target === 'json' ? unknownFields(outcome.error.issues) : [];
      if (unknown.length > 0)
        return context.json(unknownFieldsBody(unknown, routeName(context), issues), 400);
      const first = issues[0];
      const where = first === undefined || first.path === '' ? 'the request' : first.path;
      const missing = leftOut(outcome.error.issues[0], await given(context, outcome.target));
      return context.json(
        errorBody(
          'invalid_input',
          missing ? `${where} is required` : `${where}: ${first?.message ?? 'invalid'}`,
          'see /openapi.json for the fields this route takes',
          { issues },
        ),
        400,
      );
    },
  });
}

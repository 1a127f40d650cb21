/**
 * Checks the GitHub stand-in's responses against GitHub's official OpenAPI description
 * (@octokit/openapi, api.github.com.deref.json: every $ref already inlined), with ajv (present
 * in node_modules through eslint; not a dependency of Baton). A response whose status the path
 * does not list (a 500, a rate limit's 403, a list's 304) is checked against GitHub's shared
 * response of that status (`components.responses`), as GitHub sends those on every path.
 */
import Ajv from 'ajv';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { SentResponse } from './github-standin.js';

type Schema = Record<string, unknown>;
interface OpenApiResponse {
  content?: Record<string, { schema: Schema }>;
}
interface Spec {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>
  >;
  components: { responses: Record<string, { content?: Record<string, { schema: Schema }> }> };
}

const SHARED: Record<number, string> = {
  304: 'not_modified',
  403: 'forbidden',
  // A spent rate limit answers 403 or 429, the same error body ("Rate limits for the REST API"); the
  // description lists no 429, so it is checked against the 403's.
  429: 'forbidden',
  404: 'not_found',
  500: 'internal_error',
  503: 'service_unavailable',
};

let spec: Spec | null = null;
let shared: Spec['components'] | null = null;
const generated = (file: string): string =>
  createRequire(import.meta.url).resolve(`@octokit/openapi/generated/${file}`);

function load(): Spec {
  if (spec === null) spec = JSON.parse(readFileSync(generated('api.github.com.deref.json'), 'utf8')) as Spec;
  return spec;
}

/** GitHub's shared responses (the deref file has none), with their $refs inlined. */
function sharedResponse(name: string): OpenApiResponse | undefined {
  if (shared === null) {
    const doc = JSON.parse(readFileSync(generated('api.github.com.json'), 'utf8')) as Spec & {
      components: { schemas: Record<string, Schema> };
    };
    const inline = (value: unknown, depth: number): unknown => {
      if (Array.isArray(value)) return value.map((v) => inline(v, depth));
      if (value === null || typeof value !== 'object') return value;
      const ref = (value as { $ref?: string }).$ref;
      if (ref !== undefined && depth < 20) {
        return inline(doc.components.schemas[ref.replace('#/components/schemas/', '')], depth + 1);
      }
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inline(v, depth)]));
    };
    shared = { responses: inline(doc.components.responses, 0) as Spec['components']['responses'] };
  }
  return shared.responses[name];
}

/**
 * One compiler and one compiled validator per response for the whole test process, shared by
 * every checker: compiling the seven schemas again took 0.3-0.5 s per checker, and each GitHub
 * test case makes one. A validator is a pure function of the body (its `errors` are read at once,
 * in the same synchronous call); what each checker saw and found stays its own.
 */
const ajv = new Ajv({
  nullable: true,
  unknownFormats: 'ignore',
  logger: false,
  allErrors: false,
  schemaId: 'auto',
});
const compiled = new Map<string, Ajv.ValidateFunction | null>();

export class OpenApiChecker {
  private readonly ajv = ajv;
  private readonly compiled = compiled;
  readonly checked: SentResponse[] = [];
  readonly failures: string[] = [];

  /** The schema GitHub documents for this response: undefined when it documents none (no body). */
  schemaOf(r: SentResponse): Schema | null | undefined {
    const op = load().paths[r.route]?.[r.method.toLowerCase()];
    if (op === undefined) throw new Error(`GitHub has no ${r.method} ${r.route}`);
    const own = op.responses[String(r.status)];
    const common = SHARED[r.status];
    const response = own ?? (common === undefined ? undefined : sharedResponse(common));
    if (response === undefined) return null;
    return response.content?.['application/json']?.schema;
  }

  /**
   * Loads the description and compiles the schemas of the responses Baton meets, up front: the
   * first compile of the issue schema takes seconds, which would stall a stand-in serving from
   * the same process.
   */
  warm(): this {
    const ok = (method: string, route: string, status: number) =>
      this.schemaOf({ method, route, status, body: null });
    const routes: [string, string, number][] = [
      ['GET', '/repos/{owner}/{repo}/issues', 200],
      ['GET', '/repos/{owner}/{repo}/issues/{issue_number}', 200],
      ['GET', '/repos/{owner}/{repo}/issues/{issue_number}/timeline', 200],
      ['POST', '/repos/{owner}/{repo}/issues/{issue_number}/labels', 200],
      ['DELETE', '/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}', 200],
      ['POST', '/repos/{owner}/{repo}/issues/{issue_number}/comments', 201],
      ['GET', '/repos/{owner}/{repo}/issues/{issue_number}/comments', 200],
    ];
    for (const [method, route, status] of routes) {
      const schema = ok(method, route, status);
      if (schema !== null && schema !== undefined && !this.compiled.has(`${method} ${route} ${status}`))
        this.compiled.set(`${method} ${route} ${status}`, this.ajv.compile(schema));
    }
    return this;
  }

  /** Records a failure when the response does not match; returns the failure or null. */
  check(r: SentResponse): string | null {
    this.checked.push(r);
    const key = `${r.method} ${r.route} ${r.status}`;
    let validate = this.compiled.get(key);
    if (validate === undefined) {
      const schema = this.schemaOf(r);
      if (schema === null) {
        const failure = `${key}: GitHub documents no such response`;
        this.failures.push(failure);
        return failure;
      }
      validate = schema === undefined ? null : this.ajv.compile(schema);
      this.compiled.set(key, validate);
    }
    if (validate === null) {
      if (r.body === undefined || r.body === null) return null;
      const failure = `${key}: GitHub documents no body, one was sent`;
      this.failures.push(failure);
      return failure;
    }
    if (validate(r.body) === true) return null;
    const failure = `${key}: ${this.ajv.errorsText(validate.errors)}`;
    this.failures.push(failure);
    return failure;
  }
}

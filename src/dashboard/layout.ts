/** The page around every view: header, navigation, the token field or who is signed in, the live region. */
import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import { signInState, type SignedIn } from './login-page.js';

export { age } from '../core/host-liveness.js';

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

export const VIEWS = [
  { path: '/', name: 'queue', title: 'Queue' },
  { path: '/tasks', name: 'tasks', title: 'Tasks' },
  { path: '/inbox', name: 'inbox', title: 'Inbox' },
  { path: '/claims', name: 'claims', title: 'Claims' },
  { path: '/leader', name: 'leader', title: 'Leader' },
  { path: '/hosts', name: 'hosts', title: 'Hosts' },
  { path: '/workspaces', name: 'workspaces', title: 'Workspaces' },
  { path: '/sessions', name: 'sessions', title: 'Sessions' },
  { path: '/audit', name: 'audit', title: 'Audit' },
] as const;
export type ViewName = (typeof VIEWS)[number]['name'] | 'job' | 'task';

export interface PageParams {
  readonly view: ViewName;
  readonly title: string;
  /** Where the live region reloads its fragment from, with the page's filters. */
  readonly fragment: string;
  readonly body: Html;
  /** Who reads the page, signed in by the dashboard's cookie; null when nobody is. */
  readonly signedIn?: SignedIn | null | undefined;
  /**
   * The change mark read before the view's data: the page's live stream starts from it, so a change
   * made between this render and the stream's first poll still reloads the view.
   */
  readonly since?: number | undefined;
}

export function page(params: PageParams): Html {
  const nav = VIEWS.map(
    (view) =>
      html`<li>
        <a href="${view.path}" ${view.name === params.view ? html`aria-current="page"` : ''}>${view.title}</a>
      </li>`,
  );
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${params.title} &middot; Baton</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="/ui/app.css" />
        <script src="/ui/htmx.js"></script>
        <script src="/ui/app.js"></script>
      </head>
      <body hx-ext="baton-json" ${params.since === undefined ? '' : html`data-since="${params.since}"`}>
        <a class="skip" href="#view">Skip to content</a>
        <header>
          <h1>Baton</h1>
          <nav aria-label="Views">
            <ul>
              ${nav}
            </ul>
          </nav>
          ${
            params.signedIn == null
              ? html`<label class="token"
                    >Operator token
                    <input
                      id="token"
                      type="password"
                      autocomplete="off"
                      placeholder="needed for buttons"
                      aria-describedby="token-help"
                    />
                  </label>
                  <span id="token-help" class="muted" hidden
                    >Kept in this tab only (sessionStorage), sent as a bearer token.</span
                  >`
              : ''
          }
          ${signInState(params.signedIn ?? null)}
          <span id="live" class="muted" aria-live="polite">connecting</span>
        </header>
        <main>
          <h2 id="heading">${params.title}</h2>
          <p id="status" role="status" aria-live="polite"></p>
          <div
            id="view"
            tabindex="-1"
            hx-get="${params.fragment}"
            hx-trigger="baton:change from:body"
            hx-swap="innerHTML"
          >
            ${params.body}
          </div>
        </main>
      </body>
    </html>`;
}

export const time = (at: number | null): string => (at === null ? '—' : new Date(at).toISOString());

/** A query string from the filters given, without empty ones. */
export function query(values: Readonly<Record<string, string | number | undefined | null>>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values))
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const search = params.toString();
  return search === '' ? '' : `?${search}`;
}

/**
 * A view's table: scrolls sideways on its own at phone width, headed by one column header each
 * (scope="col", for screen readers), with an optional muted caption.
 */
export function table(columns: readonly string[], rows: readonly Html[], caption?: Html): Html {
  const head = columns.map((column) => html`<th scope="col">${column}</th>`);
  return html`<div class="scroll">
    <table>
      ${
        caption === undefined
          ? ''
          : html`<caption class="muted">
              ${caption}
            </caption>`
      }
      <thead>
        <tr>
          ${head}
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}

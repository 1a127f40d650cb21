/**
 * The sign-in page (`/login`): one labelled field for a token and a submit button, a plain form
 * that works without script, so a browser can use the dashboard on a server run with
 * `--auth required` (src/http/login.ts checks the token and sets the cookie). It loads no
 * script: it must not open the change stream before anyone has signed in.
 */
import { html } from 'hono/html';
import type { Html } from './layout.js';

export interface LoginPageParams {
  /** The local page to return to once signed in. */
  readonly next: string;
  /** Why the last attempt was refused, in one line. */
  readonly error?: string | undefined;
  /** Said after signing out. */
  readonly notice?: string | undefined;
}

export function loginPage(params: LoginPageParams): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>Sign in &middot; Baton</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="/ui/app.css" />
      </head>
      <body>
        <header><h1>Baton</h1></header>
        <main>
          <h2 id="heading">Sign in</h2>
          ${params.error === undefined ? '' : html`<p class="late" role="alert" id="login-error">${params.error}</p>`}
          ${params.notice === undefined ? '' : html`<p role="status">${params.notice}</p>`}
          <form class="login" method="post" action="/login">
            <input type="hidden" name="next" value="${params.next}" />
            <label for="login-token">Token</label>
            <input
              id="login-token"
              name="token"
              type="password"
              required
              maxlength="200"
              autocomplete="current-password"
              aria-describedby="login-help"
              ${params.error === undefined ? '' : html`aria-invalid="true" aria-errormessage="login-error"`}
              autofocus
            />
            <p id="login-help" class="muted">
              A token from <code>baton token create</code>. Viewer tokens see every view; operator tokens may
              also approve, reject and resolve tasks, force-release claims and enable or disable hosts. It is
              kept in an HttpOnly cookie for this site until you sign out or close the browser.
            </p>
            <button type="submit">Sign in</button>
          </form>
        </main>
      </body>
    </html>`;
}

/** The header's sign-in state: who is signed in by cookie, with a sign-out button, or a link. */
export function signInState(signedIn: SignedIn | null): Html {
  if (signedIn === null) return html`<a class="signin" href="/login">Sign in</a>`;
  const name = signedIn.name === null ? '' : ` (${signedIn.name})`;
  return html`<form class="signin" method="post" action="/logout">
    <span class="muted">Signed in: ${signedIn.scope} token ${signedIn.id}${name}</span>
    <button type="submit">Sign out</button>
  </form>`;
}

/** Who a page's reader is signed in as, by the dashboard's cookie. */
export interface SignedIn {
  readonly id: string;
  readonly scope: string;
  readonly name: string | null;
}

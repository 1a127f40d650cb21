/**
 * A dashboard sign-in's token (docs/decisions/0012, amendment "The sign-in cookie"): `POST /login`
 * mints a short-lived token of its own for the browser's cookie, never setting the presented
 * secret as one. `login_of` is the id of the token presented; set, the token is a sign-in: it opens
 * nothing once that token is revoked or expired, manages no tokens, signs in to nothing more, and
 * is refused as a bearer header.
 */
export default {
  version: 53,
  name: 'token-login-of',
  sql: `
ALTER TABLE tokens ADD COLUMN login_of TEXT;
`,
};

/**
 * Database passwords never leave the process that was given them: not in a message, a log line,
 * a hook, a claim record or an agent's environment. `redactSecrets` masks every password in a
 * text (URL user-info, `password=` in a query string or a libpq keyword string); `withoutPassword`
 * drops it from one URL, for what Baton hands on (the agent's BATON_DB, the guard's claim record):
 * the password then comes from PGPASSFILE (~/.pgpass) or PGPASSWORD, as for any libpq client.
 */

/** scheme://user:password@ — the password runs to the last `@` of the token, quotes excluded. */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/"'`<>]*):([^\s"'`<>]*)@/gi;
/** password=… in a query string or a keyword/value connection string (PGPASSWORD=… too). */
const KEYWORD_PASSWORD = /(password=)('(?:[^'\\]|\\.)*'|[^\s&"'`<>;]*)/gi;

const REDACTED = '***';

/** The text with every password it carries replaced by ***. */
export function redactSecrets(text: string): string {
  return text
    .replace(URL_PASSWORD, (_, head: string, password: string) =>
      password === '' ? `${head}:@` : `${head}:${REDACTED}@`,
    )
    .replace(KEYWORD_PASSWORD, (_, key: string, value: string) => (value === '' ? key : `${key}${REDACTED}`));
}

/**
 * Whether the URL (or connection string) names a password of its own: as the patterns above see
 * it, or as a URL parser does (a password with a space or a quote, which the patterns stop at and
 * pg takes whole).
 */
export function hasPassword(url: string): boolean {
  return redactSecrets(url) !== url || parsedPassword(url);
}

function parsedPassword(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false; // a path, or no URL at all
  }
}

/**
 * The same URL without its password (user-info and `password=` query parameter), so that it can
 * be written down or handed to an agent. Anything that does not parse as a URL is only redacted.
 */
export function withoutPassword(url: string): string {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)@(.*)$/is.exec(url);
  let out = url;
  if (match !== null) {
    const [, scheme = '', userinfo = '', rest = ''] = match;
    const colon = userinfo.indexOf(':');
    const user = colon === -1 ? userinfo : userinfo.slice(0, colon);
    out = `${scheme}${user === '' ? '' : `${user}@`}${rest}`;
  }
  out = out.replace(/([?&])password=[^&#]*(&?)/gi, (_, sep: string, next: string) =>
    sep === '?' ? (next === '' ? '' : '?') : next === '' ? '' : '&',
  );
  return redactSecrets(out);
}

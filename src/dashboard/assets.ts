/**
 * The dashboard's own script and style, served from memory (no front-end build step). htmx comes
 * from its npm package (routes.ts). The script does four things: keeps the operator's token in
 * sessionStorage and sends it as a bearer header with every htmx request, encodes button
 * requests as JSON (the API's bodies, without the fields left empty), turns the server's change
 * events into an htmx trigger on <body>, and reads each answer into the status line.
 */
export const APP_JS = `
(function () {
  var KEY = 'baton-token';
  function token() { try { return sessionStorage.getItem(KEY) || ''; } catch (e) { return ''; } }
  htmx.defineExtension('baton-json', {
    onEvent: function (name, evt) {
      if (name === 'htmx:configRequest') evt.detail.headers['Content-Type'] = 'application/json';
    },
    encodeParameters: function (xhr, parameters) {
      xhr.overrideMimeType('application/json');
      var body = {};
      // An optional field left empty is not given: the API refuses an empty note or reason.
      parameters.forEach(function (value, key) { if (value !== '') body[key] = value; });
      return JSON.stringify(body);
    }
  });
  document.addEventListener('htmx:configRequest', function (evt) {
    var t = token();
    if (t !== '') evt.detail.headers['Authorization'] = 'Bearer ' + t;
  });
  function say(text) {
    var el = document.getElementById('status');
    if (el) el.textContent = text;
  }
  // A refused button request is an answer to show, not a page error: the status line says it.
  document.addEventListener('htmx:beforeSwap', function (evt) {
    if (evt.detail.elt && evt.detail.elt.hasAttribute('data-action')) {
      evt.detail.isError = false;
      evt.detail.shouldSwap = false;
    }
  });
  document.addEventListener('htmx:afterRequest', function (evt) {
    var elt = evt.detail.elt;
    if (!elt || !elt.hasAttribute('data-action')) return;
    var xhr = evt.detail.xhr;
    var what = elt.getAttribute('data-action');
    if (xhr.status >= 200 && xhr.status < 300) { say(what + ': done'); return; }
    var message = 'HTTP ' + xhr.status;
    try {
      var body = JSON.parse(xhr.responseText);
      if (body && body.error) message = body.error.code + ': ' + body.error.message;
    } catch (e) { /* not JSON */ }
    say(what + ' refused: ' + message);
  });
  // At phone width a table reads as one card per row: each cell is labelled with its column.
  function labelCells(root) {
    root.querySelectorAll('table').forEach(function (table) {
      var heads = Array.prototype.map.call(table.querySelectorAll('thead th'), function (th) {
        return th.textContent.trim();
      });
      table.classList.add('stack');
      table.querySelectorAll('tbody tr').forEach(function (tr) {
        Array.prototype.forEach.call(tr.children, function (cell, i) {
          if (heads[i]) cell.setAttribute('data-label', heads[i]);
        });
      });
    });
  }
  document.addEventListener('htmx:afterSwap', function (evt) { labelCells(evt.detail.target); });
  document.addEventListener('DOMContentLoaded', function () {
    labelCells(document);
    var field = document.getElementById('token');
    if (field) {
      field.value = token();
      field.addEventListener('change', function () {
        try { sessionStorage.setItem(KEY, field.value.trim()); } catch (e) { /* private mode */ }
        say(field.value.trim() === '' ? 'token cleared' : 'token kept for this tab');
      });
    }
    if (typeof EventSource === 'undefined') return;
    var live = document.getElementById('live');
    var since = document.body.getAttribute('data-since');
    var source = new EventSource('/ui/events' + (since ? '?since=' + encodeURIComponent(since) : ''));
    source.addEventListener('change', function () { htmx.trigger(document.body, 'baton:change'); });
    source.addEventListener('open', function () { if (live) live.textContent = 'live'; });
    source.addEventListener('error', function () { if (live) live.textContent = 'reconnecting'; });
    // The token no longer opens (revoked, expired): no reconnecting; sign in again.
    source.addEventListener('ended', function (event) {
      source.close();
      if (live) live.textContent = 'stopped: ' + event.data;
    });
  });
})();
`;

export const APP_CSS = `
:root { color-scheme: light dark; --late: #b00020; --ok: #1b5e20; --muted: #666; --line: #ccc; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; }
a { color: inherit; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 0.5rem; top: 0.5rem; background: Canvas; padding: 0.25rem; }
header { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center; padding: 0.5rem 1rem;
  border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.1rem; margin: 0; }
nav ul { display: flex; flex-wrap: wrap; gap: 0.25rem 0.75rem; list-style: none; margin: 0; padding: 0; }
nav a[aria-current="page"] { font-weight: 700; }
.token { margin-left: auto; display: flex; gap: 0.4rem; align-items: center; }
.token input { width: 12rem; max-width: 40vw; }
.signin { display: flex; flex-wrap: wrap; gap: 0.4rem; align-items: center; }
form.login { display: flex; flex-direction: column; gap: 0.4rem; max-width: 28rem; }
main { padding: 0.5rem 1rem 2rem; }
h2 { font-size: 1.05rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.25rem 0.5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; }
form.filters { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: end; margin: 0.5rem 0; }
form.filters label { display: flex; flex-direction: column; font-size: 0.85rem; }
.late { color: var(--late); font-weight: 700; }
.ok { color: var(--ok); }
.muted { color: var(--muted); }
.plain { list-style: none; margin: 0; padding: 0; }
.reason { font-family: ui-monospace, monospace; font-size: 0.85rem; }
pre.tail { background: rgba(127,127,127,0.12); padding: 0.5rem; overflow-x: auto; max-height: 60vh;
  white-space: pre-wrap; }
button, input, select { font: inherit; }
button { cursor: pointer; }
:focus-visible { outline: 3px solid #1a73e8; outline-offset: 2px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; margin: 0.5rem 0; }
dt { font-weight: 600; }
dd { margin: 0; }
#status { min-height: 1.4em; margin: 0.25rem 0; }
ol.plan { margin: 0.25rem 0; padding-left: 1.2rem; font-size: 0.9rem; }
@media (max-width: 600px) {
  body { font-size: 14px; }
  .token { margin-left: 0; width: 100%; }
  .token input { flex: 1; max-width: none; }
  dl { grid-template-columns: 1fr; }
  dd { margin: 0 0 0.4rem; }
  table.stack thead { position: absolute; left: -9999px; }
  table.stack caption { text-align: left; }
  table.stack tr { display: block; border-bottom: 1px solid var(--line); padding: 0.4rem 0; }
  table.stack td, table.stack tbody th { display: block; border: 0; padding: 0.1rem 0; }
  table.stack td[data-label]::before, table.stack tbody th[data-label]::before {
    content: attr(data-label) ": "; font-weight: 600; }
}
`;

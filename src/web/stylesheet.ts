/**
 * The login and error pages' only stylesheet, served from our origin so the
 * CSP can say `style-src 'self'`. A TypeScript string, so the build ships it.
 */
export const STYLESHEET = `:root {
  color-scheme: light dark;
  --bg: #f4f5f7; --card: #fff; --text: #1d2330; --muted: #5b6475; --border: #c9ced8;
  --accent: #1f5fd6; --accent-text: #fff; --error-bg: #fdecec; --error: #a01717; --focus: #f0a400;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #14171d; --card: #1d2129; --text: #e8eaef; --muted: #a8afbd; --border: #3a4150;
    --accent: #5b8cff; --accent-text: #0b1020; --error-bg: #3a1c1c; --error: #ffb4b4; }
}
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: var(--bg); color: var(--text);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.card { width: min(100% - 2rem, 24rem); margin: 2rem 0; padding: 2rem; background: var(--card);
  border: 1px solid var(--border); border-radius: 12px; }
h1 { margin: 0; font-size: 1.5rem; }
.subtitle { margin: .25rem 0 1.5rem; color: var(--muted); }
form.login { display: grid; gap: .35rem; }
label { font-weight: 600; margin-top: .5rem; }
input { width: 100%; padding: .6rem .7rem; font: inherit; color: inherit; background: transparent;
  border: 1px solid var(--border); border-radius: 8px; }
button { width: 100%; padding: .65rem 1rem; font: inherit; font-weight: 600; border-radius: 8px; cursor: pointer; }
button.primary { margin-top: 1rem; background: var(--accent); color: var(--accent-text); border: 1px solid var(--accent); }
button.provider { display: flex; align-items: center; justify-content: center; gap: .6rem;
  background: transparent; color: inherit; border: 1px solid var(--border); }
button.provider img { flex: none; max-width: 1.25rem; max-height: 1.25rem; }
img.app-logo { display: block; max-width: 3rem; max-height: 3rem; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.error { margin: 0 0 1rem; padding: .6rem .8rem; background: var(--error-bg); color: var(--error); border-radius: 8px; }
.code { color: var(--muted); font-size: .9rem; }
code { overflow-wrap: anywhere; }
.divider { display: flex; align-items: center; gap: .75rem; margin: 1.5rem 0 1rem; color: var(--muted); }
.divider::before, .divider::after { content: ""; flex: 1; border-top: 1px solid var(--border); }
.providers { list-style: none; margin: 0; padding: 0; display: grid; gap: .5rem; }
.consents { list-style: none; margin: 0; padding: 0; }
.consents > li { padding: 1rem 0; border-top: 1px solid var(--border); }
.consents h2 { margin: 0; font-size: 1.1rem; overflow-wrap: anywhere; }
.consents ul { padding-left: 1.25rem; }
.consents code, .ok { overflow-wrap: anywhere; }
.ok { margin: 0 0 1rem; padding: .6rem .8rem; border: 1px solid var(--border); border-radius: 8px; }
.qr { display: block; width: 12rem; height: 12rem; margin: .5rem auto; background: #fff; }
.secret, .recovery-codes { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.recovery-codes { columns: 2; padding-left: 1.5rem; }
details { margin: .5rem 0; }
.field-error { margin: 0; color: var(--error); font-size: .9rem; }
.links { display: flex; justify-content: space-between; gap: 1rem; margin: 1rem 0 0; }
a { color: var(--accent); }
.card.wide { width: min(100% - 2rem, 36rem); }
section { margin-top: 1.75rem; }
h2 { margin: 0 0 .5rem; font-size: 1.15rem; }
.items { list-style: none; margin: 0 0 .75rem; padding: 0; display: grid; gap: .5rem; }
.items li { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: .5rem;
  padding: .5rem 0; border-bottom: 1px solid var(--border); overflow-wrap: anywhere; }
form.inline { margin: 0; }
button.secondary { width: auto; padding: .4rem .8rem; background: transparent; color: inherit; border: 1px solid var(--border); }
.muted, .hint { color: var(--muted); }
.notice { margin: 0 0 1rem; padding: .6rem .8rem; border: 1px solid var(--accent); border-radius: 8px; }
[hidden] { display: none !important; }
.passkey-list { list-style: none; margin: 0 0 1rem; padding: 0; display: grid; gap: 1rem; }
.passkey-list li { padding: .75rem; border: 1px solid var(--border); border-radius: 8px; overflow-wrap: anywhere; }
.passkey-list form { display: grid; gap: .35rem; margin-top: .5rem; }
.passkey-list .meta { margin: 0; color: var(--muted); font-size: .9rem; }
.status { margin: 0 0 1rem; padding: .6rem .8rem; border: 1px solid var(--border); border-radius: 8px; }
`;

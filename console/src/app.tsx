import { useEffect, useState } from "preact/hooks";
import type { ClientOf } from "./rpc.js";
import { ApplicationsPage } from "./pages/applications.js";
import { EventsPage } from "./pages/events.js";
import { KeysPage } from "./pages/keys.js";
import { ProvidersPage } from "./pages/providers.js";
import { ResourcesPage } from "./pages/resources.js";
import { UserPage } from "./pages/user.js";
import { SessionsPage } from "./pages/sessions.js";
import { SettingsPage } from "./pages/settings.js";
import { UsersPage } from "./pages/users.js";

/** The pages, in navigation order: each entry's text is its page's heading. One reached from another page only is not in the navigation. */
const PAGES = [
  { path: "providers", title: "Providers", Page: ProvidersPage },
  { path: "applications", title: "Applications", Page: ApplicationsPage },
  { path: "resources", title: "Resources", Page: ResourcesPage },
  { path: "users", title: "Users", Page: UsersPage },
  { path: "user", title: "User", Page: UserPage, hidden: true },
  { path: "keys", title: "Signing keys", Page: KeysPage },
  { path: "sessions", title: "Sessions", Page: SessionsPage },
  { path: "events", title: "Events", Page: EventsPage },
  { path: "settings", title: "Settings", Page: SettingsPage },
] as const;

export interface PageProps {
  clients: ClientOf;
}

/**
 * The hash route (`#/users`, `#/sessions?user=alice`): the page (an unknown
 * one shows Providers), and the whole route, which draws it afresh when any
 * of it changes (the browser's back button to another user's sessions).
 */
function currentRoute() {
  const path = location.hash.replace(/^#\/?/, "").split("?")[0];
  return { page: PAGES.find((p) => p.path === path) ?? PAGES[0], route: location.hash };
}

export function App(props: { clients: ClientOf; userName: string; onSignOut: () => void }) {
  const [{ page, route }, setRoute] = useState(currentRoute);
  useEffect(() => {
    const onHash = () => setRoute(currentRoute());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  useEffect(() => {
    document.title = `${page.title} · Identity console`;
  }, [page]);
  const { Page } = page;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById("main")?.querySelector("h1")?.focus(); }}>Skip to content</a>
      <header class="top">
        <span class="brand">Identity console</span>
        <nav aria-label="Console">
          <ul>
            {PAGES.filter((p) => !("hidden" in p)).map((p) => (
              <li key={p.path}>
                <a href={`#/${p.path}`} aria-current={p === page || ("hidden" in page && p.path === "users") ? "page" : undefined}>{p.title}</a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span>{props.userName}</span>
          <button type="button" class="quiet" onClick={props.onSignOut}>Sign out</button>
        </div>
      </header>
      <main id="main">
        <Page key={`${page.path} ${route}`} clients={props.clients} />
      </main>
    </>
  );
}

/** What a signed-in user who is not an administrator sees. */
export function NotAdministrator(props: { userName: string; onSignOut: () => void }) {
  return (
    <main class="refused">
      <h1>Not an administrator</h1>
      <p>
        {props.userName ? <>You are signed in as <strong>{props.userName}</strong>, who</> : "The account you signed in with"} is not an administrator of this
        service. Only users with administrator rights can use the console.
      </p>
      <button type="button" class="primary" onClick={props.onSignOut}>Sign out</button>
    </main>
  );
}

/** A sign-in that could not finish (a refused consent, a lost state). */
export function SignInFailed(props: { message: string; onRetry: () => void }) {
  return (
    <main class="refused">
      <h1>Sign-in failed</h1>
      <p role="alert">{props.message}</p>
      <button type="button" class="primary" onClick={props.onRetry}>Sign in again</button>
    </main>
  );
}

import { render, type VNode } from "preact";
import { FederationService } from "../../gen/identity/v1/federation_pb.js";
import { App, NotAdministrator, SignInFailed } from "./app.js";
import { createClients, failureOf, isRefused, isSignedOut } from "./rpc.js";
import { readShellSettings } from "./shell.js";
import { ConsoleSignIn, type Session } from "./signIn.js";
import "./console.css";

/**
 * The console starts here. Without a token it leaves at once for the
 * service's authorization endpoint (the shell's loading message stays up
 * meanwhile); back with a code, it exchanges it, checks the user may
 * administer, and draws the app.
 */
async function start(): Promise<void> {
  const signIn = new ConsoleSignIn(readShellSettings());
  const app = document.getElementById("app")!;
  // The shell's frame and loading message stay until the first drawing replaces them.
  const draw = (ui: VNode) => {
    app.replaceChildren();
    render(ui, app);
  };
  const url = new URL(location.href);
  let session: Session | undefined;
  try {
    session = signIn.isCallback(url) ? await signIn.complete(url) : signIn.current();
  } catch (err) {
    draw(<SignInFailed message={err instanceof Error ? err.message : String(err)} onRetry={() => void signIn.redirect("")} />);
    return;
  }
  if (!session) return void (await signIn.redirect());
  const token = session.accessToken;
  const clients = createClients(() => token, () => void signIn.redirect());
  const onSignOut = () => void signIn.signOut();
  try {
    // One cheap admin call: the service decides who is an administrator.
    await clients(FederationService).listProviders({});
  } catch (err) {
    const failure = failureOf(err);
    // A dead token: the clients' interceptor is already on its way to sign in again.
    if (isSignedOut(failure)) return;
    if (isRefused(failure)) return draw(<NotAdministrator userName={session.userName} onSignOut={onSignOut} />);
    draw(<SignInFailed message={failure.message} onRetry={() => location.reload()} />);
    return;
  }
  draw(<App clients={clients} userName={session.userName} onSignOut={onSignOut} />);
}

void start();

/** What the server put on the shell's <html> element: the console's own OAuth client. */
export interface ShellSettings {
  issuer: string;
  clientId: string;
  redirectUri: string;
  scope: string;
}

export function readShellSettings(root: HTMLElement = document.documentElement): ShellSettings {
  const { issuer, clientId, redirectUri, scope } = root.dataset;
  if (!issuer || !clientId || !redirectUri || !scope) throw new Error("the console's page lacks its sign-in settings");
  return { issuer, clientId, redirectUri, scope };
}

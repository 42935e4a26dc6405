import { OAuthError } from "../errors.js";

export function requireParam(value: string, name: string): string {
  if (!value) throw new OAuthError("invalid_request", `missing parameter: ${name}`);
  return value;
}

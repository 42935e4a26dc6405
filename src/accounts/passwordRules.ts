/** The shortest password sign-up and reset accept unless --password-min-length says otherwise. */
export const DEFAULT_PASSWORD_MIN_LENGTH = 8;

/** The longest: scrypt hashes it whole, so a huge one would cost every check. */
const MAX_PASSWORD_LENGTH = 1000;

/**
 * What is wrong with a password a person chose at sign-up or through a reset
 * link, in words for the form; undefined when it is acceptable. Length counts
 * characters (code points), not bytes.
 */
export function passwordProblem(password: string, owner: { name: string; email: string }, minLength: number): string | undefined {
  const length = [...password].length;
  if (length < minLength) return `must be at least ${minLength} characters`;
  if (length > MAX_PASSWORD_LENGTH) return `must be at most ${MAX_PASSWORD_LENGTH} characters`;
  const lowered = password.toLowerCase();
  if (lowered === owner.name.toLowerCase()) return "must not be your user name";
  if (owner.email && lowered === owner.email.toLowerCase()) return "must not be your email address";
  return undefined;
}

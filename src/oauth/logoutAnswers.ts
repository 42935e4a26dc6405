/** What a relying party's answer to a logout token means for its delivery. */
export type LogoutAnswerVerdict =
  | { outcome: "delivered" }
  /** The relying party refused the token or could not log out: sending it again would change nothing. */
  | { outcome: "final"; status: number }
  /** Worth another try; `waitMs` is how long the relying party asked us to wait, if it did. */
  | { outcome: "retry"; status: number; waitMs?: number };

/** The status and Retry-After of an answer from a backchannel_logout_uri. */
export interface LogoutAnswer {
  status: number;
  retryAfter?: string;
}

/**
 * Classifies a relying party's answer to a logout token POST. `now` (epoch
 * ms) turns a Retry-After date into a wait. No answer at all (a timeout, a
 * refused connection, a redirect not followed) never reaches here: the
 * caller retries it.
 */
export function judgeLogoutAnswer(answer: LogoutAnswer, now: number): LogoutAnswerVerdict {
  const { status } = answer;
  // OIDC Back-Channel Logout 1.0 §2.8: success is 200, or 204 from frameworks that answer an empty body so.
  if (status >= 200 && status <= 299) return { outcome: "delivered" };
  // §2.8: a 400 says the token was invalid or the logout failed; as for every 4xx but
  // 408 (Request Timeout) and 429 (Too Many Requests), the same request would fail again.
  if (status >= 400 && status <= 499 && status !== 408 && status !== 429) return { outcome: "final", status };
  // RFC 9110 §10.2.3 (and RFC 6585 §4 for 429): the server says how long to wait.
  const waitMs = status === 429 || status === 503 ? retryAfterMs(answer.retryAfter, now) : undefined;
  return waitMs === undefined ? { outcome: "retry", status } : { outcome: "retry", status, waitMs };
}

/**
 * A Retry-After value as a wait in ms (RFC 9110 §10.2.3: delay-seconds or
 * an HTTP-date); undefined when absent or malformed, 0 for a date passed.
 */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = httpDate(text, now);
  return at === undefined ? undefined : Math.max(0, at - now);
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const IMF_FIXDATE = /^[A-Z][a-z]{2}, (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const RFC850_DATE = /^[A-Z][a-z]+, (\d{2})-([A-Z][a-z]{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const ASCTIME_DATE = /^[A-Z][a-z]{2} ([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

/**
 * An HTTP-date as epoch ms. RFC 9110 §5.6.7: a recipient accepts all three
 * forms; asctime has no zone and means GMT (Date.parse would read it as
 * local time); a two-digit year more than 50 years ahead is the past one.
 */
function httpDate(text: string, now: number): number | undefined {
  let parts: { day: string; month: string; year: number; time: string[] } | undefined;
  let m: RegExpExecArray | null;
  if ((m = IMF_FIXDATE.exec(text))) parts = { day: m[1]!, month: m[2]!, year: Number(m[3]), time: m.slice(4, 7) };
  else if ((m = RFC850_DATE.exec(text))) parts = { day: m[1]!, month: m[2]!, year: twoDigitYear(Number(m[3]), now), time: m.slice(4, 7) };
  else if ((m = ASCTIME_DATE.exec(text))) parts = { day: m[2]!, month: m[1]!, year: Number(m[6]), time: m.slice(3, 6) };
  const month = parts ? MONTHS.indexOf(parts.month) : -1;
  if (!parts || month < 0) return undefined;
  const [hours, minutes, seconds] = parts.time.map(Number) as [number, number, number];
  return Date.UTC(parts.year, month, Number(parts.day), hours, minutes, seconds);
}

function twoDigitYear(yy: number, now: number): number {
  const thisYear = new Date(now).getUTCFullYear();
  const year = thisYear - (thisYear % 100) + yy;
  if (year > thisYear + 50) return year - 100;
  return year <= thisYear - 50 ? year + 100 : year;
}

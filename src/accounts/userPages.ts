import type { UserRepository } from "../store/users.js";
import type { UserRecord } from "../shared/model.js";
import { InvalidInputError } from "./validation.js";

export const MAX_USER_PAGE_SIZE = 1000;
const MAX_SEARCH_LENGTH = 200;

export interface UserPageRequest {
  /** Substring of the name, display name or email, ignoring case; "" for all. */
  search: string;
  /** 0 for every match at once. */
  pageSize: number;
  /** The previous page's nextPageToken; "" for the first page. */
  pageToken: string;
}

export interface UserPage {
  users: UserRecord[];
  /** "" on the last page. */
  nextPageToken: string;
  /** Matches over all pages. */
  totalSize: number;
}

/**
 * A page of users by name. The token is the last name of the page before
 * (base64url): a user added or removed between pages neither repeats nor
 * shifts the others.
 */
export async function listUsersPage(repo: UserRepository, request: UserPageRequest): Promise<UserPage> {
  const { search, pageSize, pageToken } = request;
  if (!Number.isInteger(pageSize) || pageSize < 0 || pageSize > MAX_USER_PAGE_SIZE) {
    throw new InvalidInputError("pageSize", `must be between 0 and ${MAX_USER_PAGE_SIZE}`);
  }
  if (search.length > MAX_SEARCH_LENGTH) throw new InvalidInputError("search", `must be at most ${MAX_SEARCH_LENGTH} characters`);
  const afterName = pageToken === "" ? undefined : nameOfToken(pageToken);
  // One more than asked says whether another page follows.
  const limit = pageSize === 0 ? 0 : pageSize + 1;
  const { users, total } = await repo.page({ search, limit, afterName });
  const more = pageSize > 0 && users.length > pageSize;
  const page = more ? users.slice(0, pageSize) : users;
  return { users: page, nextPageToken: more ? tokenOfName(page[page.length - 1]!.name) : "", totalSize: total };
}

const tokenOfName = (name: string) => Buffer.from(name, "utf8").toString("base64url");

function nameOfToken(token: string): string {
  const name = /^[A-Za-z0-9_-]{1,200}$/.test(token) ? Buffer.from(token, "base64url").toString("utf8") : "";
  if (!/^[A-Za-z0-9_.@-]{1,100}$/.test(name)) throw new InvalidInputError("pageToken", "is not a token this service gave");
  return name;
}

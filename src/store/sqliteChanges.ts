import { closeSync, openSync, readSync } from "node:fs";

/**
 * The WAL-index header: its two copies at the start of the `-shm` file
 * (SQLite's file format, "WAL-Index Format"). Every commit rewrites it (the
 * change counter, the last valid frame, the salts and checksums); readers
 * and checkpoints write only past it.
 */
const HEADER_BYTES = 96;

/** Versions are never reused, not even by another watch on the same file. */
let lastVersion = 0;

/**
 * Whether a SQLite database in WAL mode may have changed, by a commit of any
 * connection in any process, since it was last asked: one read of the
 * WAL-index header, on this thread, where a query is a hop to the libuv pool.
 * SQLite deletes the `-shm` file only when its last connection closes; the
 * caller keeps connections of its own open for as long as it asks.
 */
export class SqliteChangeWatch {
  private fd: number | undefined;
  private readonly seen = Buffer.alloc(HEADER_BYTES);
  private readonly now = Buffer.alloc(HEADER_BYTES);
  private version: number | undefined;

  constructor(private readonly file: string) {}

  /**
   * A number that differs from every earlier answer if the database may have
   * changed since then; undefined while the `-shm` file cannot be read (not
   * yet created), which promises nothing.
   */
  current(): number | undefined {
    try {
      this.fd ??= openSync(`${this.file}-shm`, "r");
      if (readSync(this.fd, this.now, 0, HEADER_BYTES, 0) !== HEADER_BYTES) return undefined;
    } catch {
      return undefined;
    }
    if (this.version === undefined || !this.now.equals(this.seen)) {
      this.now.copy(this.seen);
      this.version = ++lastVersion;
    }
    return this.version;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

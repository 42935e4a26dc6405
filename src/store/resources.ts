import type { Db } from "./db.js";
import { guardUnique } from "./errors.js";
import type { ResourceRecord, ResourceScope } from "../shared/model.js";

interface Row {
  uri: string;
  name: string;
  scopes: string;
  created_at: number | string;
  updated_at: number | string;
}

function scopesOf(column: string): ResourceScope[] {
  try {
    const parsed: unknown = JSON.parse(column);
    return Array.isArray(parsed) ? (parsed as ResourceScope[]) : [];
  } catch {
    return [];
  }
}

const fromRow = (r: Row): ResourceRecord => ({
  uri: r.uri,
  name: r.name,
  scopes: scopesOf(r.scopes),
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const toRow = (r: ResourceRecord): Row => ({
  uri: r.uri,
  name: r.name,
  scopes: JSON.stringify(r.scopes.map(({ name, description }) => ({ name, description }))),
  created_at: r.createdAt,
  updated_at: r.updatedAt,
});

/**
 * The contract (test/store/contract/applications.spec.ts, every backend, "resources"):
 * - unique: the URI; a second insert throws ConflictError;
 * - undefined: findByUri of an unknown or deleted URI; deleteByUri says
 *   whether a row went; findByUris answers only the URIs that exist;
 * - no compare-and-set: update() is a plain write by URI, the last one wins.
 */
export class ResourceRepository {
  constructor(private readonly db: Db) {}

  async findByUri(uri: string): Promise<ResourceRecord | undefined> {
    const row = await this.db<Row>("resources").where({ uri }).first();
    return row && fromRow(row);
  }

  /** The resources among `uris`, in one query. */
  async findByUris(uris: readonly string[]): Promise<ResourceRecord[]> {
    if (uris.length === 0) return [];
    return (await this.db<Row>("resources").whereIn("uri", uris)).map(fromRow);
  }

  async list(): Promise<ResourceRecord[]> {
    return (await this.db<Row>("resources").orderBy("uri")).map(fromRow);
  }

  async insert(r: ResourceRecord): Promise<void> {
    await guardUnique("resource", "uri", () => this.db("resources").insert(toRow(r)));
  }

  async update(r: ResourceRecord): Promise<boolean> {
    const { uri: _uri, created_at: _created, ...columns } = toRow(r);
    return (await this.db("resources").where({ uri: r.uri }).update(columns)) > 0;
  }

  async deleteByUri(uri: string): Promise<boolean> {
    return (await this.db("resources").where({ uri }).delete()) > 0;
  }
}

/** A unique key already holds a row. The domain turns it into its own error. */
export class ConflictError extends Error {
  constructor(readonly entity: string, readonly field: string) {
    super(`${entity} with this ${field} already exists`);
    this.name = "ConflictError";
  }
}

/** Recognise a unique-constraint violation from SQLite or PostgreSQL. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === "23505" || (e?.code === "SQLITE_CONSTRAINT" && /UNIQUE/i.test(e.message ?? ""));
}

/** Run an insert or update, turning a unique violation into a ConflictError. */
export async function guardUnique<T>(entity: string, field: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError(entity, field);
    throw err;
  }
}

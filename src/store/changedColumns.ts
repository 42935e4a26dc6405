/**
 * The columns of `after` that differ from `before` (the row as the caller
 * read it), and updated_at always. An update that writes only these cannot
 * write back, as it was read, a field another call changed meanwhile.
 */
export function changedColumns<Row extends { updated_at: number }>(before: Row, after: Row): Partial<Row> {
  return Object.fromEntries(
    Object.entries(after).filter(([column, value]) => column === "updated_at" || value !== before[column as keyof Row]),
  ) as Partial<Row>;
}

/**
 * Makes the next call of `target[method]` wait, after it has run, until
 * `release()`: the caller that made it stands between its read and its
 * write, so a test can land another change there (a race, played in order).
 * The method is put back at that call; `restore()` puts it back if the call
 * never came.
 */
export function pauseNextCall<T extends object, K extends keyof T>(target: T, method: K): { paused: Promise<void>; release(): void; restore(): void } {
  const original = target[method] as unknown as (...args: unknown[]) => Promise<unknown>;
  let release!: () => void;
  let reached!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const paused = new Promise<void>((resolve) => (reached = resolve));
  const restore = () => {
    target[method] = original as unknown as T[K];
  };
  target[method] = (async (...args: unknown[]) => {
    restore();
    const result = await original.apply(target, args);
    reached();
    await gate;
    return result;
  }) as unknown as T[K];
  return { paused, release, restore };
}

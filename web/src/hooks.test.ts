// hooks.test.ts: the chat's busy guard: while a turn runs, another send
// (Enter pressed again) is dropped rather than started beside it.
import { describe, expect, it } from "vitest";
import { exclusive, type Lock } from "./hooks";

// deferred is a promise and the function that resolves it.
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("exclusive", () => {
  it("drops a send while a turn runs, and lets the next one through after", async () => {
    const lock: Lock = { held: false };
    const turn = deferred();
    let started = 0;
    const send = () =>
      exclusive(lock, async () => {
        started++;
        await turn.promise;
      });
    const first = send();
    // Two more Enters before the first reply is done: no render between.
    expect(await send()).toBe(false);
    expect(await send()).toBe(false);
    expect(started).toBe(1);
    turn.resolve();
    expect(await first).toBe(true);
    expect(lock.held).toBe(false);
    expect(await send()).toBe(true);
    expect(started).toBe(2);
  });

  it("frees the lock when a turn fails", async () => {
    const lock: Lock = { held: false };
    await expect(exclusive(lock, () => Promise.reject(new Error("refused")))).rejects.toThrow("refused");
    expect(lock.held).toBe(false);
    expect(await exclusive(lock, async () => {})).toBe(true);
  });
});

// test-setup.ts gives vitest, which runs in Node, the browser globals that
// api.ts reads when it is imported: location, sessionStorage, the window's
// events, and a fetch that each test answers (api.ts's client keeps the
// fetch it finds at import).
import { vi } from "vitest";

class MemoryStorage implements Storage {
  private items = new Map<string, string>();
  get length(): number {
    return this.items.size;
  }
  clear(): void {
    this.items.clear();
  }
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  key(index: number): string | null {
    return [...this.items.keys()][index] ?? null;
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
}

const window = new EventTarget();
vi.stubGlobal("location", new URL("http://agentd.test/"));
vi.stubGlobal("sessionStorage", new MemoryStorage());
vi.stubGlobal("addEventListener", window.addEventListener.bind(window));
vi.stubGlobal("removeEventListener", window.removeEventListener.bind(window));
vi.stubGlobal("dispatchEvent", window.dispatchEvent.bind(window));
vi.stubGlobal("fetch", vi.fn());

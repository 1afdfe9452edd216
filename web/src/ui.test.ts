// ui.test.ts: the small helpers of ui.tsx that pages share: times
// relative to now (an approval's expiry) and the JSON object check of a
// JSON text area.
import { describe, expect, it } from "vitest";
import { jsonObjectOf, relative } from "./ui";

describe("a time relative to now", () => {
  const now = Date.parse("2026-01-01T12:00:00Z");
  const at = (ms: number) => new Date(now + ms).toISOString();

  it("says how far ahead or behind, in the unit that fits", () => {
    expect(relative(at(30_000), now)).toBe("in 30 s");
    expect(relative(at(-4 * 60_000), now)).toBe("4 min ago");
    expect(relative(at((23 * 60 + 59) * 60_000), now)).toBe("in 23 h 59 min");
    expect(relative(at(2 * 3600_000), now)).toBe("in 2 h");
    expect(relative(at(-(3 * 24 + 5) * 3600_000), now)).toBe("3 d 5 h ago");
    expect(relative(at(7 * 24 * 3600_000), now)).toBe("in 7 d");
    expect(relative(at(0), now)).toBe("in a moment");
    expect(relative(at(-4_000), now)).toBe("just now");
  });
});

describe("a JSON object in a text", () => {
  it("is the object, or an error naming the text and what is wrong", () => {
    expect(jsonObjectOf('{"a": 1}', "The arguments")).toEqual({ a: 1 });
    expect(String(jsonObjectOf("[1]", "The arguments", '{"symbol": "ETH"}'))).toBe(
      'Error: The arguments must be a JSON object, such as {"symbol": "ETH"}.',
    );
    expect(String(jsonObjectOf("{", "The parameters"))).toMatch(/^Error: The parameters are not valid JSON: /);
  });
});

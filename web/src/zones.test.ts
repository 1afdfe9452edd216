// zones.test.ts: time zones with Intl alone: offsets, wall-clock times
// resolved to instants across daylight-saving changes, the zone list, and
// the datetime-local input's format.
import { describe, expect, it } from "vitest";
import {
  inputWall,
  isZone,
  offsetAt,
  offsetLabel,
  resolveWall,
  steady,
  wallInput,
  wallOf,
  zoneNames,
  zoneTime,
} from "./zones";

const at = (s: string) => Date.parse(s);
const hours = (h: number) => h * 3_600_000;

describe("zones", () => {
  it("knows a zone's offset at an instant", () => {
    expect(offsetAt(at("2026-01-15T12:00:00Z"), "Europe/Berlin")).toBe(hours(1));
    expect(offsetAt(at("2026-07-15T12:00:00Z"), "Europe/Berlin")).toBe(hours(2));
    expect(offsetAt(at("2026-07-15T12:00:00Z"), "America/New_York")).toBe(hours(-4));
    expect(offsetAt(at("2026-07-15T12:00:00Z"), "Australia/Lord_Howe")).toBe(hours(10.5));
    expect(offsetAt(at("2026-07-15T12:00:00Z"), "UTC")).toBe(0);
    // The change itself: 01:00 UTC on 29 March 2026 in Berlin.
    expect(offsetAt(at("2026-03-29T00:59:00Z"), "Europe/Berlin")).toBe(hours(1));
    expect(offsetAt(at("2026-03-29T01:00:00Z"), "Europe/Berlin")).toBe(hours(2));
  });

  it("reads an instant's wall-clock time", () => {
    expect(wallOf(at("2026-03-29T01:00:30.500Z"), "Europe/Berlin")).toBe(at("2026-03-29T03:00:30Z"));
    expect(wallOf(at("2026-12-31T23:30:00Z"), "Asia/Tokyo")).toBe(at("2027-01-01T08:30:00Z"));
  });

  it("resolves a wall-clock time as the schedules do", () => {
    const berlin = (wall: string) => new Date(resolveWall(at(`${wall}Z`), "Europe/Berlin")).toISOString();
    expect(berlin("2026-01-10T08:00:00")).toBe("2026-01-10T07:00:00.000Z");
    // Skipped: the first minute that exists, 03:00 CEST.
    expect(berlin("2026-03-29T02:00:00")).toBe("2026-03-29T01:00:00.000Z");
    expect(berlin("2026-03-29T02:59:00")).toBe("2026-03-29T01:00:00.000Z");
    expect(berlin("2026-03-29T03:00:00")).toBe("2026-03-29T01:00:00.000Z");
    // Repeated: the first of the two, in CEST.
    expect(berlin("2026-10-25T02:30:00")).toBe("2026-10-25T00:30:00.000Z");
    expect(berlin("2026-10-25T03:00:00")).toBe("2026-10-25T02:00:00.000Z");
    const newYork = (wall: string) => new Date(resolveWall(at(`${wall}Z`), "America/New_York")).toISOString();
    expect(newYork("2026-03-08T02:30:00")).toBe("2026-03-08T07:00:00.000Z");
    expect(newYork("2026-11-01T01:30:00")).toBe("2026-11-01T05:30:00.000Z");
  });

  it("says when no change is near", () => {
    expect(steady(at("2026-06-01T00:00:00Z"), "Europe/Berlin")).toBe(true);
    expect(steady(at("2026-03-28T12:00:00Z"), "Europe/Berlin")).toBe(false);
    expect(steady(at("2026-03-30T02:00:00Z"), "Europe/Berlin")).toBe(false);
    expect(steady(at("2026-03-29T01:00:00Z"), "UTC")).toBe(true);
  });

  it("lists the zones, UTC first, and knows a zone's name", () => {
    const names = zoneNames();
    expect(names[0]).toBe("UTC");
    expect(names.filter((n) => n === "UTC")).toHaveLength(1);
    expect(names).toContain("Europe/Berlin");
    expect(names).toContain("America/New_York");
    expect(isZone("Europe/Berlin")).toBe(true);
    expect(isZone("UTC")).toBe(true);
    expect(isZone("Europe/Atlantis")).toBe(false);
    expect(isZone("")).toBe(false);
  });

  it("reads and writes the datetime-local input's value", () => {
    expect(wallInput(at("2026-03-29T02:30:00Z"))).toBe("2026-03-29T02:30");
    expect(inputWall("2026-03-29T02:30")).toBe(at("2026-03-29T02:30:00Z"));
    expect(inputWall("")).toBeNaN();
    expect(inputWall("2026-03-29")).toBeNaN();
  });

  it("formats times and offsets for people", () => {
    expect(offsetLabel(hours(2))).toBe("UTC+02:00");
    expect(offsetLabel(hours(-3.5))).toBe("UTC−03:30");
    expect(offsetLabel(0)).toBe("UTC+00:00");
    const shown = zoneTime(at("2026-03-30T07:00:00Z"), "Europe/Berlin", "en-GB");
    expect(shown).toContain("30 Mar 2026");
    expect(shown).toContain("09:00");
    expect(shown).toMatch(/CEST|GMT\+2/);
  });
});

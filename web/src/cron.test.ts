// cron.test.ts: the schedule form's cron evaluator: what it reads, why it
// refuses what it refuses, and the due times it finds, across the
// daylight-saving changes of Europe/Berlin, America/New_York and
// Australia/Lord_Howe (a half-hour jump), as the server's cronspec finds
// them.
import { describe, expect, it } from "vitest";
import { CronError, cronProblem, nextAfter, nextTimes, parseCron } from "./cron";

// times are the next n due times of expr after the instant from, in zone,
// as ISO strings.
function times(expr: string, from: string, zone: string, n = 5): string[] {
  return nextTimes(parseCron(expr), Date.parse(from), zone, n).map((t) => new Date(t).toISOString());
}

const iso = (s: string) => new Date(s).toISOString();

describe("parseCron", () => {
  it("reads lists, ranges, steps and names", () => {
    const s = parseCron("5,10-12,50-59/5 8-17/3 * 1-3 mon-fri");
    const on = (set: boolean[]) => set.flatMap((v, i) => (v ? [i] : []));
    expect(on(s.minute)).toEqual([5, 10, 11, 12, 50, 55]);
    expect(on(s.hour)).toEqual([8, 11, 14, 17]);
    expect(on(s.dom)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
    expect(on(s.month)).toEqual([1, 2, 3]);
    expect(on(s.dow)).toEqual([1, 2, 3, 4, 5]);
    expect([s.domAny, s.dowAny]).toEqual([true, false]);
    // "a/n" runs from a to the field's end; names ignore case.
    expect(on(parseCron("10/20 0 1 JAN-Mar/2 SUN").minute)).toEqual([10, 30, 50]);
    expect(on(parseCron("0 0 1 jan-mar/2 sun").month)).toEqual([1, 3]);
    // `?` is `*`, as on the server.
    expect(parseCron("0 0 ? * 1").domAny).toBe(true);
  });

  it("reads the descriptors", () => {
    for (const [d, five] of [
      ["@hourly", "0 * * * *"],
      ["@daily", "0 0 * * *"],
      ["@weekly", "0 0 * * 0"],
      ["@monthly", "0 0 1 * *"],
      ["@yearly", "0 0 1 1 *"],
    ]) {
      expect(parseCron(d!)).toEqual(parseCron(five!));
    }
  });

  it.each([
    ["", "Enter five fields"],
    ["   ", "Enter five fields"],
    ["@every 5m", "@every 5m is not one of @hourly, @daily, @weekly, @monthly, @yearly"],
    ["@annually", "is not one of"],
    ["0 8 * *", "It has 4 fields; a cron expression has five"],
    ["0 0 8 * * *", "It has 6 fields"],
    ["daily", "It has 1 field;"],
    ["TZ=Europe/Berlin 0 8 * * *", "time zone in its own field"],
    ["60 * * * *", "The minute field: 60 is above 59"],
    ["0 24 * * *", "The hour field: 24 is above 23"],
    ["0 0 0 * *", "The day-of-month field: 0 is below 1"],
    ["0 0 32 * *", "The day-of-month field: 32 is above 31"],
    ["0 0 * 13 *", "The month field: 13 is above 12"],
    ["0 0 * * 7", "The day-of-week field: 7 is above 6 (Sunday is 0)"],
    ["5-1 * * * *", "The minute field: the range 5-1 runs backwards"],
    ["0 0 * * fri-mon", "the range fri-mon runs backwards"],
    ["*/0 * * * *", "the step in “*/0” must be a positive number"],
    ["*/x * * * *", "the step in “*/x” must be a positive number"],
    ["1/2/3 * * * *", "“1/2/3” has more than one /"],
    ["1-2-3 * * * *", "“1-2-3” has more than one -"],
    ["x * * * *", "The minute field: “x” is not a number."],
    ["0 0 * foo *", "The month field: “foo” is not a number or a name."],
    ["1,,2 * * * *", "The minute field: a value is missing"],
    ["-1 * * * *", "a value is missing"],
  ])("refuses %j: %s", (expr, why) => {
    expect(() => parseCron(expr)).toThrow(CronError);
    expect(cronProblem(expr)).toContain(why);
  });

  it("accepts what the server accepts", () => {
    for (const e of ["* * * * *", "0 8 * * 1-5", " 0  8 * * 1-5 ", "@daily", "*/1 * * * *", "59 23 31 12 6"]) {
      expect(cronProblem(e)).toBeUndefined();
    }
  });
});

describe("nextTimes", () => {
  it("finds the next five times of a daily schedule, strictly after now", () => {
    expect(times("0 8 * * *", "2026-06-01T08:00:00Z", "UTC")).toEqual(
      ["2026-06-02", "2026-06-03", "2026-06-04", "2026-06-05", "2026-06-06"].map((d) => iso(`${d}T08:00:00Z`)),
    );
    // A second past a due time is after it.
    expect(times("0 8 * * *", "2026-06-01T07:59:59.999Z", "UTC", 1)).toEqual([iso("2026-06-01T08:00:00Z")]);
    expect(times("* * * * *", "2026-06-01T07:59:30Z", "UTC", 2)).toEqual([
      iso("2026-06-01T08:00:00Z"),
      iso("2026-06-01T08:01:00Z"),
    ]);
  });

  it("reads the expression in the zone", () => {
    // 08:00 in Berlin is 06:00 UTC in summer, 07:00 in winter.
    expect(times("0 8 * * *", "2026-07-01T00:00:00Z", "Europe/Berlin", 1)).toEqual([iso("2026-07-01T06:00:00Z")]);
    expect(times("0 8 * * *", "2026-01-01T00:00:00Z", "Europe/Berlin", 1)).toEqual([iso("2026-01-01T07:00:00Z")]);
    expect(times("0 8 * * *", "2026-01-01T00:00:00Z", "America/New_York", 1)).toEqual([iso("2026-01-01T13:00:00Z")]);
  });

  it("matches a day by either day field when both are restricted", () => {
    // The 1st or a Monday: Sunday 1 March 2026, then the Mondays.
    expect(times("0 9 1 * 1", "2026-02-28T00:00:00Z", "UTC")).toEqual(
      ["03-01", "03-02", "03-09", "03-16", "03-23"].map((d) => iso(`2026-${d}T09:00:00Z`)),
    );
    // A step from * leaves the day of month unrestricted: odd days that
    // are Mondays.
    expect(times("0 9 */2 * 1", "2026-03-01T00:00:00Z", "UTC")).toEqual(
      ["03-09", "03-23", "04-13", "04-27", "05-11"].map((d) => iso(`2026-${d}T09:00:00Z`)),
    );
  });

  it("evaluates the descriptors", () => {
    const from = "2026-03-04T10:30:00Z"; // a Wednesday
    expect(times("@hourly", from, "UTC", 2)).toEqual([iso("2026-03-04T11:00:00Z"), iso("2026-03-04T12:00:00Z")]);
    expect(times("@daily", from, "UTC", 1)).toEqual([iso("2026-03-05T00:00:00Z")]);
    expect(times("@weekly", from, "UTC", 2)).toEqual([iso("2026-03-08T00:00:00Z"), iso("2026-03-15T00:00:00Z")]);
    expect(times("@monthly", from, "UTC", 2)).toEqual([iso("2026-04-01T00:00:00Z"), iso("2026-05-01T00:00:00Z")]);
    expect(times("@yearly", from, "UTC", 2)).toEqual([iso("2027-01-01T00:00:00Z"), iso("2028-01-01T00:00:00Z")]);
  });

  it("finds a leap day, and nothing for a day that never comes", () => {
    expect(times("0 0 29 2 *", "2026-01-01T00:00:00Z", "UTC", 2)).toEqual([
      iso("2028-02-29T00:00:00Z"),
      iso("2032-02-29T00:00:00Z"),
    ]);
    expect(nextTimes(parseCron("0 0 30 2 *"), Date.parse("2026-01-01T00:00:00Z"), "UTC")).toEqual([]);
    expect(nextAfter(parseCron("0 0 31 4,6,9,11 *"), Date.parse("2026-01-01T00:00:00Z"), "Europe/Berlin")).toBe(
      undefined,
    );
  });

  describe("Europe/Berlin", () => {
    it("fires a time the clocks jump over at the first minute that exists", () => {
      // 29 March 2026: 02:00 CET becomes 03:00 CEST (01:00 UTC).
      expect(times("30 2 * * *", "2026-03-27T12:00:00Z", "Europe/Berlin")).toEqual([
        iso("2026-03-28T01:30:00Z"), // 02:30 CET
        iso("2026-03-29T01:00:00Z"), // 02:30 does not exist: 03:00 CEST
        iso("2026-03-30T00:30:00Z"), // 02:30 CEST
        iso("2026-03-31T00:30:00Z"),
        iso("2026-04-01T00:30:00Z"),
      ]);
    });

    it("fires the times of the skipped hour once, at the jump", () => {
      expect(times("*/20 * * * *", "2026-03-29T00:30:00Z", "Europe/Berlin")).toEqual([
        iso("2026-03-29T00:40:00Z"), // 01:40 CET
        iso("2026-03-29T01:00:00Z"), // 02:00, 02:20, 02:40 and 03:00 CEST
        iso("2026-03-29T01:20:00Z"), // 03:20 CEST
        iso("2026-03-29T01:40:00Z"),
        iso("2026-03-29T02:00:00Z"),
      ]);
    });

    it("fires a time that happens twice once, the first time", () => {
      // 25 October 2026: 03:00 CEST becomes 02:00 CET (01:00 UTC).
      expect(times("30 2 * * *", "2026-10-24T12:00:00Z", "Europe/Berlin", 3)).toEqual([
        iso("2026-10-25T00:30:00Z"), // 02:30 CEST, not 02:30 CET an hour later
        iso("2026-10-26T01:30:00Z"),
        iso("2026-10-27T01:30:00Z"),
      ]);
      expect(times("*/30 * * * *", "2026-10-24T23:45:00Z", "Europe/Berlin")).toEqual([
        iso("2026-10-25T00:00:00Z"), // 02:00 CEST
        iso("2026-10-25T00:30:00Z"), // 02:30 CEST
        iso("2026-10-25T02:00:00Z"), // 03:00 CET: 02:00 and 02:30 CET are not fired again
        iso("2026-10-25T02:30:00Z"),
        iso("2026-10-25T03:00:00Z"),
      ]);
    });

    it("finds the next time from inside the repeated hour", () => {
      // 01:15 UTC is 02:15 CET, the hour's second pass: 02:30 CET was
      // passed over (its first pass fired), so 03:00 CET is next.
      expect(times("*/30 * * * *", "2026-10-25T01:15:00Z", "Europe/Berlin", 2)).toEqual([
        iso("2026-10-25T02:00:00Z"),
        iso("2026-10-25T02:30:00Z"),
      ]);
    });
  });

  describe("America/New_York", () => {
    it("fires a time the clocks jump over at the first minute that exists", () => {
      // 8 March 2026: 02:00 EST becomes 03:00 EDT (07:00 UTC).
      expect(times("0 2 * * *", "2026-03-07T12:00:00Z", "America/New_York", 3)).toEqual([
        iso("2026-03-08T07:00:00Z"), // 02:00 does not exist: 03:00 EDT
        iso("2026-03-09T06:00:00Z"), // 02:00 EDT
        iso("2026-03-10T06:00:00Z"),
      ]);
      expect(times("*/15 * * * *", "2026-03-08T06:50:00Z", "America/New_York")).toEqual([
        iso("2026-03-08T07:00:00Z"),
        iso("2026-03-08T07:15:00Z"),
        iso("2026-03-08T07:30:00Z"),
        iso("2026-03-08T07:45:00Z"),
        iso("2026-03-08T08:00:00Z"),
      ]);
    });

    it("fires a time that happens twice once, the first time", () => {
      // 1 November 2026: 02:00 EDT becomes 01:00 EST (06:00 UTC).
      expect(times("30 1 * * *", "2026-10-31T12:00:00Z", "America/New_York", 2)).toEqual([
        iso("2026-11-01T05:30:00Z"), // 01:30 EDT
        iso("2026-11-02T06:30:00Z"), // 01:30 EST
      ]);
      // An hourly schedule skips the repeated hour rather than firing twice.
      expect(times("0 * * * *", "2026-11-01T04:30:00Z", "America/New_York", 3)).toEqual([
        iso("2026-11-01T05:00:00Z"), // 01:00 EDT
        iso("2026-11-01T07:00:00Z"), // 02:00 EST
        iso("2026-11-01T08:00:00Z"),
      ]);
    });

    it("keeps the wall time across the change in both directions", () => {
      expect(times("0 9 * * 0", "2026-02-28T00:00:00Z", "America/New_York", 3)).toEqual([
        iso("2026-03-01T14:00:00Z"), // EST
        iso("2026-03-08T13:00:00Z"), // EDT
        iso("2026-03-15T13:00:00Z"),
      ]);
      expect(times("0 9 * * 0", "2026-10-31T00:00:00Z", "America/New_York", 2)).toEqual([
        iso("2026-11-01T14:00:00Z"), // EST again
        iso("2026-11-08T14:00:00Z"),
      ]);
    });
  });

  describe("Australia/Lord_Howe", () => {
    it("handles a half-hour jump", () => {
      // 4 October 2026: 02:00 (+10:30) becomes 02:30 (+11).
      expect(times("15 2 * * *", "2026-10-03T00:00:00Z", "Australia/Lord_Howe", 2)).toEqual([
        iso("2026-10-03T15:30:00Z"), // 02:15 does not exist: 02:30 +11
        iso("2026-10-04T15:15:00Z"), // 02:15 +11
      ]);
      // 5 April 2026: 02:00 (+11) becomes 01:30 (+10:30): 01:45 happens twice.
      expect(times("45 1 * * *", "2026-04-04T00:00:00Z", "Australia/Lord_Howe", 2)).toEqual([
        iso("2026-04-04T14:45:00Z"), // 01:45 +11, the first of the two
        iso("2026-04-05T15:15:00Z"), // 01:45 +10:30
      ]);
    });
  });
});

// cron.ts: the cron expressions of agentd's schedules, read and evaluated
// in the browser, so the schedule form can say why an expression is wrong
// and show its next due times while it is typed. It reads what the server
// reads (cronspec, over robfig/cron's parser) and finds the times the
// server finds:
//
//   - five fields, minute hour day-of-month month day-of-week, each `*`
//     (or `?`), a number, a range `a-b`, a step `*/n`, `a-b/n` or `a/n`
//     (from a to the field's end), or a comma-separated list of those;
//     months and weekdays also by their English names (jan, mon); Sunday
//     is 0;
//   - or @hourly, @daily, @weekly, @monthly, @yearly;
//   - when both day fields are restricted (neither begins with `*` or
//     `?`), a day matches either; otherwise it must match both;
//   - times are wall-clock times in the schedule's zone: one the clocks
//     jump over fires at the first minute after it that exists, one that
//     happens twice fires once, the first time (zones.ts resolveWall).
import { resolveWall, steady, wallOf } from "./zones";

// CronSpec is a parsed expression: for each field, which values match.
export type CronSpec = {
  minute: boolean[];
  hour: boolean[];
  dom: boolean[];
  month: boolean[];
  dow: boolean[];
  // domAny and dowAny are set when the day field is unrestricted.
  domAny: boolean;
  dowAny: boolean;
};

// CronError is why an expression is not one a schedule may use, in words
// for the person typing it.
export class CronError extends Error {}

type Bounds = { name: string; min: number; max: number; names?: Record<string, number> };

const monthNames = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

// fields are the five fields in order, with their bounds.
const fields: Bounds[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day-of-month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: Object.fromEntries(monthNames.map((n, i) => [n, i + 1])) },
  { name: "day-of-week", min: 0, max: 6, names: Object.fromEntries(dayNames.map((n, i) => [n, i])) },
];

// descriptors are the names a schedule may use instead of five fields.
export const descriptors: Record<string, string> = {
  "@hourly": "0 * * * *",
  "@daily": "0 0 * * *",
  "@weekly": "0 0 * * 0",
  "@monthly": "0 0 1 * *",
  "@yearly": "0 0 1 1 *",
};

const descriptorList = Object.keys(descriptors).join(", ");

// parseCron reads expr, or throws a CronError saying what is wrong.
export function parseCron(expr: string): CronSpec {
  const text = expr.trim();
  if (!text) {
    throw new CronError(`Enter five fields (minute hour day-of-month month day-of-week) or one of ${descriptorList}.`);
  }
  if (text.startsWith("@")) {
    const five = descriptors[text];
    if (!five) throw new CronError(`${text} is not one of ${descriptorList}.`);
    return parseCron(five);
  }
  if (text.includes("=")) throw new CronError("Choose the time zone in its own field, not in the expression.");
  const parts = text.split(/\s+/);
  if (parts.length !== 5) {
    throw new CronError(
      `It has ${parts.length} field${parts.length === 1 ? "" : "s"}; a cron expression has five: minute hour day-of-month month day-of-week.`,
    );
  }
  const [minute, hour, dom, month, dow] = parts.map((p, i) => parseField(p, fields[i]!));
  const unrestricted = (p: string) => p.startsWith("*") || p.startsWith("?");
  return {
    minute: minute!,
    hour: hour!,
    dom: dom!,
    month: month!,
    dow: dow!,
    domAny: unrestricted(parts[2]!),
    dowAny: unrestricted(parts[4]!),
  };
}

// cronProblem is why expr is not a schedule's expression, or undefined.
export function cronProblem(expr: string): string | undefined {
  try {
    parseCron(expr);
    return undefined;
  } catch (err) {
    if (err instanceof CronError) return err.message;
    throw err;
  }
}

// parseField reads one field: a comma-separated list of ranges.
function parseField(text: string, b: Bounds): boolean[] {
  const set = new Array<boolean>(b.max + 1).fill(false);
  for (const item of text.split(",")) {
    const [from, to, step] = parseRange(item, b);
    for (let v = from; v <= to; v += step) set[v] = true;
  }
  return set;
}

// parseRange reads `*`, `n`, `a-b`, each optionally with `/step`, as
// [from, to, step].
function parseRange(item: string, b: Bounds): [number, number, number] {
  const bad = (why: string) => new CronError(`The ${b.name} field: ${why}.`);
  const slashes = item.split("/");
  if (slashes.length > 2) throw bad(`“${item}” has more than one /`);
  const [range = "", stepText] = slashes;
  const ends = range.split("-");
  if (ends.length > 2) throw bad(`“${item}” has more than one -`);
  let from: number, to: number;
  if (range === "*" || range === "?") {
    [from, to] = [b.min, b.max];
  } else {
    from = value(ends[0]!, b, bad);
    to = ends.length === 2 ? value(ends[1]!, b, bad) : from;
  }
  let step = 1;
  if (stepText !== undefined) {
    if (!/^\d+$/.test(stepText) || Number(stepText) === 0) throw bad(`the step in “${item}” must be a positive number`);
    step = Number(stepText);
    // "a/n" runs from a to the field's end.
    if (ends.length === 1) to = b.max;
  }
  if (from < b.min) throw bad(`${from} is below ${b.min}`);
  if (to > b.max) throw bad(`${to} is above ${b.max}${b.name === "day-of-week" ? " (Sunday is 0)" : ""}`);
  if (from > to) throw bad(`the range ${range} runs backwards`);
  return [from, to, step];
}

// value reads a number or, in the fields that have them, a name.
function value(text: string, b: Bounds, bad: (why: string) => CronError): number {
  const named = b.names?.[text.toLowerCase()];
  if (named !== undefined) return named;
  if (!/^\d+$/.test(text)) {
    throw bad(text ? `“${text}” is not a number${b.names ? " or a name" : ""}` : "a value is missing");
  }
  return Number(text);
}

const minute = 60_000;
const day = 24 * 60 * minute;

// horizon bounds the search for a due time, in days: an expression that
// matches no day in five years (February 30th) has none, as on the server.
const horizon = 5 * 366;

// dayMatches is whether the calendar day (a wall time at its midnight) is
// one of spec's.
function dayMatches(spec: CronSpec, wallDay: number): boolean {
  const d = new Date(wallDay);
  if (!spec.month[d.getUTCMonth() + 1]) return false;
  const dom = spec.dom[d.getUTCDate()] === true;
  const dow = spec.dow[d.getUTCDay()] === true;
  return spec.domAny || spec.dowAny ? dom && dow : dom || dow;
}

// nextAfter is spec's first due time strictly after the instant after
// (ms), in zone; undefined when there is none within five years.
export function nextAfter(spec: CronSpec, after: number, zone: string): number | undefined {
  // Resolved instants never decrease as wall times grow, so the walk may
  // start at any wall time not later than the answer. Near a change of
  // offset that is up to 3 hours before after's wall time (no zone jumps
  // more); elsewhere after's own minute.
  const local = Math.floor(wallOf(after, zone) / minute) * minute;
  const floor = steady(after, zone) ? local : local - 3 * 60 * minute;
  for (let wallDay = Math.floor(floor / day) * day, n = 0; n < horizon; n++, wallDay += day) {
    if (!dayMatches(spec, wallDay)) continue;
    for (let h = 0; h < 24; h++) {
      if (!spec.hour[h]) continue;
      for (let m = 0; m < 60; m++) {
        if (!spec.minute[m]) continue;
        const wall = wallDay + (h * 60 + m) * minute;
        if (wall < floor) continue;
        const at = resolveWall(wall, zone);
        if (at > after) return at;
      }
    }
  }
  return undefined;
}

// nextTimes are spec's first n due times after the instant after, in zone
// (fewer when it has fewer within five years).
export function nextTimes(spec: CronSpec, after: number, zone: string, n = 5): number[] {
  const out: number[] = [];
  for (let t = after; out.length < n;) {
    const next = nextAfter(spec, t, zone);
    if (next === undefined) break;
    out.push(next);
    t = next;
  }
  return out;
}

// zones.ts: IANA time zones in the browser, with nothing but Intl: the
// list to choose from, whether a name is one, a zone's offset from UTC at
// an instant, and the instant a wall-clock time names in a zone, across
// daylight-saving changes as agentd's schedules read it (cronspec.Resolve
// on the server): a time the clocks jump over is the first minute after
// it that exists, a time that happens twice is the first of the two.
//
// A wall-clock time is held as the number of milliseconds its fields would
// make in UTC (Date.UTC), so calendar arithmetic on it has no jumps.

const minute = 60_000;
const hour = 60 * minute;
const day = 24 * hour;

// formats caches one formatter per zone: building one is the slow part.
const formats = new Map<string, Intl.DateTimeFormat>();

function format(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formats.set(zone, f);
  }
  return f;
}

// isZone is whether the browser knows name as a time zone.
export function isZone(name: string): boolean {
  if (!name.trim()) return false;
  try {
    format(name);
    return true;
  } catch {
    return false;
  }
}

// browserZone is the zone the browser runs in (UTC when it cannot say).
export function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

// zoneNames are the IANA zones to choose from: the browser's list, with
// UTC (the API's default, which the list leaves out) first.
export function zoneNames(): string[] {
  const names = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  return ["UTC", ...names.filter((n) => n !== "UTC")];
}

// wallOf is the wall-clock time of instant (ms) in zone, to the second.
export function wallOf(instant: number, zone: string): number {
  const p: Record<string, number> = {};
  for (const { type, value } of format(zone).formatToParts(instant)) p[type] = Number(value);
  // Years before 1 and the era do not concern a schedule.
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
}

// offsetAt is zone's offset from UTC at instant, in ms (east positive).
export function offsetAt(instant: number, zone: string): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return wallOf(whole, zone) - whole;
}

// resolveWall is the instant of wall-clock time wall in zone: the first of
// two when the clocks went back over it, and the instant the clocks jumped
// to (the first minute after it that exists) when they jumped over it.
export function resolveWall(wall: number, zone: string): number {
  // No zone changes its offset twice within two days: the offsets a day
  // either side are the only candidates.
  const before = offsetAt(wall - day, zone);
  const after = offsetAt(wall + day, zone);
  const early = wall - before;
  const late = wall - after;
  const earlyOK = offsetAt(early, zone) === before;
  const lateOK = offsetAt(late, zone) === after;
  if (earlyOK && lateOK) return Math.min(early, late);
  if (earlyOK) return early;
  if (lateOK) return late;
  // The clocks jumped over wall, between late and early: find the jump to
  // the minute (transitions fall on whole minutes).
  let lo = Math.min(early, late);
  let hi = Math.max(early, late);
  const from = offsetAt(lo, zone);
  while (hi - lo > minute) {
    const mid = lo + Math.floor((hi - lo) / 2 / minute) * minute;
    if (offsetAt(mid, zone) === from) lo = mid;
    else hi = mid;
  }
  return hi;
}

// steady is whether zone keeps one offset for a little more than a day
// either side of instant, so that no wall time near it is skipped or
// repeated.
export function steady(instant: number, zone: string): boolean {
  const o = offsetAt(instant, zone);
  return offsetAt(instant - day - 3 * hour, zone) === o && offsetAt(instant + day + 3 * hour, zone) === o;
}

// wallInput is a wall-clock time as an <input type="datetime-local">
// holds it ("2026-03-29T02:30"); inputWall reads one back (NaN when it is
// not one).
export function wallInput(wall: number): string {
  return new Date(wall).toISOString().slice(0, 16);
}

export function inputWall(value: string): number {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(value) ? Date.parse(`${value}:00Z`) : NaN;
}

// zoneTime formats instant for people, in zone, with the zone's short
// name ("Mon, Mar 30, 2026, 09:00 GMT+2"); locale is the browser's unless
// given.
export function zoneTime(instant: number, zone: string, locale?: string): string {
  return new Intl.DateTimeFormat(locale, {
    timeZone: zone,
    weekday: "short",
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    timeZoneName: "short",
  }).format(instant);
}

// offsetLabel is an offset as people read it: "UTC+02:00", "UTC−03:30".
export function offsetLabel(offset: number): string {
  const m = Math.round(Math.abs(offset) / minute);
  const hh = String(Math.floor(m / 60)).padStart(2, "0");
  const mm = String(m % 60).padStart(2, "0");
  return `UTC${offset < 0 ? "−" : "+"}${hh}:${mm}`;
}

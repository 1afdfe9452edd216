// schedules.ts: an agent's schedules apart from their views: the calls
// that list, create, change and delete them, and the draft the schedule
// form edits, with what it sends (a create's body, or only the members an
// edit changed) and what is wrong with it before it is sent.
import { api, call, type Schemas } from "./api";
import { cronProblem, nextTimes, parseCron } from "./cron";
import { browserZone, inputWall, isZone, resolveWall, wallInput, wallOf } from "./zones";

export type Schedule = Schemas["Schedule"];
export type SchedulePlatform = Schemas["SchedulePlatform"];

// platforms are the chats a reply may also go to: the Record makes a
// platform added to the contract stop the build until it is listed here.
export const platforms = Object.keys({ telegram: 1, discord: 1 } satisfies Record<
  SchedulePlatform,
  1
>) as SchedulePlatform[];

// Bounds of the members, as the contract has them.
export const maxName = 100;
export const maxText = 10_000;
export const maxId = 128;
export const maxChatId = 64;

// defaultUser is who a schedule's message is from when the form leaves it
// empty, as the API has it.
export const defaultUser = "schedule";

// listSchedules is a page of the agent's schedules, oldest first.
export async function listSchedules(
  agentId: string,
  page: number,
  limit: number,
  signal?: AbortSignal,
): Promise<Schemas["ScheduleList"]> {
  const r = await call(
    api.GET("/agents/{agentId}/schedules", {
      params: { path: { agentId }, query: { page, limit } },
      signal,
      cache: "no-store",
    }),
  );
  return r.data;
}

// createSchedule puts the agent on a clock and returns the schedule.
export async function createSchedule(agentId: string, body: Schemas["ScheduleCreateRequest"]): Promise<Schedule> {
  const r = await call(api.POST("/agents/{agentId}/schedules", { params: { path: { agentId } }, body }));
  return r.data;
}

// updateSchedule changes the members in body and returns the schedule.
export async function updateSchedule(
  agentId: string,
  scheduleId: string,
  body: Schemas["ScheduleUpdateRequest"],
): Promise<Schedule> {
  const r = await call(
    api.PATCH("/agents/{agentId}/schedules/{scheduleId}", { params: { path: { agentId, scheduleId } }, body }),
  );
  return r.data;
}

// setEnabled switches a schedule on or off and returns it.
export function setEnabled(s: Pick<Schedule, "agentId" | "id">, enabled: boolean): Promise<Schedule> {
  return updateSchedule(s.agentId, s.id, { enabled });
}

// deleteSchedule deletes a schedule; a run it made goes on.
export async function deleteSchedule(s: Pick<Schedule, "agentId" | "id">): Promise<void> {
  await call(
    api.DELETE("/agents/{agentId}/schedules/{scheduleId}", {
      params: { path: { agentId: s.agentId, scheduleId: s.id } },
    }),
  );
}

// Draft is what the schedule form edits: every member as its input holds
// it. at is a wall-clock time in timezone, as <input type="datetime-local">
// holds it; platform "" sends the reply nowhere else.
export type Draft = {
  name: string;
  repeat: boolean;
  cron: string;
  at: string;
  timezone: string;
  text: string;
  userId: string;
  roomId: string;
  platform: SchedulePlatform | "";
  chatId: string;
  enabled: boolean;
};

// newDraft is the form of a new schedule: daily at 09:00 in zone (the
// browser's), or once at the next whole hour when chosen.
export function newDraft(zone = browserZone(), now = Date.now()): Draft {
  const hour = 3_600_000;
  return {
    name: "",
    repeat: true,
    cron: "0 9 * * *",
    at: wallInput(Math.ceil((wallOf(now, zone) + 1) / hour) * hour),
    timezone: zone,
    text: "",
    userId: "",
    roomId: "",
    platform: "",
    chatId: "",
    enabled: true,
  };
}

// draftOf is the form of an existing schedule.
export function draftOf(s: Schedule, now = Date.now()): Draft {
  const blank = newDraft(s.timezone, now);
  return {
    ...blank,
    name: s.name ?? "",
    repeat: s.cron !== null,
    cron: s.cron ?? blank.cron,
    at: s.at ? wallInput(Math.floor(wallOf(Date.parse(s.at), s.timezone) / 60_000) * 60_000) : blank.at,
    timezone: s.timezone,
    text: s.text,
    userId: s.userId === defaultUser ? "" : s.userId,
    roomId: s.roomId ?? "",
    platform: s.target?.platform ?? "",
    chatId: s.target?.chatId ?? "",
    enabled: s.enabled,
  };
}

// atOf is the instant (ms) a one-off's draft names: its wall time in its
// zone, a skipped one moved to the first minute that exists; NaN when the
// input or the zone is not one.
export function atOf(d: Pick<Draft, "at" | "timezone">): number {
  const wall = inputWall(d.at);
  if (Number.isNaN(wall) || !isZone(d.timezone)) return NaN;
  return resolveWall(wall, d.timezone);
}

// Problems are what is wrong with a draft, by member, in words for the
// person filling it in.
export type Problems = Partial<Record<"cron" | "at" | "timezone" | "text" | "target", string>>;

// problemsOf checks what can be checked before sending: the expression,
// the zone, a one-off's time (ahead, within a year), a text, a chat id for
// a platform. The server checks again and has the last word.
export function problemsOf(d: Draft, now = Date.now()): Problems {
  const p: Problems = {};
  if (!isZone(d.timezone)) p.timezone = "Not a known IANA time zone: choose one from the list.";
  if (d.repeat) {
    p.cron = cronProblem(d.cron);
    if (!p.cron && !p.timezone && nextTimes(parseCron(d.cron), now, d.timezone, 1).length === 0) {
      p.cron = "It never comes due: no day in the next five years matches (such as 30 February).";
    }
  } else if (!p.timezone) {
    const at = atOf(d);
    const yearAhead = new Date(now);
    yearAhead.setUTCFullYear(yearAhead.getUTCFullYear() + 1);
    if (Number.isNaN(at)) p.at = "Choose a date and a time.";
    else if (at <= now) p.at = "This time has passed: choose one ahead.";
    else if (at > yearAhead.getTime()) p.at = "A one-off fires at most a year ahead.";
  }
  if (!d.text.trim()) p.text = "Write the message the agent receives.";
  if (d.platform && !d.chatId.trim()) p.target = "Give the chat id the reply goes to, or choose no platform.";
  for (const k of Object.keys(p) as (keyof Problems)[]) if (p[k] === undefined) delete p[k];
  return p;
}

// targetOf is a draft's target, or null for none.
function targetOf(d: Draft): Schemas["ScheduleTarget"] | null {
  return d.platform ? { platform: d.platform, chatId: d.chatId.trim() } : null;
}

// createBody is what Create Schedule is sent for a draft: the members
// left empty are left out, so the API's defaults apply.
export function createBody(d: Draft): Schemas["ScheduleCreateRequest"] {
  const target = targetOf(d);
  return {
    ...(d.name.trim() ? { name: d.name.trim() } : {}),
    ...(d.repeat ? { cron: d.cron.trim() } : { at: new Date(atOf(d)).toISOString() }),
    timezone: d.timezone.trim(),
    text: d.text,
    ...(d.userId.trim() ? { userId: d.userId.trim() } : {}),
    ...(d.roomId.trim() ? { roomId: d.roomId.trim() } : {}),
    ...(target ? { target } : {}),
    enabled: d.enabled,
  };
}

// patchBody is what Update Schedule is sent for an edit of s: only the
// members the draft changed (an unchanged one-off's time, perhaps passed,
// is not sent again); null clears a name, a room or a target.
export function patchBody(s: Schedule, d: Draft): Schemas["ScheduleUpdateRequest"] {
  const b: Schemas["ScheduleUpdateRequest"] = {};
  const name = d.name.trim();
  if (name !== (s.name ?? "")) b.name = name || null;
  if (d.repeat && d.cron.trim() !== s.cron) b.cron = d.cron.trim();
  if (!d.repeat) {
    const at = new Date(atOf(d)).toISOString();
    if (s.at === null || Date.parse(s.at) !== Date.parse(at)) b.at = at;
  }
  if (d.timezone.trim() !== s.timezone) b.timezone = d.timezone.trim();
  if (d.text !== s.text) b.text = d.text;
  const user = d.userId.trim() || defaultUser;
  if (user !== s.userId) b.userId = user;
  const room = d.roomId.trim();
  if (room !== (s.roomId ?? "")) b.roomId = room || null;
  const target = targetOf(d);
  if (target?.platform !== s.target?.platform || target?.chatId !== s.target?.chatId) b.target = target;
  if (d.enabled !== s.enabled) b.enabled = d.enabled;
  return b;
}

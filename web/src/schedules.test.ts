// schedules.test.ts: the schedule calls as the API receives them (method,
// path, query, body), its refusals as the form shows them (the field a 400
// names), and the draft the form edits: what a create sends, what an edit
// sends (only what changed), and what the form refuses before sending.
// fetch is answered here (src/test-setup.ts stubs it).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiFailure, session } from "./api";
import { fieldOf } from "./ui";
import {
  type Draft,
  type Schedule,
  atOf,
  createBody,
  createSchedule,
  deleteSchedule,
  draftOf,
  listSchedules,
  newDraft,
  patchBody,
  problemsOf,
  setEnabled,
  updateSchedule,
} from "./schedules";

const fetchMock = vi.mocked(fetch);
let requests: Request[];

// answer answers the next requests, one each, with status and body.
function answer(...answers: [number, unknown][]): void {
  const queue = [...answers];
  fetchMock.mockImplementation(async (input) => {
    const request = input as Request;
    requests.push(request);
    const next = queue.shift();
    if (!next) throw new Error(`unexpected request ${request.method} ${request.url}`);
    return new Response(JSON.stringify(next[1]), { status: next[0], headers: { "Content-Type": "application/json" } });
  });
}

function schedule(extra: Partial<Schedule> = {}): Schedule {
  return {
    id: "sch_1",
    agentId: "agent_1",
    name: "Morning digest",
    cron: "0 8 * * 1-5",
    at: null,
    timezone: "Europe/Berlin",
    text: "Summarize the news.",
    userId: "schedule",
    roomId: null,
    target: null,
    enabled: true,
    nextRunAt: "2026-06-01T06:00:00.000Z",
    lastRunAt: null,
    lastRunId: null,
    lastError: null,
    createdAt: "2026-05-01T00:00:00.000Z",
    updatedAt: "2026-05-01T00:00:00.000Z",
    ...extra,
  };
}

const ok = (data: unknown) => ({ success: true, data });
const now = Date.parse("2026-05-31T12:00:00Z");

beforeEach(() => {
  requests = [];
  session.signIn("agk_test");
});

afterEach(() => {
  fetchMock.mockReset();
});

describe("the calls", () => {
  it("lists a page of the agent's schedules, past the browser's cache", async () => {
    const page = {
      items: [schedule()],
      pagination: { currentPage: 2, totalPages: 2, totalItems: 21, itemsPerPage: 20 },
    };
    answer([200, ok(page)]);
    expect(await listSchedules("agent_1", 2, 20)).toEqual(page);
    const [r] = requests;
    expect(r!.method).toBe("GET");
    expect(r!.url).toBe("http://agentd.test/v1/agents/agent_1/schedules?page=2&limit=20");
    expect(r!.cache).toBe("no-store");
    expect(r!.headers.get("Authorization")).toBe("Bearer agk_test");
  });

  it("creates a schedule with the body given", async () => {
    answer([201, ok(schedule())]);
    const body = { cron: "0 8 * * 1-5", timezone: "Europe/Berlin", text: "Summarize the news." };
    expect((await createSchedule("agent_1", body)).id).toBe("sch_1");
    expect(requests[0]!.method).toBe("POST");
    expect(requests[0]!.url).toBe("http://agentd.test/v1/agents/agent_1/schedules");
    expect(await requests[0]!.json()).toEqual(body);
  });

  it("changes a schedule, and switches one on or off alone", async () => {
    answer([200, ok(schedule({ text: "Now" }))], [200, ok(schedule({ enabled: false, nextRunAt: null }))]);
    await updateSchedule("agent_1", "sch_1", { text: "Now", roomId: null });
    expect(requests[0]!.method).toBe("PATCH");
    expect(requests[0]!.url).toBe("http://agentd.test/v1/agents/agent_1/schedules/sch_1");
    expect(await requests[0]!.json()).toEqual({ text: "Now", roomId: null });
    const off = await setEnabled(schedule(), false);
    expect(off.nextRunAt).toBeNull();
    expect(await requests[1]!.json()).toEqual({ enabled: false });
  });

  it("deletes a schedule", async () => {
    answer([200, ok({ id: "sch_1", deletedAt: "2026-06-01T00:00:00.000Z" })]);
    await deleteSchedule(schedule());
    expect(requests[0]!.method).toBe("DELETE");
    expect(requests[0]!.url).toBe("http://agentd.test/v1/agents/agent_1/schedules/sch_1");
  });

  it("refuses with the field a 400 names, for the form to show it there", async () => {
    const refusal = (field: string, reason: string) => ({
      success: false,
      error: { code: "INVALID_REQUEST", message: `Invalid ${field}.`, details: { field, reason } },
    });
    answer([400, refusal("timezone", "is not a known IANA time zone")], [400, refusal("target.chatId", "too long")]);
    const err = await createSchedule("agent_1", { cron: "@daily", timezone: "Mars/Olympus", text: "x" }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiFailure);
    expect(fieldOf(err)).toBe("timezone");
    expect((err as ApiFailure).details.reason).toBe("is not a known IANA time zone");
    // A member of target is shown at the target's group.
    expect(fieldOf(await updateSchedule("agent_1", "sch_1", {}).catch((e: unknown) => e))).toBe("target");
  });

  it("says a schedule is gone", async () => {
    answer([404, { success: false, error: { code: "SCHEDULE_NOT_FOUND", message: "Schedule not found." } }]);
    const err = await deleteSchedule(schedule()).catch((e: unknown) => e);
    expect((err as ApiFailure).code).toBe("SCHEDULE_NOT_FOUND");
    expect((err as ApiFailure).status).toBe(404);
  });
});

describe("the draft", () => {
  const draft = (extra: Partial<Draft> = {}): Draft => ({
    ...newDraft("Europe/Berlin", now),
    text: "Summarize the news.",
    ...extra,
  });

  it("starts daily at 09:00 in the zone given, or once at the next whole hour", () => {
    const d = newDraft("America/New_York", now);
    expect(d).toMatchObject({ repeat: true, cron: "0 9 * * *", timezone: "America/New_York", enabled: true });
    // 12:00 UTC is 08:00 in New York.
    expect(d.at).toBe("2026-05-31T09:00");
  });

  it("sends a cron schedule's members, leaving out the empty ones", () => {
    expect(createBody(draft())).toEqual({
      cron: "0 9 * * *",
      timezone: "Europe/Berlin",
      text: "Summarize the news.",
      enabled: true,
    });
    expect(
      createBody(
        draft({ name: " Digest ", userId: " ann ", roomId: "team", platform: "telegram", chatId: " -100123 " }),
      ),
    ).toEqual({
      name: "Digest",
      cron: "0 9 * * *",
      timezone: "Europe/Berlin",
      text: "Summarize the news.",
      userId: "ann",
      roomId: "team",
      target: { platform: "telegram", chatId: "-100123" },
      enabled: true,
    });
  });

  it("sends a one-off's wall time as the instant it names in its zone", () => {
    const d = draft({ repeat: false, at: "2026-06-02T09:30" });
    expect(createBody(d)).toMatchObject({ at: "2026-06-02T07:30:00.000Z", timezone: "Europe/Berlin" });
    expect(createBody(d)).not.toHaveProperty("cron");
    // A time the clocks jump over is the first minute that exists.
    expect(new Date(atOf({ at: "2027-03-28T02:30", timezone: "Europe/Berlin" })).toISOString()).toBe(
      "2027-03-28T01:00:00.000Z",
    );
    expect(atOf({ at: "", timezone: "Europe/Berlin" })).toBeNaN();
    expect(atOf({ at: "2026-06-02T09:30", timezone: "Nowhere/Else" })).toBeNaN();
  });

  it("reads a schedule back into the form", () => {
    const s = schedule({ roomId: "team", target: { platform: "discord", chatId: "42" }, userId: "ann" });
    expect(draftOf(s, now)).toMatchObject({
      name: "Morning digest",
      repeat: true,
      cron: "0 8 * * 1-5",
      timezone: "Europe/Berlin",
      userId: "ann",
      roomId: "team",
      platform: "discord",
      chatId: "42",
    });
    // The default user shows as the empty field; a one-off's time in its
    // zone.
    const once = draftOf(schedule({ cron: null, at: "2026-07-01T07:30:00.000Z", userId: "schedule" }), now);
    expect(once).toMatchObject({ repeat: false, at: "2026-07-01T09:30", userId: "", cron: "0 9 * * *" });
  });

  it("sends an edit's changes only", () => {
    const s = schedule();
    expect(patchBody(s, draftOf(s, now))).toEqual({});
    expect(patchBody(s, { ...draftOf(s, now), text: "Only this", enabled: false })).toEqual({
      text: "Only this",
      enabled: false,
    });
    // Emptied: the name and the room are cleared, the user goes back to
    // the default, the target is removed.
    const full = schedule({ roomId: "team", userId: "ann", target: { platform: "telegram", chatId: "1" } });
    expect(patchBody(full, { ...draftOf(full, now), name: "", roomId: "", userId: "", platform: "" })).toEqual({
      name: null,
      roomId: null,
      userId: "schedule",
      target: null,
    });
    expect(patchBody(full, { ...draftOf(full, now), chatId: "2" })).toEqual({
      target: { platform: "telegram", chatId: "2" },
    });
  });

  it("switches a cron schedule to a one-off and back", () => {
    const s = schedule();
    expect(patchBody(s, { ...draftOf(s, now), repeat: false, at: "2026-06-10T08:00" })).toEqual({
      at: "2026-06-10T06:00:00.000Z",
    });
    const once = schedule({ cron: null, at: "2026-06-10T06:00:00.000Z" });
    expect(patchBody(once, draftOf(once, now))).toEqual({});
    expect(patchBody(once, { ...draftOf(once, now), repeat: true, cron: "@daily" })).toEqual({ cron: "@daily" });
    // A one-off's zone alone changes the instant its wall time names.
    expect(patchBody(once, { ...draftOf(once, now), timezone: "UTC" })).toEqual({
      at: "2026-06-10T08:00:00.000Z",
      timezone: "UTC",
    });
  });

  it("says what is wrong before sending", () => {
    expect(problemsOf(draft(), now)).toEqual({});
    expect(problemsOf(draft({ cron: "0 25 * * *", text: " " }), now)).toEqual({
      cron: "The hour field: 25 is above 23.",
      text: "Write the message the agent receives.",
    });
    expect(problemsOf(draft({ cron: "0 0 30 2 *" }), now).cron).toMatch(/never comes due/);
    expect(problemsOf(draft({ timezone: "Europe/Atlantis" }), now)).toEqual({
      timezone: "Not a known IANA time zone: choose one from the list.",
    });
    expect(problemsOf(draft({ platform: "discord", chatId: "" }), now).target).toMatch(/chat id/);
    const once = (at: string) => problemsOf(draft({ repeat: false, at }), now).at;
    // Now is 14:00 in Berlin.
    expect(once("2026-05-31T13:00")).toBe("This time has passed: choose one ahead.");
    expect(once("2026-05-31T14:00")).toBe("This time has passed: choose one ahead.");
    expect(once("2026-05-31T14:01")).toBeUndefined();
    expect(once("2027-06-01T12:00")).toBe("A one-off fires at most a year ahead.");
    expect(once("")).toBe("Choose a date and a time.");
  });
});

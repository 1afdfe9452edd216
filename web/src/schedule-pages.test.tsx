// schedule-pages.test.tsx: a schedule's line in the list as it renders:
// its expression or one-off time in its zone, its next run, its last run
// linked to the run with the reason it went wrong, and the switch.
import { renderToString } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import { ScheduleRow } from "./schedule-pages";
import type { Schedule } from "./schedules";

function schedule(extra: Partial<Schedule> = {}): Schedule {
  return {
    id: "sch_1",
    agentId: "agent_1",
    name: "Morning digest",
    cron: "30 7 * * *",
    at: null,
    timezone: "Europe/Berlin",
    text: "Summarize the news.",
    userId: "schedule",
    roomId: null,
    target: null,
    enabled: true,
    nextRunAt: "2026-06-02T05:30:00.000Z",
    lastRunAt: null,
    lastRunId: null,
    lastError: null,
    createdAt: "2026-05-01T00:00:00.000Z",
    updatedAt: "2026-05-01T00:00:00.000Z",
    ...extra,
  };
}

const row = (s: Schedule, writable = true) =>
  renderToString(
    <table>
      <tbody>
        <ScheduleRow
          schedule={s}
          writable={writable}
          busy={false}
          editing={false}
          onFlip={async () => {}}
          onEdit={() => {}}
          onDelete={async () => {}}
        />
      </tbody>
    </table>,
  );

describe("a schedule's line", () => {
  it("shows a cron schedule, its zone and its next run in that zone", () => {
    const out = row(schedule());
    expect(out).toContain('<td class="when" data-label="When"><div><code>30 7 * * *</code></div></td>');
    expect(out).toContain("Europe/Berlin");
    expect(out).toContain('<time datetime="2026-06-02T05:30:00.000Z"');
    expect(out).toContain("Jun 2, 2026, 07:30");
    expect(out).toContain("never");
    expect(out).toMatch(
      /<input type="checkbox" role="switch" checked\/?><span class="visually-hidden">Enabled: Morning digest/,
    );
    // The default user goes unsaid.
    expect(out).not.toContain("from schedule");
  });

  it("links the last run and says why the last due time went wrong", () => {
    const out = row(
      schedule({
        lastRunAt: "2026-06-01T05:30:00.000Z",
        lastRunId: "run_9",
        lastError: "the reply was not sent: the telegram bot is not connected",
        userId: "ann",
        roomId: "team",
        target: { platform: "telegram", chatId: "-100" },
      }),
    );
    expect(out).toContain('<a href="#/agents/agent_1/runs/run_9"><time datetime="2026-06-01T05:30:00.000Z"');
    expect(out).toContain(
      '<p class="schedule-error">Error: the reply was not sent: the telegram bot is not connected</p>',
    );
    expect(out).toContain("from ann · in room team · reply also to telegram -100");
  });

  it("says a disabled schedule is off, and a fired one-off has no next run", () => {
    expect(row(schedule({ enabled: false, nextRunAt: null }))).toContain('<span class="meta">off</span>');
    const fired = row(schedule({ cron: null, at: "2026-05-20T08:00:00.000Z", nextRunAt: null, timezone: "UTC" }));
    expect(fired).toContain('once, <time datetime="2026-05-20T08:00:00.000Z"');
    expect(fired).toContain("none: it has fired");
  });

  it("leaves out the controls for a read-only key", () => {
    const out = row(schedule(), false);
    expect(out).not.toContain('role="switch"');
    expect(out).not.toContain("Delete");
    expect(out).toContain('<span class="status active">on</span>');
  });
});

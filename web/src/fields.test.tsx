// fields.test.tsx: the shared form pieces of ui.tsx as they render: a
// field shows the API's refusal of its member or, without one, the problem
// the page found, ties either to its input for a screen reader, and marks
// it invalid; a switch is a checkbox with the switch role; a budget's
// refusal (402) says which budget and when it resets.
import { renderToString } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import { ApiFailure } from "./api";
import { ErrorBox, Group, Switch, TextField } from "./ui";

const refusal = (field: string) =>
  new ApiFailure(400, { code: "INVALID_REQUEST", message: "Invalid.", details: { field, reason: "is wrong" } }, null);

const field = (props: { error?: unknown; problem?: string }) =>
  renderToString(<TextField id="cron" label="Cron" hint="Five fields." value="x" onValue={() => {}} {...props} />);

describe("a field", () => {
  it("is plain without a problem or a refusal of its member", () => {
    const out = field({ error: refusal("timezone") });
    expect(out).toContain('<div class="field">');
    expect(out).toContain('aria-describedby="cron-hint"');
    expect(out).toContain('aria-invalid="false"');
    expect(out).not.toContain("field-error");
  });

  it("shows the problem found before sending, read with the input", () => {
    const out = field({ problem: "The hour field: 25 is above 23." });
    expect(out).toContain('<div class="field invalid">');
    expect(out).toContain('aria-describedby="cron-error cron-hint"');
    expect(out).toContain('aria-invalid="true"');
    expect(out).toContain('<p id="cron-error" class="field-error">The hour field: 25 is above 23.</p>');
  });

  it("shows the API's refusal of its member rather than the problem, announced", () => {
    const out = field({ error: refusal("cron"), problem: "stale" });
    expect(out).toContain('<p id="cron-error" class="field-error" role="alert" data-field="cron">cron: is wrong</p>');
    expect(out).not.toContain("stale");
  });

  it("in a group, takes a refusal of any member under it", () => {
    const out = renderToString(
      <Group id="target" legend="Target" error={refusal("target.chatId")}>
        <span />
      </Group>,
    );
    expect(out).toContain('class="invalid"');
    expect(out).toContain("target.chatId: is wrong");
  });
});

describe("a switch", () => {
  it("is a checkbox with the switch role, named by its label", () => {
    const out = renderToString(<Switch id="enabled" label="Enabled" hideLabel checked onChange={() => {}} />);
    expect(out).toMatch(/^<label class="switch"><input id="enabled" type="checkbox" role="switch" checked/);
    expect(out).toContain('<span class="visually-hidden">Enabled</span>');
  });
});

describe("an error box", () => {
  it("says which budget refused a run, and when it resets", () => {
    const resetsAt = new Date(Date.now() + 3 * 3600 * 1000).toISOString();
    const refused = new ApiFailure(
      402,
      {
        code: "BUDGET_EXCEEDED",
        message: "The agent's daily budget is spent.",
        details: { scope: "agent", period: "day", limitUsd: 1, spentUsd: 1.02, resetsAt },
      },
      null,
    );
    const out = renderToString(<ErrorBox error={refused} />);
    expect(out).toContain("<strong>BUDGET_EXCEEDED</strong>");
    expect(out).toContain("<strong>BUDGET_EXCEEDED</strong>: The agent's daily budget of $1.00 is spent: $1.02 today.");
    expect(out).toContain("It resets at");
    expect(out).toContain("<p>Raise it in the agent's Settings, under Budget, or wait for the reset.</p>");
  });
});

// schedule-pages.tsx: an agent's Schedules tab: its schedules (what each
// sends and when, when it fires next, how its last time went, a switch
// that turns it on or off, delete), and the form that makes or edits one,
// whose cron helper shows the next five times as an expression is typed,
// in the zone chosen.
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Agent } from "./api";
import { nextTimes, parseCron } from "./cron";
import { useAction, useQuery, useReadOnly } from "./hooks";
import { cut } from "./runs";
import {
  type Draft,
  type Problems,
  type Schedule,
  atOf,
  createBody,
  createSchedule,
  defaultUser,
  deleteSchedule,
  draftOf,
  listSchedules,
  maxChatId,
  maxId,
  maxName,
  maxText,
  newDraft,
  patchBody,
  platforms,
  problemsOf,
  setEnabled,
  updateSchedule,
} from "./schedules";
import {
  Confirm,
  EmptyState,
  ErrorBox,
  Group,
  ListTable,
  ReadOnlyNote,
  Relative,
  SelectField,
  Switch,
  TextArea,
  TextField,
  relative,
  useFocusRefused,
} from "./ui";
import { browserZone, inputWall, isZone, offsetAt, offsetLabel, wallInput, wallOf, zoneNames, zoneTime } from "./zones";

const pageSize = 20;

// titleOf is how a schedule is named in the page: its name, else its text.
function titleOf(s: Schedule): string {
  return s.name || cut(s.text, 48);
}

// AgentSchedules is an agent's Schedules tab.
export function AgentSchedules({ agent }: { agent: Agent }) {
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<Schedule>();
  const [done, setDone] = useState<string>();
  const changing = useAction();
  const writable = !useReadOnly();
  const list = useQuery((signal) => listSchedules(agent.id, page, pageSize, signal), [agent.id, page]);
  const formTitle = useRef<HTMLHeadingElement>(null);
  const doneLine = useRef<HTMLParagraphElement>(null);
  // What a save or a delete did is said at the top, over the list, and
  // takes the focus there (a deleted row's button is gone; a saved form
  // is below the list it changed).
  useEffect(() => {
    if (done) doneLine.current?.focus();
  }, [done]);
  // An edit brings the form into view, its heading focused.
  useEffect(() => {
    if (editing) formTitle.current?.focus();
  }, [editing?.id]);
  // A page emptied by a delete shows the one before.
  useEffect(() => {
    if (list.data?.items.length === 0 && page > 1) setPage(page - 1);
  }, [list.data]);

  const replace = (s: Schedule) => {
    if (list.data) list.setData({ ...list.data, items: list.data.items.map((x) => (x.id === s.id ? s : x)) });
  };
  const flip = (s: Schedule, on: boolean) =>
    changing.run(async () => {
      setDone(undefined);
      replace(await setEnabled(s, on));
    });
  const remove = (s: Schedule) =>
    changing.run(async () => {
      setDone(undefined);
      await deleteSchedule(s);
      if (editing?.id === s.id) setEditing(undefined);
      setDone(`Deleted “${titleOf(s)}”.`);
      list.reload();
    });
  const saved = (s: Schedule, created: boolean) => {
    setEditing(undefined);
    const next = s.nextRunAt
      ? `; it fires next ${relative(s.nextRunAt)}, ${zoneTime(Date.parse(s.nextRunAt), s.timezone)}`
      : "";
    setDone(`${created ? "Created" : "Saved"} “${titleOf(s)}”${next}.`);
    list.reload();
  };

  const none = list.data?.items.length === 0 && page === 1;
  return (
    <section aria-labelledby="schedules-title" class="schedules">
      <h2 id="schedules-title">Schedules</h2>
      <p class="hint">
        Messages the agent receives on a clock, each read in its own time zone, daylight saving included. Each due time
        makes a run; its reply is stored in the schedule's conversation.
      </p>
      {!writable && <ReadOnlyNote what="schedules" />}
      <ErrorBox error={changing.error} />
      {done && (
        <p class="ok" role="status" id="schedules-done" tabIndex={-1} ref={doneLine}>
          {done}
        </p>
      )}
      {none ? (
        <EmptyState title="No schedules yet.">
          A schedule sends the agent a message at set times (a morning digest, an hourly check) or once, as if a user
          had written it; the reply can also go to a Telegram chat or a Discord channel.
          {writable && " Make one below."}
        </EmptyState>
      ) : (
        <ListTable
          items={list.data?.items}
          error={list.error}
          empty="No schedules on this page."
          columns={["Schedule", "When", "Time zone", "Next run", "Last run", "Enabled", ...(writable ? [""] : [])]}
          rowKey={(s) => s.id}
          row={(s) => (
            <ScheduleRow
              schedule={s}
              writable={writable}
              busy={changing.busy}
              editing={editing?.id === s.id}
              onFlip={flip}
              onEdit={() => (setDone(undefined), setEditing(s))}
              onDelete={() => remove(s)}
            />
          )}
          pagination={list.data?.pagination}
          onPage={setPage}
        />
      )}
      {writable && (
        <section aria-labelledby="schedule-form-title" class="schedule-form-section">
          <h3 id="schedule-form-title" tabIndex={-1} ref={formTitle}>
            {editing ? `Edit “${titleOf(editing)}”` : "New schedule"}
          </h3>
          <ScheduleForm
            key={editing?.id ?? "new"}
            agentId={agent.id}
            editing={editing}
            onSaved={saved}
            onCancel={() => setEditing(undefined)}
          />
        </section>
      )}
    </section>
  );
}

// Cell is a cell of the list labelled with its column, which a phone
// shows beside its content (the list becomes cards there).
function Cell({ label, class: cls, children }: { label: string; class?: string; children: ComponentChildren }) {
  return (
    <td class={cls} data-label={label}>
      <div>{children}</div>
    </td>
  );
}

// ScheduleRow is one schedule in the list: what it sends and for whom,
// when (its expression, or a one-off's time, and its zone), when it fires
// next, how its last due time went (the run, and why it failed), and the
// switch, Edit and Delete.
export function ScheduleRow(props: {
  schedule: Schedule;
  writable: boolean;
  busy: boolean;
  editing: boolean;
  onFlip: (s: Schedule, on: boolean) => Promise<void>;
  onEdit: () => void;
  onDelete: () => Promise<void>;
}) {
  const { schedule: s } = props;
  const title = titleOf(s);
  const who = [
    s.userId !== defaultUser ? `from ${s.userId}` : "",
    s.roomId ? `in room ${s.roomId}` : "",
    s.target ? `reply also to ${s.target.platform} ${s.target.chatId}` : "",
  ].filter(Boolean);
  return (
    <tr data-schedule={s.id} class={props.editing ? "editing" : undefined}>
      <td class="title-cell">
        <strong>{title}</strong>
        {s.name && <div class="meta">{cut(s.text, 80)}</div>}
        {who.length > 0 && <div class="meta">{who.join(" · ")}</div>}
      </td>
      <Cell label="When" class="when">
        {s.cron !== null ? (
          <code>{s.cron}</code>
        ) : (
          <>once, {s.at ? <time dateTime={s.at}>{zoneTime(Date.parse(s.at), s.timezone)}</time> : "—"}</>
        )}
      </Cell>
      <Cell label="Time zone">
        {s.timezone}
        {isZone(s.timezone) && <div class="meta">{offsetLabel(offsetAt(Date.now(), s.timezone))}</div>}
      </Cell>
      <Cell label="Next run" class="next-run">
        {s.nextRunAt ? (
          <>
            <Relative ts={s.nextRunAt} />
            <div class="meta">{zoneTime(Date.parse(s.nextRunAt), s.timezone)}</div>
          </>
        ) : (
          <span class="meta">{!s.enabled ? "off" : s.cron === null ? "none: it has fired" : "none"}</span>
        )}
      </Cell>
      <Cell label="Last run" class="last-run">
        {!s.lastRunAt ? (
          <span class="meta">never</span>
        ) : s.lastRunId ? (
          <a href={`#/agents/${s.agentId}/runs/${s.lastRunId}`}>
            <Relative ts={s.lastRunAt} />
            <span class="visually-hidden">: its run</span>
          </a>
        ) : (
          <Relative ts={s.lastRunAt} />
        )}
        {s.lastError && <p class="schedule-error">Error: {s.lastError}</p>}
      </Cell>
      <Cell label="Enabled">
        {props.writable ? (
          <EnabledSwitch schedule={s} title={title} disabled={props.busy} onFlip={props.onFlip} />
        ) : (
          <span class={`status ${s.enabled ? "active" : ""}`}>{s.enabled ? "on" : "off"}</span>
        )}
      </Cell>
      {props.writable && (
        <td class="row-actions">
          <button type="button" class="quiet small edit-schedule" onClick={props.onEdit} aria-pressed={props.editing}>
            Edit<span class="visually-hidden"> “{title}”</span>
          </button>
          <Confirm
            small
            label={
              <>
                Delete<span class="visually-hidden"> “{title}”</span>
              </>
            }
            question={<>Delete the schedule “{title}”? It fires no more; the runs it made stay.</>}
            yes="Yes, delete it"
            onYes={props.onDelete}
          />
        </td>
      )}
    </tr>
  );
}

// EnabledSwitch turns a schedule on or off at once: it shows the choice
// while the API answers, then what the API answered.
function EnabledSwitch(props: {
  schedule: Schedule;
  title: string;
  disabled: boolean;
  onFlip: (s: Schedule, on: boolean) => Promise<void>;
}) {
  const { schedule: s } = props;
  const [want, setWant] = useState<boolean>();
  return (
    <Switch
      label={`Enabled: ${props.title}`}
      hideLabel
      checked={want ?? s.enabled}
      disabled={props.disabled || want !== undefined}
      onChange={(on) => {
        setWant(on);
        void props.onFlip(s, on).finally(() => setWant(undefined));
      }}
    />
  );
}

// presets are common expressions, one click away.
const presets: [string, string][] = [
  ["Every hour", "0 * * * *"],
  ["Every day at 09:00", "0 9 * * *"],
  ["Weekdays at 09:00", "0 9 * * 1-5"],
  ["Mondays at 09:00", "0 9 * * 1"],
  ["The 1st at 09:00", "0 9 1 * *"],
];

// problemOrder is the order of the form's members, so the first wrong one
// takes the focus.
const problemOrder: (keyof Problems)[] = ["cron", "at", "timezone", "text", "target"];

// ScheduleForm makes a schedule, or edits one (editing): only the members
// changed are sent. What can be checked is checked as it is typed (the
// expression, the zone, a one-off's time) or when sent (the rest); the
// API's refusal shows at the member it names.
function ScheduleForm(props: {
  agentId: string;
  editing?: Schedule;
  onSaved: (s: Schedule, created: boolean) => void;
  onCancel: () => void;
}) {
  const { editing } = props;
  const [draft, setDraft] = useState<Draft>(() => (editing ? draftOf(editing) : newDraft()));
  const [tried, setTried] = useState(false);
  const saving = useAction();
  useFocusRefused(saving.error);
  const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }));
  const problems = problemsOf(draft);
  // The timing is checked as it is typed; the rest once a send was tried.
  const shown: Problems = tried ? problems : { cron: problems.cron, at: problems.at, timezone: problems.timezone };
  const error = saving.error;

  const submit = () => {
    const first = problemOrder.find((k) => problems[k]);
    if (first) {
      setTried(true);
      document.getElementById(first)?.focus();
      return;
    }
    void saving.run(async () => {
      const s = editing
        ? await updateSchedule(props.agentId, editing.id, patchBody(editing, draft))
        : await createSchedule(props.agentId, createBody(draft));
      props.onSaved(s, !editing);
      if (!editing) {
        setDraft(newDraft(draft.timezone));
        setTried(false);
      }
    });
  };

  return (
    <form
      class="schedule-form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <TextField
        id="name"
        label="Name (optional)"
        error={error}
        maxLength={maxName}
        placeholder="Morning digest"
        value={draft.name}
        onValue={(name) => set({ name })}
      />
      <fieldset class="repeat">
        <legend>When</legend>
        <label class="inline">
          <input
            type="radio"
            name="repeat"
            id="repeat-cron"
            checked={draft.repeat}
            onChange={() => set({ repeat: true })}
          />
          On a cron schedule
        </label>
        <label class="inline">
          <input
            type="radio"
            name="repeat"
            id="repeat-once"
            checked={!draft.repeat}
            onChange={() => set({ repeat: false })}
          />
          Once
        </label>
      </fieldset>
      <div class="pair">
        {draft.repeat ? (
          <TextField
            id="cron"
            label="Cron expression"
            hint="minute hour day-of-month month day-of-week (Sunday is 0), with * , - and /; or @hourly, @daily, @weekly, @monthly, @yearly."
            error={error}
            problem={shown.cron}
            class="mono"
            spellcheck={false}
            autoComplete="off"
            maxLength={200}
            value={draft.cron}
            onValue={(cron) => set({ cron })}
          />
        ) : (
          <OnceField draft={draft} error={error} problem={shown.at} onValue={(at) => set({ at })} />
        )}
        <ZoneField
          value={draft.timezone}
          error={error}
          problem={shown.timezone}
          onValue={(timezone) => set({ timezone })}
        />
      </div>
      {draft.repeat && (
        <CronHelper
          cron={draft.cron}
          zone={draft.timezone}
          valid={!problems.cron && !problems.timezone}
          onPick={(cron) => set({ cron })}
        />
      )}
      <TextArea
        id="text"
        label="Message"
        hint="What the agent receives at each time, as if the user below had sent it."
        error={error}
        problem={shown.text}
        rows={3}
        maxLength={maxText}
        value={draft.text}
        onValue={(text) => set({ text })}
      />
      <div class="pair">
        <TextField
          id="userId"
          label="From user (optional)"
          hint={`Whose conversation it is; empty: ${defaultUser}.`}
          error={error}
          maxLength={maxId}
          placeholder={defaultUser}
          value={draft.userId}
          onValue={(userId) => set({ userId })}
        />
        <TextField
          id="roomId"
          label="In room (optional)"
          hint="A room's conversation rather than the user's own."
          error={error}
          maxLength={maxId}
          value={draft.roomId}
          onValue={(roomId) => set({ roomId })}
        />
      </div>
      <Group
        id="target"
        legend="Also send the reply to (optional)"
        hint="The agent's bot on that platform sends it; the bot must be connected."
        error={error}
        problem={shown.target}
      >
        <div class="pair">
          <SelectField
            id="target-platform"
            label="Platform"
            value={draft.platform}
            options={[{ value: "", label: "nowhere else" }, ...platforms]}
            onValue={(platform) => set({ platform })}
          />
          {draft.platform && (
            <TextField
              id="target-chatId"
              label={draft.platform === "telegram" ? "Telegram chat id" : "Discord channel id"}
              maxLength={maxChatId}
              placeholder={draft.platform === "telegram" ? "-1001234567890" : "112233445566778899"}
              value={draft.chatId}
              onValue={(chatId) => set({ chatId })}
            />
          )}
        </div>
      </Group>
      <Switch id="enabled" label="Enabled" checked={draft.enabled} onChange={(enabled) => set({ enabled })} />
      <ErrorBox error={error} />
      <div class="actions">
        <button type="submit" disabled={saving.busy}>
          {editing ? "Save schedule" : "Create schedule"}
        </button>
        {editing && (
          <button type="button" class="quiet" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

// OnceField is a one-off's date and time, read in the draft's zone; its
// hint says when that is from now, and where the clocks skip the time,
// when it fires instead.
function OnceField(props: { draft: Draft; error: unknown; problem?: string; onValue: (at: string) => void }) {
  const { draft } = props;
  const zone = isZone(draft.timezone) ? draft.timezone : undefined;
  const at = atOf(draft);
  let hint = "A date and a time in the time zone chosen, at most a year ahead.";
  if (zone && !Number.isNaN(at)) {
    const moved = wallOf(at, zone) !== inputWall(draft.at);
    hint = moved
      ? `The clocks skip that time in ${zone} that day: it fires at ${zoneTime(at, zone)}, ${relative(new Date(at).toISOString())}.`
      : `Fires ${relative(new Date(at).toISOString())}.`;
  }
  const now = Date.now();
  return (
    <TextField
      id="at"
      label="Once at"
      type="datetime-local"
      hint={hint}
      error={props.error}
      problem={props.problem}
      min={zone ? wallInput(wallOf(now, zone)) : undefined}
      max={zone ? wallInput(wallOf(now + 366 * 86_400_000, zone)) : undefined}
      value={draft.at}
      onValue={props.onValue}
    />
  );
}

// ZoneField is the time zone: typed, or found in the IANA zones the
// browser knows (the list filters as one types); its hint gives the
// zone's offset now, and a button goes back to the browser's own zone.
function ZoneField(props: { value: string; error: unknown; problem?: string; onValue: (zone: string) => void }) {
  const names = useMemo(zoneNames, []);
  const mine = useMemo(browserZone, []);
  const { value } = props;
  const known = isZone(value);
  const hint = `${known ? `${offsetLabel(offsetAt(Date.now(), value))} now${value === mine ? ", this browser's zone" : ""}. ` : ""}Type to search the ${names.length} zones.`;
  return (
    <div class="zone-field">
      <TextField
        id="timezone"
        label="Time zone"
        list="zone-names"
        autoComplete="off"
        spellcheck={false}
        hint={hint}
        error={props.error}
        problem={props.problem}
        value={value}
        onValue={props.onValue}
        onFocus={(e) => e.currentTarget.select()}
      />
      <datalist id="zone-names">
        {names.map((n) => (
          <option key={n} value={n} />
        ))}
      </datalist>
      {value !== mine && (
        <button type="button" class="link use-mine" onClick={() => props.onValue(mine)}>
          Use this browser's zone ({mine})
        </button>
      )}
    </div>
  );
}

// CronHelper offers common expressions and shows the next five times of
// the one typed, in zone, as it is typed (nothing while it is wrong: the
// field says why), with the browser's time beside them when its zone
// differs.
function CronHelper(props: { cron: string; zone: string; valid: boolean; onPick: (cron: string) => void }) {
  const { cron, zone, valid } = props;
  const mine = useMemo(browserZone, []);
  const times = useMemo(() => (valid ? nextTimes(parseCron(cron), Date.now(), zone) : []), [cron, zone, valid]);
  return (
    <div class="cron-helper">
      <div class="cron-presets" role="group" aria-label="Common schedules">
        {presets.map(([label, expr]) => (
          <button
            key={expr}
            type="button"
            class="quiet small"
            aria-pressed={cron.trim() === expr}
            onClick={() => props.onPick(expr)}
          >
            {label}
          </button>
        ))}
      </div>
      {valid && (
        <div class="cron-next" aria-labelledby="cron-next-title" role="group">
          <p id="cron-next-title" class="label">
            Next {times.length === 5 ? "five" : times.length} times in {zone}
          </p>
          <ol>
            {times.map((t) => (
              <li key={t}>
                <time dateTime={new Date(t).toISOString()}>{zoneTime(t, zone)}</time>
                {mine !== zone && <span class="meta"> · {zoneTime(t, mine)} here</span>}
              </li>
            ))}
          </ol>
        </div>
      )}
    </div>
  );
}

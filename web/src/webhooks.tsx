// webhooks.tsx: the account's webhooks (list and create), one webhook (edit,
// test, rotate its secret, delete) and its deliveries (retry). A secret is
// answered by create and rotate only, so it is shown once, then forgotten.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, call, type Schemas, send } from "./api";
import { useAction, useQuery } from "./hooks";
import { Choices, Confirm, ErrorBox, ListTable, TextField, go, useFocusRefused, when } from "./ui";

type Webhook = Schemas["Webhook"];
type Selector = Schemas["WebhookEventSelector"];

// eventTypes are the contract's event types: the Record makes a type added
// to the enum stop the build until it is listed here, so the form offers it.
const eventTypes = Object.keys({
  "agent.created": 1,
  "agent.updated": 1,
  "agent.deleted": 1,
  "agent.status_changed": 1,
  "message.completed": 1,
  "connection.changed": 1,
  "run.completed": 1,
  "run.failed": 1,
  "run.cancelled": 1,
  "run.requires_action": 1,
  "budget.threshold": 1,
  "budget.exceeded": 1,
  "webhook.test": 1,
} satisfies Record<Schemas["WebhookEventType"], 1>) as Schemas["WebhookEventType"][];

const deliveryStatuses: Schemas["DeliveryStatus"][] = ["pending", "succeeded", "failed"];

// Draft is what the webhook form edits.
type Draft = { url: string; events: Selector[]; description: string; agentId: string; enabled: boolean };

const emptyDraft: Draft = { url: "", events: ["*"], description: "", agentId: "", enabled: true };

// WebhookForm is the form of both create (with the agent filter, which is
// fixed once made) and edit (with enabled).
function WebhookForm(props: {
  draft: Draft;
  onChange: (d: Draft) => void;
  onSubmit: () => void;
  error: unknown;
  busy: boolean;
  submit: string;
  editing?: boolean;
}) {
  const { draft: d, onChange, error } = props;
  const set = (patch: Partial<Draft>) => onChange({ ...d, ...patch });
  useFocusRefused(error);
  const all = d.events.includes("*");
  return (
    <form
      class="webhook-form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <TextField
        id="url"
        label="URL"
        hint="http or https; agentd POSTs each event here, signed."
        error={error}
        type="url"
        required
        placeholder="https://hooks.example.com/agentd"
        value={d.url}
        onValue={(url) => set({ url })}
      />
      <Choices
        id="events"
        legend="Events"
        hint="All events includes the types added later."
        options={[
          { value: "*" as Selector, label: "All events (*)" },
          ...eventTypes.map((t) => ({ value: t as Selector, label: t, disabled: all })),
        ]}
        chosen={d.events}
        // Choosing "*" replaces the types it covers.
        onChange={(events) => set({ events: events.includes("*") && !all ? ["*"] : events })}
        error={error}
      />
      <TextField
        id="description"
        label="Description (optional)"
        error={error}
        value={d.description}
        onValue={(description) => set({ description })}
      />
      {!props.editing && (
        <TextField
          id="agentId"
          label="Agent (optional)"
          hint="An agent's id, agent_…, for its events only."
          error={error}
          value={d.agentId}
          onValue={(agentId) => set({ agentId })}
        />
      )}
      {props.editing && (
        <label class="inline">
          <input
            id="enabled"
            type="checkbox"
            checked={d.enabled}
            onChange={(e) => set({ enabled: e.currentTarget.checked })}
          />
          Enabled
        </label>
      )}
      <ErrorBox error={error} />
      <button type="submit" disabled={props.busy}>
        {props.submit}
      </button>
    </form>
  );
}

// SecretOnce shows a secret that the API answers only this once, and takes
// the focus so it is seen and read out.
function SecretOnce({ secret, note, onDone }: { secret: string; note: string; onDone: () => void }) {
  const box = useRef<HTMLDivElement>(null);
  const [copied, setCopied] = useState<string>();
  useEffect(() => box.current?.focus(), [secret]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied("Copied to the clipboard.");
    } catch {
      document.getElementById("webhook-secret")?.focus();
      setCopied("The browser refused the clipboard: the secret is selected, copy it with the keyboard.");
    }
  };
  return (
    <div class="secret" role="region" aria-labelledby="secret-title" tabIndex={-1} ref={box}>
      <h2 id="secret-title">Copy the signing secret now</h2>
      <p>
        <strong>It is shown only this once</strong>: agentd cannot show it again. {note}
      </p>
      <label for="webhook-secret">Signing secret</label>
      <input id="webhook-secret" readOnly spellcheck={false} value={secret} onFocus={(e) => e.currentTarget.select()} />
      <button type="button" onClick={() => void copy()}>
        Copy
      </button>
      <button type="button" class="quiet" onClick={onDone}>
        I have stored it
      </button>
      {copied && <p role="status">{copied}</p>}
    </div>
  );
}

// eventsOf says which events a webhook receives.
function eventsOf(w: Webhook): string {
  return w.events.includes("*") ? "all events" : w.events.join(", ");
}

function Enabled({ webhook: w }: { webhook: Webhook }) {
  return (
    <>
      <span class={`status ${w.enabled ? "active" : "error"}`}>{w.enabled ? "enabled" : "disabled"}</span>
      {w.disabledReason && <div class="meta">{w.disabledReason}</div>}
    </>
  );
}

export function Webhooks() {
  const [page, setPage] = useState(1);
  const [draft, setDraft] = useState<Draft>(emptyDraft);
  const creating = useAction();
  const [created, setCreated] = useState<Schemas["WebhookWithSecret"]>();
  const list = useQuery(
    (signal) => call(api.GET("/webhooks", { params: { query: { page, limit: 10 } }, signal })).then((r) => r.data),
    [page, created],
  );

  const create = () =>
    creating.run(async () => {
      const { url, events, description, agentId } = draft;
      const r = await call(
        api.POST("/webhooks", {
          body: {
            url: url.trim(),
            events,
            ...(description.trim() ? { description: description.trim() } : {}),
            ...(agentId.trim() ? { agentId: agentId.trim() } : {}),
          },
        }),
      );
      setCreated(r.data);
      setDraft(emptyDraft);
    });

  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      {created && (
        <SecretOnce
          secret={created.secret}
          note={`Receivers of ${created.url} check the webhook-signature header with it.`}
          onDone={() => setCreated(undefined)}
        />
      )}
      <ListTable
        items={list.data?.items}
        error={list.error}
        empty="No webhooks yet: add one below to have agentd POST its events."
        columns={["URL", "Events", "Agent", "State", "Created"]}
        rowKey={(w) => w.id}
        row={(w) => (
          <tr>
            <td>
              <a href={`#/webhooks/${w.id}`}>{w.url}</a>
              {w.description && <div class="meta">{w.description}</div>}
            </td>
            <td>{eventsOf(w)}</td>
            <td>{w.agentId ?? "all agents"}</td>
            <td>
              <Enabled webhook={w} />
            </td>
            <td>{when(w.createdAt)}</td>
          </tr>
        )}
        pagination={list.data?.pagination}
        onPage={setPage}
      />
      <h2>New webhook</h2>
      <WebhookForm
        draft={draft}
        onChange={setDraft}
        error={creating.error}
        busy={creating.busy}
        submit="Create webhook"
        onSubmit={() => void create()}
      />
    </section>
  );
}

function draftOf(w: Webhook): Draft {
  return { url: w.url, events: w.events, description: w.description, agentId: w.agentId ?? "", enabled: w.enabled };
}

export function WebhookPage({ id }: { id: string }) {
  const [draft, setDraft] = useState<Draft>(emptyDraft);
  // The page's actions (save, test, rotate) run one at a time: saving's
  // failure shows under the form, the others' above them.
  const actions = useAction();
  const saving = useAction();
  const [saved, setSaved] = useState<string>();
  const [queued, setQueued] = useState<string>();
  const [secret, setSecret] = useState<string>();
  const deleting = useAction();
  // tests counts the test events sent, so the deliveries reload after each.
  const [tests, setTests] = useState(0);
  const webhookId = { params: { path: { webhookId: id } } };
  const {
    data: webhook,
    error,
    setData: setWebhook,
  } = useQuery((signal) => call(api.GET("/webhooks/{webhookId}", { ...webhookId, signal })).then((r) => r.data), [id]);
  // The form starts from each webhook loaded or saved.
  useEffect(() => {
    if (webhook) setDraft(draftOf(webhook));
  }, [webhook]);

  // act runs one of the page's actions.
  const act = (action: () => Promise<void>) =>
    actions.run(async () => {
      setQueued(undefined);
      await action();
    });
  const save = () =>
    act(() =>
      saving.run(async () => {
        setSaved(undefined);
        const { url, events, description, enabled } = draft;
        const r = await call(
          api.PATCH("/webhooks/{webhookId}", { ...webhookId, body: { url: url.trim(), events, description, enabled } }),
        );
        setWebhook(r.data);
        setSaved(r.data.changes.length ? `Saved: ${r.data.changes.join(", ")} changed.` : "Saved: nothing changed.");
      }),
    );
  const test = () =>
    act(async () => {
      await send(api.POST("/webhooks/{webhookId}/test", webhookId));
      setQueued("Test event queued: its delivery is listed below.");
      setTests((n) => n + 1);
    });
  const rotate = () =>
    act(async () => {
      const r = await call(api.POST("/webhooks/{webhookId}/rotate-secret", webhookId));
      setSecret(r.data.secret);
    });
  const remove = () =>
    deleting.run(async () => {
      await call(api.DELETE("/webhooks/{webhookId}", webhookId));
      go("/webhooks");
    });

  if (error) return <ErrorBox error={error} />;
  if (!webhook) return <p aria-busy="true">Loading…</p>;
  return (
    <section aria-labelledby="webhook-title">
      <p>
        <a href="#/webhooks">← Webhooks</a>
      </p>
      <div class="title-row">
        <h1 id="webhook-title" class="url">
          {webhook.url}
        </h1>
        <span>
          <Enabled webhook={webhook} />
        </span>
      </div>
      <p class="meta">
        {webhook.id} · {eventsOf(webhook)} · {webhook.agentId ?? "all agents"} · created {when(webhook.createdAt)}
      </p>
      {secret && (
        <SecretOnce
          secret={secret}
          note="For 24 hours deliveries carry a signature with the old secret too, so receivers can switch without losing events."
          onDone={() => setSecret(undefined)}
        />
      )}
      <div class="actions">
        <button type="button" disabled={actions.busy} onClick={() => void test()}>
          Send test event
        </button>
        <button type="button" disabled={actions.busy} onClick={() => void rotate()}>
          Rotate secret
        </button>
        {queued && (
          <p class="ok" role="status">
            {queued}
          </p>
        )}
        <ErrorBox error={actions.error} />
      </div>
      <Deliveries webhookId={id} reload={tests} />
      <section aria-labelledby="webhook-form-title">
        <h2 id="webhook-form-title">Edit</h2>
        <WebhookForm
          draft={draft}
          onChange={setDraft}
          error={saving.error}
          busy={actions.busy}
          submit="Save"
          editing
          onSubmit={() => void save()}
        />
        {saved && (
          <p class="ok" role="status">
            {saved}
          </p>
        )}
      </section>
      <section class="danger" aria-labelledby="delete-title">
        <h2 id="delete-title">Delete</h2>
        <Confirm
          label="Delete webhook…"
          question={`Delete the webhook to ${webhook.url} and its pending deliveries? This cannot be undone.`}
          yes="Yes, delete it"
          onYes={remove}
        />
        <ErrorBox error={deleting.error} />
      </section>
    </section>
  );
}

// soon is how far ahead a pending delivery's next attempt makes the list
// refresh itself, so a test or retry shows its outcome without a click.
const soon = 30_000;

function Deliveries({ webhookId, reload }: { webhookId: string; reload: number }) {
  const [status, setStatus] = useState<Schemas["DeliveryStatus"] | "">("");
  const [page, setPage] = useState(1);
  const retrying = useAction();
  const {
    data: list,
    error,
    reload: refresh,
  } = useQuery(
    (signal) =>
      call(
        api.GET("/webhooks/{webhookId}/deliveries", {
          params: { path: { webhookId }, query: { page, limit: 10, ...(status ? { status } : {}) } },
          signal,
        }),
      ).then((r) => r.data),
    [webhookId, status, page, reload],
  );

  const due = list?.items.some(
    (d) => d.status === "pending" && (!d.nextAttemptAt || Date.parse(d.nextAttemptAt) - Date.now() < soon),
  );
  useEffect(() => {
    if (!due) return;
    const t = setTimeout(refresh, 2000);
    return () => clearTimeout(t);
  }, [list]);

  const retry = (deliveryId: string) =>
    retrying.run(async () => {
      await send(
        api.POST("/webhooks/{webhookId}/deliveries/{deliveryId}/retry", {
          params: { path: { webhookId, deliveryId } },
        }),
      );
      refresh();
    });

  return (
    <section class="deliveries" aria-labelledby="deliveries-title">
      <div class="title-row">
        <h2 id="deliveries-title">Deliveries</h2>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select
            id="delivery-status"
            value={status}
            onChange={(e) => (setStatus(e.currentTarget.value as typeof status), setPage(1))}
          >
            <option value="">all</option>
            {deliveryStatuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ListTable
        items={list?.items}
        error={retrying.error ?? error}
        empty={`No deliveries${status && ` ${status}`} yet.`}
        columns={["Event", "Status", "Attempts", "Last answer", "Next attempt", "Created"]}
        rowKey={(d) => d.id}
        row={(d) => (
          <tr data-delivery={d.id}>
            <td>{d.type}</td>
            <td>
              <span class={`status ${d.status}`}>{d.status}</span>
              {d.status === "failed" && (
                <button type="button" class="small" onClick={() => void retry(d.id)}>
                  Retry
                </button>
              )}
            </td>
            <td>{d.attempts}</td>
            <td>
              {d.lastStatusCode !== undefined ? `HTTP ${d.lastStatusCode}` : d.attempts ? "no answer" : "—"}
              {d.lastError && <div class="meta">{d.lastError}</div>}
              {d.lastAttemptAt && <div class="meta">{when(d.lastAttemptAt)}</div>}
            </td>
            <td>{d.nextAttemptAt ? when(d.nextAttemptAt) : "—"}</td>
            <td>{when(d.createdAt)}</td>
          </tr>
        )}
        pagination={list?.pagination}
        onPage={setPage}
      />
    </section>
  );
}

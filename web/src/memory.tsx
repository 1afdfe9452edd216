// memory.tsx: an agent's long-term memories: the list (newest first, or
// ranked by relevance to a search), a filter by user, adding one, deleting
// one, and forgetting a user.
import { useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "./api";
import { useAction, useQuery, useReadOnly } from "./hooks";
import { Confirm, ErrorBox, ListTable, ReadOnlyNote, TextArea, TextField, useFocusRefused, when } from "./ui";

type Memory = Schemas["AgentMemory"];

// maxMemory is the longest memory the API takes, in characters.
const maxMemory = 2000;

// Filters are what the list shows: the memories of one user ("" for all)
// and, with q, the ones most relevant to it.
type Filters = { q: string; userId: string };

export function Memories({ agent }: { agent: Agent }) {
  const [page, setPage] = useState(1);
  const [filters, setFilters] = useState<Filters>({ q: "", userId: "" });
  // changed counts the writes, so the list reloads after each.
  const [changed, setChanged] = useState(0);
  const removing = useAction();
  const writable = !useReadOnly();
  const list = useQuery(
    (signal) =>
      call(
        api.GET("/agents/{agentId}/memories", {
          params: {
            path: { agentId: agent.id },
            query: {
              page,
              limit: 20,
              ...(filters.q ? { q: filters.q } : {}),
              ...(filters.userId ? { userId: filters.userId } : {}),
            },
          },
          signal,
        }),
      ).then((r) => r.data),
    [agent.id, page, filters, changed],
  );
  const reload = () => setChanged((n) => n + 1);

  const remove = (m: Memory) =>
    removing.run(async () => {
      await call(
        api.DELETE("/agents/{agentId}/memories/{memoryId}", {
          params: { path: { agentId: agent.id, memoryId: m.id } },
        }),
      );
      reload();
    });

  const longTerm = agent.memory?.longTermEnabled === true;
  return (
    <section aria-labelledby="memory-title" class="memory">
      <h2 id="memory-title">Memory</h2>
      <p class="hint">
        What the agent remembers across conversations: a user's memories reach only that user's turns, agent-wide ones
        reach everyone's. The up to 5 most relevant to a message are recalled into its prompt.
      </p>
      {!longTerm && (
        <p class="warning" id="memory-off">
          Long-term memory is off for this agent: its turns neither recall nor save memories. Turn it on in{" "}
          <a href={`#/agents/${agent.id}`}>Settings</a> (Memory).
        </p>
      )}
      {!writable && <ReadOnlyNote what="memories" />}
      <MemorySearch
        filters={filters}
        onSearch={(f) => {
          setFilters(f);
          setPage(1);
        }}
      />
      {filters.q && (
        <p class="meta" role="status" id="memory-ranked">
          The memories{filters.userId && <> of {filters.userId}</>} most relevant to “{filters.q}”, best first (at most
          20).
        </p>
      )}
      <ErrorBox error={removing.error} />
      <ListTable
        items={list.data?.items}
        error={list.error}
        empty={
          filters.q || filters.userId
            ? "No memories match."
            : "No memories yet: add one here, or let the agent save them in its turns (long-term memory on)."
        }
        columns={["Memory", "User", "Source", "Created", ...(writable ? [""] : [])]}
        rowKey={(m) => m.id}
        row={(m) => (
          <tr data-memory={m.id}>
            <td class="wrap">
              {m.text}
              {m.conversationId && (
                <div class="meta">
                  saved in <a href={`#/agents/${agent.id}/conversations/${m.conversationId}`}>{m.conversationId}</a>
                </div>
              )}
            </td>
            <td>{m.userId ?? <span class="meta">agent-wide</span>}</td>
            <td>{m.source === "agent" ? "the agent" : "the API"}</td>
            <td>{when(m.createdAt)}</td>
            {writable && (
              <td>
                <Confirm
                  small
                  label={
                    <>
                      Delete<span class="visually-hidden"> the memory “{m.text}”</span>
                    </>
                  }
                  question={<>Delete the memory “{m.text}”? This cannot be undone.</>}
                  yes="Yes, delete it"
                  onYes={() => remove(m)}
                />
              </td>
            )}
          </tr>
        )}
        pagination={list.data?.pagination}
        onPage={setPage}
      />
      {writable && <AddMemory agent={agent} onAdded={reload} />}
      {writable && <ForgetUser agent={agent} onForgot={reload} />}
    </section>
  );
}

// MemorySearch is the list's filters: a search, ranked by relevance, and
// a user. They apply on submit, not as they are typed: each search is an
// embeddings call to the agent's provider.
function MemorySearch({ filters, onSearch }: { filters: Filters; onSearch: (f: Filters) => void }) {
  const [q, setQ] = useState(filters.q);
  const [userId, setUserId] = useState(filters.userId);
  return (
    <form
      class="filters memory-search"
      role="search"
      aria-label="Memories"
      onSubmit={(e) => {
        e.preventDefault();
        onSearch({ q: q.trim(), userId: userId.trim() });
      }}
    >
      <label>
        Search
        <input
          id="memory-q"
          type="search"
          maxLength={maxMemory}
          placeholder="What to look for"
          value={q}
          onInput={(e) => setQ(e.currentTarget.value)}
        />
      </label>
      <label>
        User
        <input
          id="memory-user"
          placeholder="all users"
          value={userId}
          onInput={(e) => setUserId(e.currentTarget.value)}
        />
      </label>
      <div class="filter-buttons">
        <button type="submit">Search</button>
        {(filters.q || filters.userId) && (
          <button
            type="button"
            class="quiet"
            onClick={() => {
              setQ("");
              setUserId("");
              onSearch({ q: "", userId: "" });
            }}
          >
            Show all
          </button>
        )}
      </div>
    </form>
  );
}

// AddMemory stores a memory: the user's when a user id is given, else
// agent-wide.
function AddMemory({ agent, onAdded }: { agent: Agent; onAdded: () => void }) {
  const [text, setText] = useState("");
  const [userId, setUserId] = useState("");
  const { busy, error, run } = useAction();
  const [saved, setSaved] = useState<string>();
  useFocusRefused(error);
  const add = () =>
    run(async () => {
      setSaved(undefined);
      const body: Schemas["MemoryCreateRequest"] = {
        text: text.trim(),
        ...(userId.trim() ? { userId: userId.trim() } : {}),
      };
      const r = await call(api.POST("/agents/{agentId}/memories", { params: { path: { agentId: agent.id } }, body }));
      setSaved(`Saved ${r.data.userId ? `for ${r.data.userId}` : "agent-wide"}: ${r.data.id}.`);
      setText("");
      onAdded();
    });
  return (
    <section aria-labelledby="add-memory-title">
      <h3 id="add-memory-title">Add a memory</h3>
      <form
        class="add-memory"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void add();
        }}
      >
        <TextArea
          id="text"
          label="Memory"
          hint={`One fact, up to ${maxMemory.toLocaleString()} characters.`}
          error={error}
          rows={2}
          maxLength={maxMemory}
          value={text}
          onValue={setText}
        />
        <TextField
          id="userId"
          label="User id (optional)"
          hint="Empty for an agent-wide memory."
          error={error}
          value={userId}
          onValue={setUserId}
        />
        <ErrorBox error={error} />
        <button type="submit" disabled={busy || !text.trim()}>
          Add memory
        </button>
        {saved && (
          <p class="ok" role="status">
            {saved}
          </p>
        )}
      </form>
    </section>
  );
}

// ForgetUser deletes every memory of one user (not the agent-wide ones)
// and says how many went.
function ForgetUser({ agent, onForgot }: { agent: Agent; onForgot: () => void }) {
  const [userId, setUserId] = useState("");
  const forgetting = useAction();
  const [done, setDone] = useState<string>();
  const user = userId.trim();
  const forget = () =>
    forgetting.run(async () => {
      setDone(undefined);
      const r = await call(
        api.DELETE("/agents/{agentId}/memories", { params: { path: { agentId: agent.id }, query: { userId: user } } }),
      );
      const n = r.data.deleted;
      setDone(`Forgot ${user}: ${n} ${n === 1 ? "memory" : "memories"} deleted.`);
      setUserId("");
      onForgot();
    });
  return (
    <section class="danger forget" aria-labelledby="forget-title">
      <h3 id="forget-title">Forget a user</h3>
      <p class="hint">Deletes every memory of the user; agent-wide memories stay.</p>
      <label for="forget-userId">User id</label>
      <input id="forget-userId" value={userId} onInput={(e) => setUserId(e.currentTarget.value)} />
      <Confirm
        label="Forget user…"
        disabled={!user}
        question={
          <>
            Delete every memory of <strong>{user}</strong>? This cannot be undone.
          </>
        }
        yes={`Yes, forget ${user}`}
        onYes={forget}
      />
      <ErrorBox error={forgetting.error} />
      {done && (
        <p class="ok" role="status" id="forget-done">
          {done}
        </p>
      )}
    </section>
  );
}

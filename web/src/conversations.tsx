// conversations.tsx: an agent's conversations (titled by their first user
// message, searchable by the words of their messages), one conversation's
// messages, and deleting a conversation.
import { useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "./api";
import { TurnView } from "./chat";
import { useAction, useQuery } from "./hooks";
import { Confirm, ErrorBox, ListTable, Pager, TextField, go, when } from "./ui";

// titleOf is a conversation's title (its first user message, cut), else
// its id.
export function titleOf(c: Schemas["Conversation"]): string {
  return c.title || c.id;
}

// who is whom a conversation is with: a room, or a user.
export function who(c: Schemas["Conversation"]): string {
  return c.kind === "room" ? `room ${c.roomId ?? ""}` : `user ${c.userId ?? ""}`;
}

export function Conversations({ agent }: { agent: Agent }) {
  const [page, setPage] = useState(1);
  // typed is the search box; q the search asked (on submit).
  const [typed, setTyped] = useState("");
  const [q, setQ] = useState("");
  const list = useQuery(
    (signal) =>
      call(
        api.GET("/agents/{agentId}/conversations", {
          params: { path: { agentId: agent.id }, query: { page, limit: 20, ...(q ? { q } : {}) } },
          signal,
        }),
      ).then((r) => r.data),
    [agent.id, page, q],
  );
  return (
    <section aria-labelledby="conversations-title">
      <h2 id="conversations-title">Conversations</h2>
      <form
        class="search conversation-search"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(1);
          setQ(typed.trim());
        }}
      >
        <TextField
          id="conversations-q"
          label="Search the messages"
          type="search"
          placeholder="words from any message"
          value={typed}
          onValue={setTyped}
        />
        <button type="submit">Search</button>
        {q && (
          <button type="button" class="quiet" onClick={() => (setTyped(""), setQ(""), setPage(1))}>
            Clear
          </button>
        )}
      </form>
      <ListTable
        items={list.data?.items}
        error={list.error}
        empty={
          q ? `No conversation has a message with “${q}”.` : "No conversations yet: say something in the playground."
        }
        columns={["Conversation", "With", "Platform", "Messages", "Last message"]}
        rowKey={(c) => c.id}
        row={(c) => (
          <tr>
            <td class="title-cell">
              <a href={`#/agents/${agent.id}/conversations/${c.id}`}>{titleOf(c)}</a>
            </td>
            <td>{who(c)}</td>
            <td>{c.platform}</td>
            <td>{c.messageCount}</td>
            <td>{when(c.lastMessageAt)}</td>
          </tr>
        )}
        pagination={list.data?.pagination}
        onPage={setPage}
      />
    </section>
  );
}

export function Conversation({ agent, conversationId }: { agent: Agent; conversationId: string }) {
  const [page, setPage] = useState(1);
  const deleting = useAction();
  const path = { agentId: agent.id, conversationId };
  const { data: conversation, error } = useQuery(
    (signal) =>
      call(api.GET("/agents/{agentId}/conversations/{conversationId}", { params: { path }, signal })).then(
        (r) => r.data,
      ),
    [agent.id, conversationId],
  );
  const { data: messages, error: messagesError } = useQuery(
    (signal) =>
      call(
        api.GET("/agents/{agentId}/conversations/{conversationId}/messages", {
          params: { path, query: { page, limit: 50 } },
          signal,
        }),
      ).then((r) => r.data),
    [agent.id, conversationId, page],
  );

  const remove = () =>
    deleting.run(async () => {
      await call(api.DELETE("/agents/{agentId}/conversations/{conversationId}", { params: { path } }));
      go(`/agents/${agent.id}/conversations`);
    });

  return (
    <section aria-labelledby="conversation-title">
      <p>
        <a href={`#/agents/${agent.id}/conversations`}>← All conversations</a>
      </p>
      <h2 id="conversation-title">{conversation ? titleOf(conversation) : "Conversation"}</h2>
      {conversation && (
        <p class="meta">
          {titleOf(conversation) !== conversation.id && (
            <>
              <code>{conversation.id}</code> ·{" "}
            </>
          )}
          {conversation.kind === "room"
            ? `Room ${conversation.roomId ?? ""}`
            : `Direct with ${conversation.userId ?? ""}`}{" "}
          · {conversation.platform} · {conversation.messageCount} messages · started {when(conversation.startedAt)}
        </p>
      )}
      <ErrorBox error={deleting.error ?? error ?? messagesError} />
      {conversation?.summary && (
        <section class="summary" aria-labelledby="summary-title">
          <h3 id="summary-title">Summary of earlier messages</h3>
          <p class="hint">What has slid out of the window, kept by the agent's model; it goes into each prompt.</p>
          <p class="text">{conversation.summary}</p>
        </section>
      )}
      <ol class="transcript">
        {messages?.items.map((m, i) => (
          <TurnView
            key={m.messageId}
            turn={{
              key: i,
              role: m.role,
              text: m.text,
              metadata: m.metadata,
              tools: m.metadata?.toolCalls,
              stopped: m.partial,
            }}
            who={m.role === "user" ? (m.userId ?? "user") : agent.name}
            at={m.timestamp}
          />
        ))}
      </ol>
      <Pager pagination={messages?.pagination} onPage={setPage} />
      <div class="danger">
        <Confirm
          label="Delete conversation…"
          question="Delete this conversation and its messages? This cannot be undone."
          yes="Yes, delete it"
          onYes={remove}
        />
      </div>
    </section>
  );
}

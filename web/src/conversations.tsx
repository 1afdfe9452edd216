// conversations.tsx: an agent's conversations, one conversation's messages,
// and deleting a conversation.
import { useState } from "preact/hooks";
import { type Agent, api, call } from "./api";
import { ToolCalls } from "./chat";
import { useAction, useQuery } from "./hooks";
import { Confirm, ErrorBox, ListTable, Pager, go, when } from "./ui";

export function Conversations({ agent }: { agent: Agent }) {
  const [page, setPage] = useState(1);
  const list = useQuery(
    (signal) =>
      call(
        api.GET("/agents/{agentId}/conversations", {
          params: { path: { agentId: agent.id }, query: { page, limit: 20 } },
          signal,
        }),
      ).then((r) => r.data),
    [agent.id, page],
  );
  return (
    <section aria-labelledby="conversations-title">
      <h2 id="conversations-title">Conversations</h2>
      <ListTable
        items={list.data?.items}
        error={list.error}
        empty="No conversations yet: say something in the chat."
        columns={["Conversation", "With", "Platform", "Messages", "Last message"]}
        rowKey={(c) => c.id}
        row={(c) => (
          <tr>
            <td>
              <a href={`#/agents/${agent.id}/conversations/${c.id}`}>{c.id}</a>
            </td>
            <td>{c.kind === "room" ? `room ${c.roomId ?? ""}` : `user ${c.userId ?? ""}`}</td>
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
      <h2 id="conversation-title">Conversation {conversationId}</h2>
      {conversation && (
        <p class="meta">
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
        {messages?.items.map((m) => (
          <li key={m.messageId} class={`turn ${m.role}`}>
            <span class="who">{m.role === "user" ? (m.userId ?? "user") : agent.name}</span>
            <ToolCalls calls={m.metadata?.toolCalls} />
            <p class="text">{m.text}</p>
            <p class="meta">
              {when(m.timestamp)}
              {m.metadata &&
                ` · ${m.metadata.model} · ${m.metadata.tokensUsed} tokens · ${Math.round(m.metadata.responseTime)} ms`}
              {m.partial && " · cut short"}
            </p>
          </li>
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

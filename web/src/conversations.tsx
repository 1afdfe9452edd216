// conversations.tsx: an agent's conversations, one conversation's messages,
// and deleting a conversation.
import { useEffect, useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "./api";
import { Confirm, ErrorBox, Pager, go, when } from "./ui";

export function Conversations({ agent }: { agent: Agent }) {
  const [page, setPage] = useState(1);
  const [list, setList] = useState<Schemas["ConversationList"]>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    call(api.GET("/agents/{agentId}/conversations", { params: { path: { agentId: agent.id }, query: { page, limit: 20 } } }))
      .then((r) => setList(r.data))
      .catch(setError);
  }, [agent.id, page]);
  return (
    <section aria-labelledby="conversations-title">
      <h2 id="conversations-title">Conversations</h2>
      <ErrorBox error={error} />
      {list && list.items.length === 0 && <p>No conversations yet: say something in the chat.</p>}
      {list && list.items.length > 0 && (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Conversation</th>
                <th scope="col">With</th>
                <th scope="col">Platform</th>
                <th scope="col">Messages</th>
                <th scope="col">Last message</th>
              </tr>
            </thead>
            <tbody>
              {list.items.map((c) => (
                <tr>
                  <td>
                    <a href={`#/agents/${agent.id}/conversations/${c.id}`}>{c.id}</a>
                  </td>
                  <td>{c.kind === "room" ? `room ${c.roomId ?? ""}` : `user ${c.userId ?? ""}`}</td>
                  <td>{c.platform}</td>
                  <td>{c.messageCount}</td>
                  <td>{when(c.lastMessageAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager pagination={list?.pagination} onPage={setPage} />
    </section>
  );
}

export function Conversation({ agent, conversationId }: { agent: Agent; conversationId: string }) {
  const [conversation, setConversation] = useState<Schemas["Conversation"]>();
  const [page, setPage] = useState(1);
  const [messages, setMessages] = useState<Schemas["ConversationMessageList"]>();
  const [error, setError] = useState<unknown>();
  const path = { agentId: agent.id, conversationId };

  useEffect(() => {
    call(api.GET("/agents/{agentId}/conversations/{conversationId}", { params: { path } }))
      .then((r) => setConversation(r.data))
      .catch(setError);
  }, [agent.id, conversationId]);
  useEffect(() => {
    call(
      api.GET("/agents/{agentId}/conversations/{conversationId}/messages", {
        params: { path, query: { page, limit: 50 } },
      }),
    )
      .then((r) => setMessages(r.data))
      .catch(setError);
  }, [agent.id, conversationId, page]);

  const remove = async () => {
    try {
      await call(api.DELETE("/agents/{agentId}/conversations/{conversationId}", { params: { path } }));
      go(`/agents/${agent.id}/conversations`);
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section aria-labelledby="conversation-title">
      <p>
        <a href={`#/agents/${agent.id}/conversations`}>← All conversations</a>
      </p>
      <h2 id="conversation-title">Conversation {conversationId}</h2>
      {conversation && (
        <p class="meta">
          {conversation.kind === "room" ? `Room ${conversation.roomId ?? ""}` : `Direct with ${conversation.userId ?? ""}`}{" "}
          · {conversation.platform} · {conversation.messageCount} messages · started {when(conversation.startedAt)}
        </p>
      )}
      <ErrorBox error={error} />
      <ol class="transcript">
        {messages?.items.map((m) => (
          <li class={`turn ${m.role}`}>
            <span class="who">{m.role === "user" ? (m.userId ?? "user") : agent.name}</span>
            <p class="text">{m.text}</p>
            <p class="meta">
              {when(m.timestamp)}
              {m.metadata && ` · ${m.metadata.model} · ${m.metadata.tokensUsed} tokens · ${Math.round(m.metadata.responseTime)} ms`}
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

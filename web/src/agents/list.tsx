// list.tsx: the agents list, with its filters and the import of a
// character file.
import { useState } from "preact/hooks";
import { api, call, type Schemas } from "../api";
import { useQuery } from "../hooks";
import { ListTable, when } from "../ui";
import { ImportAgent } from "./transfer";

const statuses: Schemas["AgentStatus"][] = ["active", "inactive", "error"];
const sortFields: Schemas["AgentSortField"][] = ["createdAt", "name", "status"];

export function AgentList() {
  const [status, setStatus] = useState<Schemas["AgentStatus"] | "">("");
  const [sortBy, setSortBy] = useState<Schemas["AgentSortField"]>("createdAt");
  const [order, setOrder] = useState<Schemas["SortOrder"]>("desc");
  const [page, setPage] = useState(1);
  const list = useQuery(
    (signal) =>
      call(
        api.GET("/agents", {
          params: { query: { page, limit: 10, sortBy, order, ...(status ? { status } : {}) } },
          signal,
        }),
      ).then((r) => r.data),
    [status, sortBy, order, page],
  );

  return (
    <section aria-labelledby="agents-title">
      <div class="title-row">
        <h1 id="agents-title">Agents</h1>
        <a class="button" href="#/agents/new">
          New agent
        </a>
      </div>
      <ImportAgent onImported={list.reload} />
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select value={status} onChange={(e) => (setStatus(e.currentTarget.value as typeof status), setPage(1))}>
            <option value="">all</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Sort by
          <select value={sortBy} onChange={(e) => setSortBy(e.currentTarget.value as typeof sortBy)}>
            {sortFields.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Order
          <select value={order} onChange={(e) => setOrder(e.currentTarget.value as typeof order)}>
            <option value="asc">ascending</option>
            <option value="desc">descending</option>
          </select>
        </label>
      </form>
      <ListTable
        items={list.data?.agents}
        error={list.error}
        empty="No agents yet. Create one, or drop a character file on “New agent”."
        columns={["Name", "Status", "Model", "Created"]}
        rowKey={(a) => a.id}
        row={(a) => (
          <tr>
            <td>
              <a href={`#/agents/${a.id}`}>{a.name}</a>
            </td>
            <td>
              <span class={`status ${a.status}`}>{a.status}</span>
            </td>
            <td>
              {a.modelProvider}/{a.model}
            </td>
            <td>{when(a.createdAt)}</td>
          </tr>
        )}
        pagination={list.data?.pagination}
        onPage={setPage}
      />
    </section>
  );
}

// optional.tsx: pages of operations that not every contract has yet
// (webhooks). Their tab appears only when the running
// server's contract declares the path, so the console never offers a page
// that would answer 404.
//
// TODO(webhooks): the webhook operations are being added to openapi.yaml in
// parallel. Once schema.d.ts has them, replace this generic read-only view
// with a typed page (deliveries, retry, test, and rotate with the secret
// shown once), called through `api` like every other page, and drop the
// untyped call below.
import { useEffect, useState } from "preact/hooks";
import { api, call } from "./api";
import { ErrorBox } from "./ui";

export type OptionalPage = {
  // path is the contract's path whose presence shows the page.
  path: string;
  route: string;
  title: string;
  // perAgent pages are tabs of an agent; the others are in the main menu.
  perAgent: boolean;
};

export const optionalPages: OptionalPage[] = [
  { path: "/webhooks", route: "webhooks", title: "Webhooks", perAgent: false },
];

// untyped reaches a path schema.d.ts does not know yet, through the same
// client (base URL, key, error handling) as the typed pages.
const untyped = api as unknown as {
  GET(
    path: string,
    init: { params: { path: Record<string, string> } },
  ): Promise<{ data?: unknown; error?: unknown; response: Response }>;
};

export function Optional({ page, agentId }: { page: OptionalPage; agentId?: string }) {
  const [data, setData] = useState<unknown>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    call(untyped.GET(page.path, { params: { path: agentId ? { agentId } : {} } }))
      .then(setData)
      .catch(setError);
  }, [page.path, agentId]);
  return (
    <section aria-labelledby="optional-title">
      <h2 id="optional-title">{page.title}</h2>
      <ErrorBox error={error} />
      {data !== undefined && <pre class="json">{JSON.stringify(data, null, 2)}</pre>}
    </section>
  );
}

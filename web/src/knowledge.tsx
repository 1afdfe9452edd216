// knowledge.tsx: an agent's knowledge documents: upload a text or
// Markdown file, or paste text with a name; list them; delete one.
import { useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "./api";
import { useAction, useQuery, useReadOnly } from "./hooks";
import {
  Confirm,
  DropZone,
  ErrorBox,
  ListTable,
  ReadOnlyNote,
  TextArea,
  TextField,
  size,
  useFocusRefused,
  when,
} from "./ui";

type Document = Schemas["KnowledgeDocument"];

// maxBytes is the largest document text the API takes, in UTF-8 bytes.
const maxBytes = 1_000_000;

// tooLarge says why a document is refused before it is sent, or is
// undefined when its size is fine.
function tooLarge(name: string, bytes: number): Error | undefined {
  if (bytes === 0) return new Error(`${name} is empty: there is nothing to add.`);
  if (bytes <= maxBytes) return undefined;
  return new Error(
    `${name} is ${bytes.toLocaleString()} bytes: a document may be at most ${maxBytes.toLocaleString()} bytes (1 MB). ` +
      "Split it into smaller documents.",
  );
}

// utf8Bytes is the size of text as the API counts it.
function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

// readText reads a file as text with a FileReader.
function readText(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result ?? ""));
    reader.onerror = () => reject(reader.error ?? new Error(`${file.name} could not be read.`));
    reader.readAsText(file);
  });
}

export function Knowledge({ agent }: { agent: Agent }) {
  const [page, setPage] = useState(1);
  // changed counts the writes, so the list reloads after each.
  const [changed, setChanged] = useState(0);
  const removing = useAction();
  const writable = !useReadOnly();
  const list = useQuery(
    (signal) =>
      call(
        api.GET("/agents/{agentId}/knowledge", {
          params: { path: { agentId: agent.id }, query: { page, limit: 20 } },
          signal,
        }),
      ).then((r) => r.data),
    [agent.id, page, changed],
  );
  const reload = () => setChanged((n) => n + 1);

  const add = (body: Schemas["KnowledgeCreateRequest"]) =>
    call(api.POST("/agents/{agentId}/knowledge", { params: { path: { agentId: agent.id } }, body })).then((r) => {
      reload();
      return r.data;
    });

  const remove = (d: Document) =>
    removing.run(async () => {
      await call(
        api.DELETE("/agents/{agentId}/knowledge/{knowledgeId}", {
          params: { path: { agentId: agent.id, knowledgeId: d.id } },
        }),
      );
      reload();
    });

  return (
    <section aria-labelledby="knowledge-title" class="knowledge">
      <h2 id="knowledge-title">Knowledge</h2>
      <p class="hint">
        Text or Markdown documents the agent answers from: each is cut into chunks of about 1,000 characters, and the up
        to 5 chunks most relevant to a message go into its prompt with their document's name. At most 100 documents and
        50 MB.
      </p>
      {!writable && <ReadOnlyNote what="documents" />}
      <ErrorBox error={removing.error} />
      <ListTable
        items={list.data?.items}
        error={list.error}
        empty="No documents yet: upload a .txt or .md file, or paste text."
        columns={["Name", "Chunks", "Size", "Added", ...(writable ? [""] : [])]}
        rowKey={(d) => d.id}
        row={(d) => (
          <tr data-document={d.id}>
            <td class="wrap">{d.name}</td>
            <td>{d.chunks}</td>
            <td>{size(d.bytes)}</td>
            <td>{when(d.createdAt)}</td>
            {writable && (
              <td>
                <Confirm
                  small
                  label={
                    <>
                      Delete<span class="visually-hidden"> {d.name}</span>
                    </>
                  }
                  question={
                    <>
                      Delete <strong>{d.name}</strong> and its {d.chunks} chunks? This cannot be undone.
                    </>
                  }
                  yes={`Yes, delete ${d.name}`}
                  onYes={() => remove(d)}
                />
              </td>
            )}
          </tr>
        )}
        pagination={list.data?.pagination}
        onPage={setPage}
      />
      {writable && (
        <div class="knowledge-add">
          <UploadDocument onAdd={add} />
          <PasteDocument onAdd={add} />
        </div>
      )}
    </section>
  );
}

type Add = (body: Schemas["KnowledgeCreateRequest"]) => Promise<Document>;

// added says what a new document became.
function added(d: Document): string {
  return `Added ${d.name}: ${d.chunks} ${d.chunks === 1 ? "chunk" : "chunks"}, ${size(d.bytes)}.`;
}

// UploadDocument reads a .txt or .md file (chosen or dropped) and adds it
// under its file name; a file over the limit is refused before sending.
function UploadDocument({ onAdd }: { onAdd: Add }) {
  const [file, setFile] = useState<{ name: string; text: string; bytes: number }>();
  const { busy, error, run, setError } = useAction();
  const [done, setDone] = useState<string>();
  // input is bumped after an upload, for a new, empty file input.
  const [input, setInput] = useState(0);

  const choose = async (f: File | undefined) => {
    setFile(undefined);
    setError(undefined);
    setDone(undefined);
    if (!f) return;
    // file.size is known without reading: a file far too large is not read.
    const refused = tooLarge(f.name, f.size);
    if (refused) return setError(refused);
    try {
      const text = await readText(f);
      const bytes = utf8Bytes(text);
      const again = tooLarge(f.name, text.trim() ? bytes : 0);
      if (again) return setError(again);
      setFile({ name: f.name, text, bytes });
    } catch (err) {
      setError(err);
    }
  };

  const upload = async () => {
    if (!file) return;
    await run(async () => {
      setDone(added(await onAdd({ name: file.name, text: file.text })));
      setFile(undefined);
      setInput((n) => n + 1);
    });
  };

  return (
    <section aria-labelledby="upload-title">
      <h3 id="upload-title">Upload a file</h3>
      <DropZone onDrop={(file) => void choose(file)}>
        <label for="knowledge-file">
          Drop a <code>.txt</code> or <code>.md</code> file here, or choose one (at most 1 MB):
        </label>
        <input
          key={input}
          id="knowledge-file"
          type="file"
          accept=".txt,.md,.markdown,text/plain,text/markdown"
          onChange={(e) => void choose(e.currentTarget.files?.[0])}
        />
        {file && (
          <p class="chosen">
            <strong>{file.name}</strong>, {size(file.bytes)}.
          </p>
        )}
        <ErrorBox error={error} />
        <button id="knowledge-upload" type="button" disabled={busy || !file} onClick={() => void upload()}>
          Add {file ? file.name : "the file"}
        </button>
        {done && (
          <p class="ok" role="status">
            {done}
          </p>
        )}
      </DropZone>
    </section>
  );
}

// PasteDocument adds pasted text under a name.
function PasteDocument({ onAdd }: { onAdd: Add }) {
  const [name, setName] = useState("");
  const [text, setText] = useState("");
  const { busy, error, run } = useAction();
  const [done, setDone] = useState<string>();
  useFocusRefused(error);
  const bytes = utf8Bytes(text);

  const paste = () =>
    run(async () => {
      setDone(undefined);
      const refused = tooLarge(name.trim() || "The text", bytes);
      if (refused) throw refused;
      setDone(added(await onAdd({ name: name.trim(), text })));
      setName("");
      setText("");
    });

  return (
    <section aria-labelledby="paste-title">
      <h3 id="paste-title">Or paste text</h3>
      <form
        class="paste-document"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void paste();
        }}
      >
        <TextField
          id="name"
          label="Name"
          hint="Shown with the chunks in the prompt, such as faq.md."
          error={error}
          maxLength={200}
          value={name}
          onValue={setName}
        />
        <TextArea
          id="text"
          label="Text or Markdown"
          hint={`${size(bytes)} of at most 1 MB.`}
          error={error}
          rows={8}
          value={text}
          onValue={setText}
        />
        <ErrorBox error={error} />
        <button type="submit" disabled={busy || !name.trim() || !text.trim()}>
          Add document
        </button>
        {done && (
          <p class="ok" role="status">
            {done}
          </p>
        )}
      </form>
    </section>
  );
}

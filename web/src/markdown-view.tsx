// markdown-view.tsx renders the tree of markdown.ts as Preact elements:
// text goes in as text (escaped), links open in a new tab without telling
// the target who sent the user, and each code block has a copy button.
import type { ComponentChildren } from "preact";
import { type Block, type Inline, parseMarkdown } from "./markdown";
import { CopyButton } from "./ui";

// Markdown shows text as markdown; children (a streaming cursor, a
// "stopped" note) end its last paragraph, or follow its last block.
export function Markdown({ text, children }: { text: string; children?: ComponentChildren }) {
  const blocks = parseMarkdown(text);
  const last = blocks[blocks.length - 1];
  return (
    <>
      {blocks.map((b, i) => (
        <BlockView key={i} block={b} tail={b === last ? children : undefined} />
      ))}
      {last?.t !== "p" && children}
    </>
  );
}

function BlockView({ block: b, tail }: { block: Block; tail?: ComponentChildren }) {
  switch (b.t) {
    case "p":
      return (
        <p>
          {inlines(b.c)}
          {tail}
        </p>
      );
    case "h": {
      // Headings of a reply sit below the page's own h1 and h2.
      const Tag = `h${Math.min(b.level + 2, 6)}` as "h3";
      return <Tag>{inlines(b.c)}</Tag>;
    }
    case "code":
      return (
        <div class="code">
          <div class="code-head">
            <span>{b.lang || "code"}</span>
            <CopyButton text={b.v} what="code" />
          </div>
          <pre>
            <code>{b.v}</code>
          </pre>
        </div>
      );
    case "ul":
      return (
        <ul>
          {b.items.map((item, i) => (
            <li key={i}>{inlines(item)}</li>
          ))}
        </ul>
      );
    case "ol":
      return (
        <ol start={b.start}>
          {b.items.map((item, i) => (
            <li key={i}>{inlines(item)}</li>
          ))}
        </ol>
      );
    case "quote":
      return (
        <blockquote>
          {b.c.map((c, i) => (
            <BlockView key={i} block={c} />
          ))}
        </blockquote>
      );
    case "hr":
      return <hr />;
  }
}

function inlines(nodes: Inline[]): ComponentChildren {
  return nodes.map((n, i) => <InlineView key={i} node={n} />);
}

function InlineView({ node: n }: { node: Inline }) {
  switch (n.t) {
    case "text":
      return <>{n.v}</>;
    case "code":
      return <code>{n.v}</code>;
    case "strong":
      return <strong>{inlines(n.c)}</strong>;
    case "em":
      return <em>{inlines(n.c)}</em>;
    case "br":
      return <br />;
    case "link":
      return (
        <a href={n.href} target="_blank" rel="noopener noreferrer">
          {inlines(n.c)}
        </a>
      );
  }
}

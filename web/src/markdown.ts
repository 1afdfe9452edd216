// markdown.ts parses the markdown that models write into a small tree of
// blocks and inlines, which markdown-view.tsx renders as Preact elements.
// It never produces HTML: raw HTML in a reply stays text (Preact escapes
// it), and a link is kept only when its URL is http(s) or mailto, so a
// reply cannot inject a script or a javascript: link into the console.
// It covers what replies use (paragraphs, headings, lists, quotes, fenced
// code, rules, code spans, bold, italics, links, bare URLs), not all of
// CommonMark; anything else shows as the text it is.

export type Inline =
  | { t: "text"; v: string }
  | { t: "code"; v: string }
  | { t: "strong" | "em"; c: Inline[] }
  | { t: "link"; href: string; c: Inline[] }
  | { t: "br" };

export type Block =
  | { t: "p"; c: Inline[] }
  | { t: "h"; level: number; c: Inline[] }
  | { t: "code"; lang: string; v: string }
  | { t: "ul"; items: Inline[][] }
  | { t: "ol"; start: number; items: Inline[][] }
  | { t: "quote"; c: Block[] }
  | { t: "hr" };

// safeHref is href when it is an absolute http(s) or mailto URL, else
// undefined. The URL parser reads it as a browser would, so tricks such
// as "java\tscript:" or upper case are seen through.
export function safeHref(href: string): string | undefined {
  try {
    const u = new URL(href.trim());
    return ["http:", "https:", "mailto:"].includes(u.protocol) ? u.href : undefined;
  } catch {
    return undefined;
  }
}

const fence = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const heading = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const rule = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const bullet = /^ {0,3}[-*+]\s+(.*)$/;
const numbered = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;
const quote = /^ {0,3}>\s?(.*)$/;

// parseMarkdown parses text into blocks. A fence left open (a reply still
// streaming) runs to the end of the text.
export function parseMarkdown(text: string): Block[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    let m: RegExpMatchArray | null;
    if (!line.trim()) {
      i++;
    } else if ((m = line.match(fence))) {
      const close = new RegExp(`^ {0,3}${m[1]![0]}{${m[1]!.length},}\\s*$`);
      const body: string[] = [];
      for (i++; i < lines.length && !close.test(lines[i]!); i++) body.push(lines[i]!);
      i++;
      blocks.push({ t: "code", lang: m[2] ?? "", v: body.join("\n") });
    } else if ((m = line.match(heading))) {
      blocks.push({ t: "h", level: m[1]!.length, c: parseInline(m[2]!) });
      i++;
    } else if (rule.test(line)) {
      blocks.push({ t: "hr" });
      i++;
    } else if (quote.test(line)) {
      const body: string[] = [];
      for (; i < lines.length && (m = lines[i]!.match(quote)); i++) body.push(m[1]!);
      blocks.push({ t: "quote", c: parseMarkdown(body.join("\n")) });
    } else if (bullet.test(line) || numbered.test(line)) {
      const ordered = numbered.test(line);
      const start = ordered ? Number(line.match(numbered)![1]) : 1;
      const items: string[][] = [];
      for (; i < lines.length; i++) {
        const l = lines[i]!;
        const item = l.match(ordered ? numbered : bullet);
        if (item) items.push([item[ordered ? 2 : 1]!]);
        // An indented line goes on with the item above it.
        else if (/^\s{2,}\S/.test(l) && items.length) items[items.length - 1]!.push(l.trim());
        else break;
      }
      const parsed = items.map((ls) => parseInline(ls.join("\n")));
      blocks.push(ordered ? { t: "ol", start, items: parsed } : { t: "ul", items: parsed });
    } else {
      const body: string[] = [];
      for (; i < lines.length && lines[i]!.trim() && !startsBlock(lines[i]!); i++) body.push(lines[i]!);
      blocks.push({ t: "p", c: parseInline(body.join("\n")) });
    }
  }
  return blocks;
}

// startsBlock is whether a line ends the paragraph above it.
function startsBlock(line: string): boolean {
  return [fence, heading, rule, bullet, numbered, quote].some((r) => r.test(line));
}

const bareURL = /^(?:https?:\/\/|mailto:)[^\s<>]*[^\s<>.,;:!?'")\]*_]/;

// parseInline parses the inlines of a block's text.
export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  let plain = "";
  const flush = () => {
    if (plain) out.push({ t: "text", v: plain });
    plain = "";
  };
  const push = (node: Inline) => (flush(), out.push(node));
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    const rest = text.slice(i);
    const prev = i > 0 ? text[i - 1]! : " ";
    if (ch === "\\" && i + 1 < text.length && /[\\`*_[\]()#+\-.!>~|]/.test(text[i + 1]!)) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (ch === "\n") {
      push({ t: "br" });
      i++;
      continue;
    }
    if (ch === "`") {
      const run = rest.match(/^`+/)![0];
      const end = text.indexOf(run, i + run.length);
      if (end > 0) {
        push({ t: "code", v: text.slice(i + run.length, end).replace(/^ (.+) $/, "$1") });
        i = end + run.length;
        continue;
      }
    }
    const emphasis = rest.match(/^(\*\*|__|\*|_)/);
    // "_" opens only at the start of a word, so snake_case stays as it is.
    if (emphasis && !(ch === "_" && /\w/.test(prev)) && rest[emphasis[1]!.length] !== " ") {
      const mark = emphasis[1]!;
      const end = closing(text, i + mark.length, mark);
      if (end > 0) {
        push({ t: mark.length === 2 ? "strong" : "em", c: parseInline(text.slice(i + mark.length, end)) });
        i = end + mark.length;
        continue;
      }
    }
    if (ch === "[") {
      const link = linkAt(text, i);
      if (link) {
        const href = safeHref(link.href);
        const label = parseInline(link.label);
        // An unsafe link keeps its words and loses its target.
        if (href) push({ t: "link", href, c: label });
        else {
          flush();
          out.push(...label);
        }
        i = link.end;
        continue;
      }
    }
    if ((ch === "h" || ch === "m") && !/\w/.test(prev)) {
      const url = rest.match(bareURL)?.[0];
      const href = url && safeHref(url);
      if (url && href) {
        push({ t: "link", href, c: [{ t: "text", v: url }] });
        i += url.length;
        continue;
      }
    }
    plain += ch;
    i++;
  }
  flush();
  return out;
}

// closing is the index of the mark that closes an emphasis opened before
// from, or -1: not preceded by a space, and for "_" not inside a word.
function closing(text: string, from: number, mark: string): number {
  for (let j = text.indexOf(mark, from + 1); j > 0; j = text.indexOf(mark, j + 1)) {
    if (text[j - 1] === " " || text[j - 1] === "\n") continue;
    if (mark === "*" && text[j + 1] === "*") {
      j++;
      continue;
    }
    if (mark[0] === "_" && /\w/.test(text[j + mark.length] ?? "")) continue;
    return j;
  }
  return -1;
}

// linkAt reads [label](href) at i: the label may hold brackets in pairs,
// the href parentheses in pairs (as Wikipedia's URLs do).
function linkAt(text: string, i: number): { label: string; href: string; end: number } | undefined {
  let depth = 0;
  let j = i;
  for (; j < text.length; j++) {
    if (text[j] === "[") depth++;
    else if (text[j] === "]" && --depth === 0) break;
  }
  if (j >= text.length || text[j + 1] !== "(") return undefined;
  const label = text.slice(i + 1, j);
  let k = j + 2;
  for (depth = 1; k < text.length; k++) {
    if (text[k] === "(") depth++;
    else if (text[k] === ")" && --depth === 0) break;
    else if (text[k] === "\n") return undefined;
  }
  if (k >= text.length) return undefined;
  // A title after the URL ("…" or '…') is dropped.
  const href = text
    .slice(j + 2, k)
    .trim()
    .replace(/\s+["'].*["']$/, "")
    .replace(/^<(.*)>$/, "$1");
  return { label, href, end: k + 1 };
}

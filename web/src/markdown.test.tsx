// markdown.test.tsx: replies as markdown, rendered to HTML as the console
// would: what models write shows as markup, and nothing a reply says can
// become a script, a javascript: link or raw HTML.
import { renderToString } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import { parseMarkdown, safeHref } from "./markdown";
import { Markdown } from "./markdown-view";

const html = (text: string) => renderToString(<Markdown text={text} />);

describe("markdown", () => {
  it("renders what models write", () => {
    expect(html("Hello **bold** and *it* and `x < y`")).toBe(
      "<p>Hello <strong>bold</strong> and <em>it</em> and <code>x &lt; y</code></p>",
    );
    expect(html("# Title\n\n- one\n- two\n\n3. three\n4. four")).toBe(
      '<h3>Title</h3><ul><li>one</li><li>two</li></ul><ol start="3"><li>three</li><li>four</li></ol>',
    );
    expect(html("> quoted\n\n---\nline one\nline two")).toBe(
      "<blockquote><p>quoted</p></blockquote><hr/><p>line one<br/>line two</p>",
    );
    // snake_case and a lone star stay as they are.
    expect(html("call get_price_now * 2")).toBe("<p>call get_price_now * 2</p>");
  });

  it("renders a fenced code block with its language and a copy button", () => {
    const out = html('Run:\n\n```go\nfmt.Println("<b>hi</b>")\n```\nDone.');
    expect(out).toContain('<div class="code-head"><span>go</span><button type="button" class="icon copy"');
    expect(out).toContain("<pre><code>fmt.Println(&quot;&lt;b>hi&lt;/b>&quot;)</code></pre>");
    expect(out).toContain("<p>Done.</p>");
    // A fence still open (a reply streaming) runs to the end.
    expect(parseMarkdown("```py\nprint(1)\nprint(2)")).toEqual([{ t: "code", lang: "py", v: "print(1)\nprint(2)" }]);
  });

  it("keeps safe links, opened without telling the target where from", () => {
    expect(html("See [the docs](https://example.com/a_(b)) or mail@ [us](mailto:a@example.com).")).toBe(
      '<p>See <a href="https://example.com/a_(b)" target="_blank" rel="noopener noreferrer">the docs</a> or mail@ ' +
        '<a href="mailto:a@example.com" target="_blank" rel="noopener noreferrer">us</a>.</p>',
    );
    expect(html("Go to https://example.com/x.")).toBe(
      '<p>Go to <a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.</p>',
    );
  });

  it("refuses script injection", () => {
    for (const href of [
      "javascript:alert(1)",
      "JavaScript:alert(1)",
      " javascript:alert(1)",
      "java\tscript:alert(1)",
      "data:text/html,<script>alert(1)</script>",
      "vbscript:msgbox(1)",
      "/relative",
      "#/signin",
    ]) {
      expect(safeHref(href), href).toBeUndefined();
      const out = html(`[click](${href})`);
      expect(out, href).not.toContain("<a");
      expect(out, href).toContain("click");
    }
    const raw = html('<script>alert(1)</script> <img src=x onerror="alert(1)"> <a href="javascript:x">a</a>');
    expect(raw).not.toMatch(/<(script|img|a)\b/);
    expect(raw).toContain("&lt;script>alert(1)&lt;/script>");
    // A bare javascript: URL is not made a link either.
    expect(html("javascript:alert(1)")).toBe("<p>javascript:alert(1)</p>");
  });
});

// spend.test.tsx: a budget window as its bar shows it: the figures, the
// level it is marked with from 80% and 100% (in words too, not by colour
// alone), and no bar without a budget.
import { renderToString } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import { SpendBar } from "./spend";

const bar = (spent: number, limit: number | null) =>
  renderToString(<SpendBar label="Today" spent={spent} limit={limit} />);

describe("a spend bar", () => {
  it("without a budget says so, and draws no bar", () => {
    const out = bar(0.25, null);
    expect(out).toContain('class="spend spend-none"');
    expect(out).toContain("$0.25 · no budget");
    expect(out).not.toContain("spend-bar");
  });

  it("below 80% is plain, and a spend too small for a percent is not 0%", () => {
    expect(bar(1, 4)).toContain("$1.00 of $4.00 (25%)");
    expect(bar(1, 4)).toContain('style="width:25%;"');
    expect(bar(0.000048, 5)).toContain("(&lt;1%)");
  });

  it("is marked from 80%, and reached from 100%, its bar full", () => {
    const near = bar(4, 5);
    expect(near).toContain('class="spend spend-warn"');
    expect(near).toContain("(80%) · nearly spent");
    const over = bar(6, 5);
    expect(over).toContain('class="spend spend-over"');
    expect(over).toContain("(120%) · reached: new runs are refused");
    expect(over).toContain('style="width:100%;"');
  });
});

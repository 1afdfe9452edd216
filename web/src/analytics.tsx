// analytics.tsx: an agent's usage over a range, as totals (what it cost
// among them) and uPlot charts of messages, tokens, cost and response time,
// the series also as a table.
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { type Agent, api, call, type Schemas } from "./api";
import { useQuery } from "./hooks";
import { count, usd } from "./money";
import { ErrorBox, ListTable, when } from "./ui";

// ranges are the choices of the range selector: hours back and the interval.
const ranges = {
  "24h": { hours: 24, interval: "hour" },
  "7d": { hours: 24 * 7, interval: "hour" },
  "30d": { hours: 24 * 30, interval: "day" },
} as const satisfies Record<string, { hours: number; interval: Schemas["AnalyticsInterval"] }>;

export function Analytics({ agent }: { agent: Agent }) {
  const [range, setRange] = useState<keyof typeof ranges>("24h");
  const { data: report, error } = useQuery(
    (signal) => {
      const { hours, interval } = ranges[range];
      const to = new Date();
      const from = new Date(to.getTime() - hours * 3600 * 1000);
      return call(
        api.GET("/agents/{agentId}/analytics", {
          params: { path: { agentId: agent.id }, query: { from: from.toISOString(), to: to.toISOString(), interval } },
          signal,
        }),
      ).then((r) => r.data);
    },
    [agent.id, range],
  );

  const t = report?.totals;
  const x = report?.series.map((b) => new Date(b.start).getTime() / 1000) ?? [];
  return (
    <section aria-labelledby="analytics-title">
      <h2 id="analytics-title">Analytics</h2>
      <label>
        Range{" "}
        <select value={range} onChange={(e) => setRange(e.currentTarget.value as keyof typeof ranges)}>
          <option value="24h">last 24 hours</option>
          <option value="7d">last 7 days</option>
          <option value="30d">last 30 days</option>
        </select>
      </label>
      <ErrorBox error={error} />
      {t && (
        <dl class="totals">
          <div>
            <dt title="A user message and its reply count two; the agent's header counts exchanges">
              Messages (both sides)
            </dt>
            <dd>{t.messages}</dd>
          </div>
          <div>
            <dt>Conversations</dt>
            <dd>{t.conversations}</dd>
          </div>
          <div>
            <dt>Users</dt>
            <dd>{t.users}</dd>
          </div>
          <div>
            <dt>Tokens</dt>
            <dd>{count(t.tokensUsed)}</dd>
          </div>
          <div>
            <dt>Input tokens</dt>
            <dd>{count(t.inputTokens)}</dd>
          </div>
          <div>
            <dt>Output tokens</dt>
            <dd>{count(t.outputTokens)}</dd>
          </div>
          <div>
            <dt>Cost</dt>
            <dd class="money">{usd(t.costUsd)}</dd>
          </div>
          <div>
            <dt>Errors</dt>
            <dd>{t.errors}</dd>
          </div>
          <div>
            <dt>Tool calls (failed)</dt>
            <dd>
              {t.toolCalls} ({t.toolErrors})
            </dd>
          </div>
          <div>
            <dt>Memories saved</dt>
            <dd>{t.memoriesSaved}</dd>
          </div>
          <div>
            <dt>Response time p50 / p95</dt>
            <dd>
              {Math.round(t.responseTime.p50)} / {Math.round(t.responseTime.p95)} ms
            </dd>
          </div>
        </dl>
      )}
      {report && (
        <div class="charts">
          <Chart title="Messages" x={x} y={report.series.map((b) => b.messages)} color="#2563eb" />
          <Chart title="Tokens" x={x} y={report.series.map((b) => b.tokensUsed)} color="#16a34a" />
          <Chart title="Cost (USD)" x={x} y={report.series.map((b) => b.costUsd)} color="#9333ea" format={usd} />
          <Chart title="Response time p50 (ms)" x={x} y={report.series.map((b) => b.p50ResponseTime)} color="#d97706" />
        </div>
      )}
      {report && <SeriesTable series={report.series} />}
    </section>
  );
}

// SeriesTable is the series as figures, a row a bucket, folded away: what
// the charts draw, for reading exact values and for screen readers.
function SeriesTable({ series }: { series: Schemas["AnalyticsBucket"][] }) {
  return (
    <details class="series-table">
      <summary>The series as a table</summary>
      <ListTable
        items={series}
        error={undefined}
        empty="No activity in the range."
        columns={["From", "Messages", "Tokens", "Cost", "Errors", "Tool calls", "p50 (ms)"]}
        rowKey={(b) => b.start}
        row={(b) => (
          <tr>
            <td>{when(b.start)}</td>
            <td>{count(b.messages)}</td>
            <td>{count(b.tokensUsed)}</td>
            <td>{usd(b.costUsd)}</td>
            <td>{count(b.errors)}</td>
            <td>{count(b.toolCalls)}</td>
            <td>{Math.round(b.p50ResponseTime)}</td>
          </tr>
        )}
      />
    </details>
  );
}

// Chart is one uPlot line chart, as wide as its container; format, when
// given, writes the values of its y axis (dollars).
function Chart(props: { title: string; x: number[]; y: number[]; color: string; format?: (v: number) => string }) {
  const { title, x, y, color, format } = props;
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    // Canvas text and lines cannot use CSS variables: read the theme's.
    const token = (name: string) => getComputedStyle(el).getPropertyValue(name).trim();
    const axis = {
      stroke: token("--color-muted"),
      grid: { stroke: token("--color-line") },
      ticks: { stroke: token("--color-line") },
    };
    const yAxis = format ? { ...axis, size: 84, values: (_: uPlot, splits: number[]) => splits.map(format) } : axis;
    const plot = new uPlot(
      {
        title,
        width: Math.max(el.clientWidth, 280),
        height: 180,
        series: [{}, { label: title, stroke: color, fill: `${color}22`, width: 2 }],
        axes: [axis, yAxis],
        legend: { show: false },
      },
      [x, y],
      el,
    );
    const resize = () => plot.setSize({ width: Math.max(el.clientWidth, 280), height: 180 });
    addEventListener("resize", resize);
    return () => {
      removeEventListener("resize", resize);
      plot.destroy();
    };
  }, [title, x, y, color, format]);
  return <figure class="chart" ref={box} aria-label={title} />;
}

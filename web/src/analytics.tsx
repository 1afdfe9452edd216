// analytics.tsx: an agent's usage over a range, as totals and uPlot charts
// of messages, tokens and response time.
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { type Agent, api, call, type Schemas } from "./api";
import { useQuery } from "./hooks";
import { ErrorBox } from "./ui";

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
            <dd>{t.tokensUsed}</dd>
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
          <Chart title="Response time p50 (ms)" x={x} y={report.series.map((b) => b.p50ResponseTime)} color="#d97706" />
        </div>
      )}
    </section>
  );
}

// Chart is one uPlot line chart, as wide as its container.
function Chart({ title, x, y, color }: { title: string; x: number[]; y: number[]; color: string }) {
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
    const plot = new uPlot(
      {
        title,
        width: Math.max(el.clientWidth, 280),
        height: 180,
        series: [{}, { label: title, stroke: color, fill: `${color}22`, width: 2 }],
        axes: [axis, axis],
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
  }, [title, x, y, color]);
  return <figure class="chart" ref={box} aria-label={title} />;
}

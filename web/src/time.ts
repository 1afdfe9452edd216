// time.ts: timestamps of the API in words, for people: when one is, and
// how far it is from now. Pages take them from ui.tsx, which re-exports
// them; pure modules (money.ts) import them here, without the components.

// when formats a timestamp of the API for people.
export function when(ts: string): string {
  return new Date(ts).toLocaleString();
}

// relative is how far a timestamp is from now, in words: "in 23 h 59 min",
// "4 min ago", "in 30 s", "just now".
export function relative(ts: string, now = Date.now()): string {
  const ms = Date.parse(ts) - now;
  const s = Math.round(Math.abs(ms) / 1000);
  const [d, h, m] = [Math.floor(s / 86400), Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60)];
  if (s < 5) return ms >= 0 ? "in a moment" : "just now";
  const amount =
    s < 60
      ? `${s} s`
      : s < 3600
        ? `${m} min`
        : s < 86400
          ? `${h} h${m ? ` ${m} min` : ""}`
          : `${d} d${h ? ` ${h} h` : ""}`;
  return ms >= 0 ? `in ${amount}` : `${amount} ago`;
}

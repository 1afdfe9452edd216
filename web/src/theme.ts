// theme.ts: light and dark. The console follows the system's
// prefers-color-scheme until the toggle picks one, which is kept in
// localStorage (a preference, not a secret) and set on <html> as
// data-theme, which style.css reads.
import { useEffect, useState } from "preact/hooks";

export type Theme = "light" | "dark";

const themeName = "agentd.theme";
const dark = "(prefers-color-scheme: dark)";

// chosenTheme is the theme the toggle picked, or null to follow the system.
export function chosenTheme(): Theme | null {
  const t = localStorage.getItem(themeName);
  return t === "light" || t === "dark" ? t : null;
}

// applyTheme sets the chosen theme on the page (none: the system's).
export function applyTheme(theme: Theme | null): void {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

// shownTheme is the theme the page shows: the chosen one, else the system's.
function shownTheme(): Theme {
  return chosenTheme() ?? (matchMedia(dark).matches ? "dark" : "light");
}

// useTheme is the theme shown and a toggle to the other one, which is
// then kept. It follows a change of the system's setting while none is
// chosen.
export function useTheme(): [Theme, () => void] {
  const [theme, setTheme] = useState(shownTheme);
  useEffect(() => {
    const media = matchMedia(dark);
    const on = () => setTheme(shownTheme());
    media.addEventListener("change", on);
    return () => media.removeEventListener("change", on);
  }, []);
  const toggle = () => {
    const next: Theme = theme === "dark" ? "light" : "dark";
    localStorage.setItem(themeName, next);
    applyTheme(next);
    setTheme(next);
  };
  return [theme, toggle];
}

// theme.ts: light and dark. The console follows the system's
// prefers-color-scheme until the toggle picks one, which is kept in
// localStorage (a preference, not a secret). The theme shown is set on
// <html> as data-theme, the one switch style.css reads, so its dark
// colours are written once.
import { useEffect, useState } from "preact/hooks";

export type Theme = "light" | "dark";

const themeName = "agentd.theme";
const dark = "(prefers-color-scheme: dark)";

// chosenTheme is the theme the toggle picked, or null to follow the system.
function chosenTheme(): Theme | null {
  const t = localStorage.getItem(themeName);
  return t === "light" || t === "dark" ? t : null;
}

// shownTheme is the theme the page shows: the chosen one, else the system's.
function shownTheme(): Theme {
  return chosenTheme() ?? (matchMedia(dark).matches ? "dark" : "light");
}

// applyTheme sets the theme to show on the page, and returns it.
export function applyTheme(): Theme {
  const theme = shownTheme();
  document.documentElement.dataset.theme = theme;
  return theme;
}

// useTheme is the theme shown and a toggle to the other one, which is
// then kept. It follows a change of the system's setting while none is
// chosen.
export function useTheme(): [Theme, () => void] {
  const [theme, setTheme] = useState(shownTheme);
  useEffect(() => {
    const media = matchMedia(dark);
    const on = () => setTheme(applyTheme());
    media.addEventListener("change", on);
    return () => media.removeEventListener("change", on);
  }, []);
  const toggle = () => {
    localStorage.setItem(themeName, theme === "dark" ? "light" : "dark");
    setTheme(applyTheme());
  };
  return [theme, toggle];
}

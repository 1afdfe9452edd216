// build.mjs builds web/dist, which the Go package web embeds:
//   dist/index.html, dist/docs.html      the console and the API reference
//   dist/ui/console.js, console.css      the console, bundled by esbuild
//   dist/ui/favicon.svg                  both pages' tab icon
//   dist/ui/docs/                        Swagger UI's files from npm
// Names carry no hash and the output no timestamp, so a build from the same
// sources and package-lock.json is byte for byte the same (CI checks it).
import { build } from "esbuild";
import { cpSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { gzipSync } from "node:zlib";

const dist = "dist";
rmSync(dist, { recursive: true, force: true });
mkdirSync(`${dist}/ui/docs`, { recursive: true });

await build({
  entryPoints: { console: "src/main.tsx" },
  outdir: `${dist}/ui`,
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "eof",
  logLevel: "warning",
});

for (const f of ["index.html", "docs.html"]) cpSync(`static/${f}`, `${dist}/${f}`);
// The tab icon of both pages (a link in each, so no request for /favicon.ico).
cpSync("static/favicon.svg", `${dist}/ui/favicon.svg`);
cpSync("static/docs.js", `${dist}/ui/docs/docs.js`);
for (const f of ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"]) {
  cpSync(`node_modules/swagger-ui-dist/${f}`, `${dist}/ui/docs/${f}`);
}

// The console's weight, gzipped (the measure of its budget): reported on
// each build, and a build over the budget fails, so growth is a decision
// rather than an accident.
const budget = 150 * 1024;
const gzipped = ["console.js", "console.css"].reduce(
  (sum, f) => sum + gzipSync(readFileSync(`${dist}/ui/${f}`)).length,
  0,
);
console.log(`web/dist/ui console.js + console.css: ${(gzipped / 1024).toFixed(1)} KB gzipped (budget 150 KB)`);
if (gzipped > budget) {
  console.error("the console is over its 150 KB gzipped budget");
  process.exit(1);
}

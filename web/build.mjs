// build.mjs builds web/dist, which the Go package web embeds:
//   dist/index.html, dist/docs.html      the console and the API reference
//   dist/ui/console.js, console.css      the console, bundled by esbuild
//   dist/ui/docs/                        Swagger UI's files from npm
// Names carry no hash and the output no timestamp, so a build from the same
// sources and package-lock.json is byte for byte the same (CI checks it).
import { build } from "esbuild";
import { cpSync, mkdirSync, rmSync } from "node:fs";

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
cpSync("static/docs.js", `${dist}/ui/docs/docs.js`);
for (const f of ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"]) {
  cpSync(`node_modules/swagger-ui-dist/${f}`, `${dist}/ui/docs/${f}`);
}

// eslint.config.js: the console's lint, run by `make web-check`: ESLint's
// and typescript-eslint's recommended rules, nothing of taste (prettier
// owns the layout).
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

export default defineConfig(
  { ignores: ["dist/"] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      // Taking a member out of an object by destructuring leaves it unused
      // on purpose: const { id: _, ...rest } = agent.
      "@typescript-eslint/no-unused-vars": ["error", { ignoreRestSiblings: true }],
    },
  },
  {
    // tsc checks that names exist, with the DOM's types.
    files: ["**/*.ts", "**/*.tsx"],
    rules: { "no-undef": "off" },
  },
  {
    // build.mjs runs in Node.
    files: ["build.mjs"],
    languageOptions: { globals: { console: "readonly", process: "readonly" } },
  },
  {
    // docs.js is a plain script of the /docs page, after Swagger UI's.
    files: ["static/docs.js"],
    languageOptions: { sourceType: "script", globals: { window: "readonly", SwaggerUIBundle: "readonly" } },
  },
);

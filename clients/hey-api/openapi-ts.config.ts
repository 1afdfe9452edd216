import { defineConfig } from "@hey-api/openapi-ts";

// `npm run generate` (make sdk-check) writes the SDK afresh into sdk/,
// which git ignores. Names are the generator's defaults, as a user who
// generates their own client gets them.
export default defineConfig({
  input: "../../openapi.yaml",
  output: { path: "sdk", clean: true },
  // The parser's checks of the contract (duplicate operationIds, ...) fail
  // the run instead of warning.
  parser: { validate_EXPERIMENTAL: "strict" },
  // Errors go to the terminal (CI's log), not to a file in the tree.
  logs: { file: false },
  plugins: ["@hey-api/client-fetch", "@hey-api/typescript", "@hey-api/sdk"],
});

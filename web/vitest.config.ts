// vitest.config.ts: the console's unit tests (src/**/*.test.ts[x]), in Node
// with the browser globals of src/test-setup.ts; `npm test` and `make test`
// run them.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.{ts,tsx}"],
    environment: "node",
    setupFiles: ["src/test-setup.ts"],
  },
});

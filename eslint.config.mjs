// The JavaScript linter of `make lint`: ESLint's recommended rules over the project's own browser
// code, classic scripts (no modules) run by the pages the project writes: metrics/report.html
// (rag_ablation/evaluation/report/assets/report.js) and the workbench (rag_ablation/**/static/).
// The vendored chart libraries (*.min.js) are never linted.
import js from "@eslint/js";
import globals from "globals";

const OWN = ["rag_ablation/**/*.js"];

export default [
  { ignores: ["**/*.min.js", "node_modules/"] },
  { files: OWN, ...js.configs.recommended },
  {
    files: OWN,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser },
    },
    rules: {
      // A callback's unused leading parameter (forEach's index) and an unused caught error are
      // matters of style here; an unused variable or function is still an error.
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }],
    },
  },
  {
    // metrics/report.html: vega-embed is the vendored library inlined before the script
    files: ["rag_ablation/evaluation/report/assets/report.js"],
    languageOptions: { globals: { vegaEmbed: "readonly" } },
  },
];

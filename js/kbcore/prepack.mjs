// npm pack's prepack step: the types of spec/types (the source of truth)
// are copied into types/, and the package refuses to pack without its
// kbcore.wasm (built by `make wasm` at the repository root).
import { copyFile, mkdir, stat } from "node:fs/promises";

const here = new URL("./", import.meta.url);
try {
  await stat(new URL("kbcore.wasm", here));
} catch {
  console.error("@kbkit/core: kbcore.wasm is missing: run `make wasm` at the repository root first");
  process.exit(1);
}
await mkdir(new URL("types/", here), { recursive: true });
await copyFile(new URL("../../spec/types/kbkit.d.ts", here), new URL("types/kbkit.d.ts", here));

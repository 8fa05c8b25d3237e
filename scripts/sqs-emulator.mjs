// Starts one SQS emulator programmatically (quietly, on loopback; see
// sqs-loopback.mjs). SQS_KIND is "fauxqs" or "local-aws-sqs"; SQS_PORT the port.
// fauxqs keeps its state in FAUXQS_DATA_DIR when FAUXQS_PERSISTENCE=true.
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.NODE_PATH;
const require = createRequire(path.join(modules, "noop.js"));
const kind = process.env.SQS_KIND;
const port = Number(process.env.SQS_PORT);

if (kind === "fauxqs") {
  const { startFauxqs } = await import(pathToFileURL(path.join(modules, "fauxqs/dist/app.js")).href);
  const dataDir = process.env.FAUXQS_PERSISTENCE === "true" ? process.env.FAUXQS_DATA_DIR : undefined;
  await startFauxqs({ port, logger: false, host: "127.0.0.1", ...(dataDir ? { dataDir } : {}) });
} else if (kind === "local-aws-sqs") {
  const { createSqsServer } = require("local-aws-sqs");
  await createSqsServer({ port, hostname: "127.0.0.1", accountId: "000000000000" });
} else {
  console.error(`unknown SQS_KIND ${kind}`);
  process.exit(2);
}
console.log(`${kind} listening on 127.0.0.1:${port}`);

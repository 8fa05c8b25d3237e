// Preloaded with --import: pins every listening socket of the SQS emulators to
// 127.0.0.1, whatever host the emulator asks for.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first && typeof first === "object" && !Array.isArray(first)) {
    args[0] = { ...first, host: "127.0.0.1" };
  } else if (typeof first === "number" || typeof first === "string") {
    if (typeof args[1] === "string") args[1] = "127.0.0.1";
    else args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};

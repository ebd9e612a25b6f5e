// SPDX-License-Identifier: LGPL-2.1-or-later
// The official MCP TypeScript SDK client against `moat mcp` (tests/integration/mcp.sh).
// usage: node mcp_client.mjs SDK_DIR MOAT [SERVER OPTIONS...]
// SDK_DIR holds node_modules/@modelcontextprotocol/sdk (installed by the test
// into a cache directory). Prints "ok WHAT" per check, "run_id ID" and
// "log PATH" of the default sandbox, and "all ok N" at the end; exits 1 on
// the first failed check.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, moat, ...opts] = process.argv.slice(2);
const esm = path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm");
const { Client } = await import(pathToFileURL(path.join(esm, "client/index.js")).href);
const { StdioClientTransport } = await import(pathToFileURL(path.join(esm, "client/stdio.js")).href);
const { LATEST_PROTOCOL_VERSION } = await import(pathToFileURL(path.join(esm, "types.js")).href);

let n = 0;
function check(cond, what, got) {
	if (!cond) {
		console.log(`FAIL ${what}: ${JSON.stringify(got)?.slice(0, 2000)}`);
		process.exit(1);
	}
	n++;
	console.log(`ok ${what}`);
}

const transport = new StdioClientTransport({ command: moat, args: ["mcp", ...opts], stderr: "inherit" });
const client = new Client({ name: "moat-test", version: "1.0.0" });
await client.connect(transport);
check(client.getServerVersion()?.name === "moat", "initialize: server moat", client.getServerVersion());
check(client.getServerCapabilities()?.tools !== undefined, "initialize: tools capability",
	client.getServerCapabilities());
console.log(`# SDK protocol ${LATEST_PROTOCOL_VERSION}`);
await client.ping();
check(true, "ping");

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check(JSON.stringify(names) === JSON.stringify(["create_sandbox", "destroy_sandbox", "list_dir",
	"read_file", "reset", "run", "write_file"]), "tools/list", names);

const sc = (r) => r.structuredContent ?? JSON.parse(r.content[0].text);
let r = await client.callTool({ name: "run", arguments: { argv: ["sh", "-c", "echo sdk-out; echo sdk-err >&2; exit 4"] } });
let c = sc(r);
check(c.exit_code === 4 && c.stdout === "sdk-out\n" && c.stderr === "sdk-err\n" && !r.isError,
	"run: stdout, stderr, exit_code", c);
check(JSON.parse(r.content[0].text).exit_code === 4, "run: the same result as text content", r.content);
const runId = c.run_id;
check(typeof runId === "string" && runId.length > 0, "run: the run id of the sandbox", c);
r = await client.callTool({ name: "write_file", arguments: { path: "/tmp/sdk.txt", content: "written by the SDK\n" } });
check(sc(r).written === true, "write_file", sc(r));
r = await client.callTool({ name: "read_file", arguments: { path: "/tmp/sdk.txt" } });
check(sc(r).content === "written by the SDK\n", "read_file", sc(r));
r = await client.callTool({ name: "list_dir", arguments: { path: "/tmp" } });
check(sc(r).entries.some((e) => e.name === "sdk.txt" && e.type === "file"), "list_dir", sc(r));
r = await client.callTool({ name: "run", arguments: { shell: "cat /tmp/sdk.txt | tr a-z A-Z" } });
check(sc(r).stdout === "WRITTEN BY THE SDK\n", "run sees the file written", sc(r));
r = await client.callTool({ name: "create_sandbox", arguments: {} });
const sb = sc(r).sandbox;
check(/^sb-[0-9]+$/.test(sb) && sc(r).run_id !== runId, "create_sandbox", sc(r));
r = await client.callTool({ name: "run", arguments: { shell: "test -e /tmp/sdk.txt && echo seen || echo unseen", sandbox: sb } });
check(sc(r).stdout === "unseen\n", "run in the other sandbox: not the default's files", sc(r));
r = await client.callTool({ name: "destroy_sandbox", arguments: { sandbox: sb } });
check(sc(r).destroyed === true, "destroy_sandbox", sc(r));
// a policy field: refused by the server (a JSON-RPC error the SDK throws)
let refused = "";
try {
	await client.callTool({ name: "run", arguments: { argv: ["true"], allow_host: "example.com" } });
} catch (e) {
	refused = String(e.message);
}
check(refused.includes("allow_host"), "a policy field is refused, named", refused);
r = await client.callTool({ name: "reset", arguments: {} });
c = sc(r);
check(c.destroyed === true && c.run_id === runId && typeof c.log === "string", "reset", c);
console.log(`run_id ${runId}`);
console.log(`log ${c.log}`);
await client.close();
console.log(`all ok ${n}`);

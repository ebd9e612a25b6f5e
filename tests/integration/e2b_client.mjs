// SPDX-License-Identifier: LGPL-2.1-or-later
// The official E2B JavaScript SDK, unmodified, against `moat serve --e2b`
// (tests/integration/e2b.sh). It is configured only by its own environment
// variables: E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY.
// usage: node e2b_client.mjs SDK_DIR scenario|wrongkey
// SDK_DIR holds node_modules/e2b (installed by the test into a cache).
// Prints "ok WHAT" per check, "sandbox ID" once created, "killed ID" after
// the kill, and "all ok N" at the end; exits 1 on the first failed check.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, mode] = process.argv.slice(2);
const e2b = await import(pathToFileURL(path.join(sdkDir, "node_modules/e2b/dist/index.mjs")).href);
const { Sandbox, CommandExitError, AuthenticationError } = e2b;

let n = 0;
function check(cond, what, got) {
	if (!cond) {
		console.log(`FAIL ${what}: ${JSON.stringify(got, (k, v) => (typeof v === "bigint" ? `${v}` : v))?.slice(0, 2000)}`);
		process.exit(1);
	}
	n++;
	console.log(`ok ${what}`);
}
async function fails(p) {
	try {
		await p;
		return null;
	} catch (e) {
		return e;
	}
}
const opts = { requestTimeoutMs: 30000 };

if (mode === "wrongkey") {
	// the key in E2B's form, but not the token of any tenant
	const e = await fails(Sandbox.create(opts));
	check(e instanceof AuthenticationError, "a wrong key: create refused (401)", String(e));
	const k = await fails(Sandbox.kill(process.env.MOAT_E2B_OTHER_ID ?? "nosuchsandbox", opts));
	check(k instanceof AuthenticationError, "a wrong key: kill refused (401)", String(k));
	console.log(`all ok ${n}`);
	process.exit(0);
}

if (mode === "other") {
	// another tenant's key: the first tenant's sandbox does not exist for it
	const id = process.env.MOAT_E2B_OTHER_ID;
	const e = await fails(Sandbox.connect(id, opts));
	check(e instanceof e2b.NotFoundError, "another tenant: connect is not found", String(e));
	check((await Sandbox.kill(id, opts)) === false, "another tenant: kill finds nothing");
	console.log(`all ok ${n}`);
	process.exit(0);
}

const t0 = Date.now();
const sbx = await Sandbox.create(opts);
check(typeof sbx.sandboxId === "string" && sbx.sandboxId.length > 0, "create: a sandbox id", sbx.sandboxId);
console.log(`sandbox ${sbx.sandboxId}`);
console.log(`# created in ${Date.now() - t0} ms`);

// a command, its output streamed to callbacks and collected
let outs = [];
let errs = [];
let r = await sbx.commands.run("echo e2b-out; echo e2b-err >&2; echo $E2B_T", {
	envs: { E2B_T: "from-envs" },
	onStdout: (d) => outs.push(d),
	onStderr: (d) => errs.push(d),
});
check(r.exitCode === 0 && r.stdout === "e2b-out\nfrom-envs\n" && r.stderr === "e2b-err\n",
	"run: stdout, stderr, exit code 0, envs", r);
check(outs.join("") === r.stdout && errs.join("") === "e2b-err\n", "run: output through onStdout/onStderr", { outs, errs });

// streamed: the first line arrives before the command ends
let firstAt = 0;
const s0 = Date.now();
r = await sbx.commands.run("echo first; sleep 1.5; echo second", {
	onStdout: (d) => {
		if (!firstAt && d.includes("first")) firstAt = Date.now();
	},
});
const endAt = Date.now();
check(r.stdout === "first\nsecond\n", "streamed run: both lines", r);
check(firstAt > 0 && endAt - firstAt >= 1000, "streamed run: the first line came >= 1 s before the end",
	{ first: firstAt - s0, end: endAt - s0 });

// a failing command: CommandExitError with its exit code and output
let e = await fails(sbx.commands.run("echo partial; exit 3"));
check(e instanceof CommandExitError && e.exitCode === 3 && e.stdout === "partial\n",
	"run: exit 3 is a CommandExitError", { e: String(e), code: e?.exitCode, out: e?.stdout });

// cwd
r = await sbx.commands.run("pwd", { cwd: "/tmp" });
check(r.stdout === "/tmp\n", "run: cwd", r);

// a background command, waited for while other calls go on
const bg = await sbx.commands.run("sleep 1; echo bg-done; exit 5", { background: true });
check(typeof bg.pid === "number" && bg.pid > 0, "background: a pid", bg.pid);
const listed = await sbx.commands.list();
check(listed.some((p) => p.pid === bg.pid), "background: listed while it runs", listed);
await sbx.files.write("/tmp/during-bg.txt", "while the background command runs\n");
e = await fails(bg.wait());
check(e instanceof CommandExitError && e.exitCode === 5 && e.stdout === "bg-done\n",
	"background: wait() gives its output and exit code", { e: String(e), code: e?.exitCode, out: e?.stdout });

// a background command killed
const long = await sbx.commands.run("sleep 60", { background: true });
check((await sbx.commands.kill(long.pid)) === true, "kill: a running background command");
e = await fails(long.wait());
check(e instanceof CommandExitError && e.exitCode !== 0, "kill: its wait() reports it did not exit 0", String(e));
check((await sbx.commands.kill(999999)) === false, "kill: an unknown pid is not found");

// files: write, read, list; seen by the sandbox's own commands and back
const text = "hello from the e2b sdk\nline 2\n";
const w = await sbx.files.write("/tmp/e2b.txt", text);
check(w.path === "/tmp/e2b.txt" && w.name === "e2b.txt", "files.write: the entry written", w);
check((await sbx.files.read("/tmp/e2b.txt")) === text, "files.read: the same text");
r = await sbx.commands.run("cat /tmp/e2b.txt; printf 'by a command\\n' > /tmp/by-cmd.txt");
check(r.stdout === text, "a command reads the file the SDK wrote", r);
check((await sbx.files.read("/tmp/by-cmd.txt")) === "by a command\n", "the SDK reads a file a command wrote");
const bytes = new Uint8Array(256).map((_, i) => i);
await sbx.files.write("/tmp/bytes.bin", bytes.buffer);
const back = await sbx.files.read("/tmp/bytes.bin", { format: "bytes" });
check(back.length === 256 && back.every((b, i) => b === i), "files: 256 binary bytes round trip", back.length);
await sbx.files.write("/tmp/empty.txt", "");
check((await sbx.files.read("/tmp/empty.txt")) === "", "files: an empty file");
const entries = await sbx.files.list("/tmp");
const names = entries.map((x) => x.name);
check(["e2b.txt", "by-cmd.txt", "bytes.bin", "during-bg.txt"].every((x) => names.includes(x)), "files.list: the files", names);
const ent = entries.find((x) => x.name === "e2b.txt");
check(ent.type === "file" && ent.size === text.length && ent.path === "/tmp/e2b.txt", "files.list: type, size, path", ent);
check(await sbx.files.exists("/tmp/e2b.txt"), "files.exists");
check(!(await sbx.files.exists("/tmp/nonexistent")), "files.exists: a missing file");
e = await fails(sbx.files.read("/tmp/nonexistent"));
check(e instanceof e2b.NotFoundError || e instanceof e2b.FileNotFoundError, "files.read: a missing file is not found", String(e));
e = await fails(sbx.files.makeDir("/tmp/newdir"));
check(e instanceof e2b.SandboxError && /not supported/.test(e.message), "files.makeDir: refused as unsupported", String(e));
await sbx.files.remove("/tmp/by-cmd.txt");
check(!(await sbx.files.exists("/tmp/by-cmd.txt")), "files.remove");
// relative paths and another user: refused, not mapped silently
e = await fails(sbx.files.read("rel.txt"));
check(e instanceof e2b.InvalidArgumentError || e instanceof e2b.SandboxError, "files: a relative path is refused", String(e));
e = await fails(sbx.commands.run("id", { user: "root" }));
check(e !== null, "run: user root is refused", String(e));

// Sandbox.connect finds it; its info
const again = await Sandbox.connect(sbx.sandboxId, opts);
r = await again.commands.run("cat /tmp/e2b.txt");
check(r.stdout === text, "connect: the same sandbox", r);
const info = await Sandbox.getInfo(sbx.sandboxId, opts);
check(info.sandboxId === sbx.sandboxId && info.state === "running", "getInfo", info);

// leave a file for the shell side to see before the kill
await sbx.files.write("/tmp/keep.txt", "seen from outside\n");
console.log(`ready ${sbx.sandboxId}`);
// the test reads the file through moat's own API, then says go on
await new Promise((res) => {
	process.stdin.once("data", res);
	process.stdin.once("end", res);
});

check((await sbx.files.read("/tmp/from-v1.txt")) === "written through /v1",
	"the SDK reads the file written through /v1");
await sbx.kill();
check(true, "kill the sandbox");
console.log(`killed ${sbx.sandboxId}`);
check((await Sandbox.kill(sbx.sandboxId, opts)) === false, "kill again: not found");
e = await fails(Sandbox.getInfo(sbx.sandboxId, opts));
check(e instanceof e2b.NotFoundError, "getInfo after kill: not found", String(e));
e = await fails(sbx.commands.run("true", { requestTimeoutMs: 10000 }));
check(e !== null, "a command after kill fails", String(e));
console.log(`all ok ${n}`);
process.exit(0);

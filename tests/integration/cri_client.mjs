// SPDX-License-Identifier: LGPL-2.1-or-later
// A small CRI client (tests/integration/cri.sh): what a kubelet asks of
// containerd for one pod, over the CRI v1 gRPC API (cri_api.proto, the
// subset the test uses), with @grpc/grpc-js and @grpc/proto-loader.
//   node cri_client.mjs NODE_MODULES_PREFIX SOCKET HANDLER IMAGE LOGDIR
// Runs a pod with runtime_handler HANDLER (host network: no CNI here), one
// container of IMAGE, ExecSync in it, ContainerStatus, then stops and
// removes the pod. Prints one JSON object (the answers) on stdout; exits 1
// on the first failed call, naming it.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const [prefix, socket, handler, image, logdir] = process.argv.slice(2);
if (!logdir) {
	console.error("usage: cri_client.mjs PREFIX SOCKET HANDLER IMAGE LOGDIR");
	process.exit(2);
}
const require = createRequire(path.join(prefix, "node_modules", "x.js"));
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");
const here = path.dirname(fileURLToPath(import.meta.url));
const def = loader.loadSync(path.join(here, "cri_api.proto"), {
	keepCase: true,
	longs: Number,
	enums: String,
	defaults: true,
});
const v1 = grpc.loadPackageDefinition(def).runtime.v1;
const addr = "unix://" + socket;
const rt = new v1.RuntimeService(addr, grpc.credentials.createInsecure());
const img = new v1.ImageService(addr, grpc.credentials.createInsecure());

function call(svc, method, req, secs = 20) {
	return new Promise((resolve, reject) => {
		const deadline = new Date(Date.now() + secs * 1000);
		svc[method](req, { deadline }, (err, res) => {
			if (err) reject(new Error(`${method}: ${err.details || err.message}`));
			else resolve(res);
		});
	});
}

const out = { handler };
const uid = { value: 1000 };
const ns = { network: "NODE", pid: "CONTAINER", ipc: "NODE" };
const podConfig = {
	metadata: { name: "moat-pod", uid: `pod-${process.pid}`, namespace: "default", attempt: 0 },
	log_directory: logdir,
	labels: { app: "moat-test" },
	// the pod's annotations (POD_ANNOTATIONS, a JSON object): containerd
	// passes the runtime's pod_annotations (run.moat.*) on to the runtime
	annotations: JSON.parse(process.env.POD_ANNOTATIONS || "{}"),
	linux: {
		// the pod's cgroup parent (CGROUP_PARENT): each container's
		// linux.cgroupsPath is PARENT/ID
		cgroup_parent: process.env.CGROUP_PARENT || "",
		security_context: {
			namespace_options: ns,
			run_as_user: uid,
			run_as_group: uid,
			readonly_rootfs: true,
		},
	},
};
let pod = "";
try {
	out.version = await call(rt, "Version", { version: "v1" });
	const st = await call(img, "ImageStatus", { image: { image } });
	out.image = st.image ? st.image.repo_tags : null;
	pod = (await call(rt, "RunPodSandbox", { config: podConfig, runtime_handler: handler }, 30))
		.pod_sandbox_id;
	out.pod = pod;
	const cid = (
		await call(rt, "CreateContainer", {
			pod_sandbox_id: pod,
			sandbox_config: podConfig,
			config: {
				metadata: { name: "work", attempt: 0 },
				image: { image },
				command: ["sleep", "100"],
				envs: [{ key: "PATH", value: "/bin" }],
				log_path: "work.log",
				linux: {
					security_context: {
						namespace_options: ns,
						run_as_user: uid,
						run_as_group: uid,
						readonly_rootfs: true,
					},
				},
			},
		})
	).container_id;
	out.container = cid;
	await call(rt, "StartContainer", { container_id: cid });
	out.state = (await call(rt, "ContainerStatus", { container_id: cid })).status.state;
	const ex = await call(rt, "ExecSync", {
		container_id: cid,
		cmd: ["sh", "-c", "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; id -u"],
		timeout: 10,
	});
	out.exec = { stdout: ex.stdout.toString(), stderr: ex.stderr.toString(), exit_code: ex.exit_code };
	const ex3 = await call(rt, "ExecSync", { container_id: cid, cmd: ["cat", "/etc/resolv.conf"], timeout: 10 });
	out.resolv = ex3.stdout.toString();
	const ex2 = await call(rt, "ExecSync", { container_id: cid, cmd: ["sh", "-c", "exit 7"], timeout: 10 });
	out.exec_exit = ex2.exit_code;
	await call(rt, "StopPodSandbox", { pod_sandbox_id: pod }, 30);
	const after = (await call(rt, "ContainerStatus", { container_id: cid })).status;
	out.stopped_state = after.state;
	await call(rt, "RemovePodSandbox", { pod_sandbox_id: pod }, 30);
	out.removed = true;
	console.log(JSON.stringify(out));
	process.exit(0);
} catch (e) {
	out.error = e.message;
	if (pod) {
		// leave nothing running in the test's containerd
		await call(rt, "StopPodSandbox", { pod_sandbox_id: pod }, 30).catch(() => {});
		await call(rt, "RemovePodSandbox", { pod_sandbox_id: pod }, 30).catch(() => {});
	}
	console.log(JSON.stringify(out));
	process.exit(1);
}

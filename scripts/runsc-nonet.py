#!/usr/bin/env python3
"""runsc-nonet.py RUNSC ARGS...   (the local cluster's `lazyagent-nonet` runtime)

containerd's runc v2 shim runs this as its runtime binary (BinaryName, see
scripts/k8s-cluster.sh); it runs Debian's runsc (gVisor) with --network=none
(and --oci-seccomp, so the pod's seccomp profile applies inside gVisor),
so every container of a pod of RuntimeClass lazyagent-nonet has only its own
loopback, whatever network namespace the CNI prepared. Debian ships no runsc
containerd shim, and two things differ from runc under the runc shim:

- create: with the CRI annotation container-type=container, runsc starts the
  container inside the pod's existing gVisor sandbox, where it has no host pid
  and the shim never sees it exit. The annotation is dropped, so runsc gives
  each container a sandbox of its own (still no network), which the shim
  watches like any runc container.
- kill: after a container exited, runsc refuses to signal it ("sandbox is not
  running") and the shim's clean-up fails forever. A failed kill of a
  container whose sandbox process is gone counts as done; one whose sandbox
  process still runs is ended with SIGKILL to that process.
"""
import json
import os
import signal
import subprocess
import sys


def opt(args, name):
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return None


def drop_join_annotation(bundle):
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        spec = json.load(f)
    ann = spec.get("annotations") or {}
    if ann.pop("io.kubernetes.cri.container-type", None) is not None:
        ann.pop("io.kubernetes.cri.sandbox-id", None)
        with open(path + ".lazyagent", "w") as f:
            json.dump(spec, f)
        os.rename(path + ".lazyagent", path)


def main():
    runsc, args = sys.argv[1], sys.argv[2:]
    # --oci-seccomp: apply the pod's seccomp profile (RuntimeDefault) inside
    # gVisor too; the isolation probe demands a filter (Seccomp: 2).
    cmd = [runsc, "--network=none", "--oci-seccomp"] + args
    words = [a for a in args if not a.startswith("-")]
    bundle = opt(args, "--bundle")
    if "create" in words and bundle:
        drop_join_annotation(bundle)
    rc = subprocess.call(cmd)
    if rc == 0 or "kill" not in words:
        sys.exit(rc)
    # kill ... ID SIGNAL: the id is the word before the signal
    i = words.index("kill")
    cid = words[i + 1] if len(words) > i + 1 else ""
    root = opt(args, "--root")
    state = subprocess.run([runsc] + (["--root", root] if root else []) + ["state", cid],
                           capture_output=True, text=True)
    try:
        pid = int(json.loads(state.stdout).get("pid", -1))
    except (ValueError, json.JSONDecodeError):
        pid = -1
    if pid > 0:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(0)


if __name__ == "__main__":
    main()

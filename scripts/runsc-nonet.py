#!/usr/bin/env python3
"""runsc-nonet.py RUNSC ARGS...   (the local cluster's `lazyagent-nonet` runtime)

containerd's runc v2 shim runs this as its runtime binary (BinaryName, see
scripts/k8s-cluster.sh); it runs Debian's runsc (gVisor) with --network=none
(and --oci-seccomp, so the pod's seccomp profile applies inside gVisor),
so every container of a pod of RuntimeClass lazyagent-nonet has only its own
loopback, whatever network namespace the CNI prepared. Debian ships no runsc
containerd shim, and three things differ from runc under the runc shim:

- create: with the CRI annotation container-type=container, runsc starts the
  container inside the pod's existing gVisor sandbox, where it has no host pid
  and the shim never sees it exit. The annotation is dropped, so runsc gives
  each container a sandbox of its own (still no network), which the shim
  watches like any runc container.
- kill: after a container exited, runsc refuses to signal it ("sandbox is not
  running") and the shim's clean-up fails forever. A failed kill of a
  container whose sandbox process is gone counts as done; one whose sandbox
  process still runs is ended with SIGKILL to that process.
- seccomp (--oci-seccomp), where this runsc reads the pod's profile
  (containerd's RuntimeDefault) otherwise than runc, two ways that break
  builds (cJSON's cmake/make in the corpus: "Operation not permitted"):
  * names: runsc looks them up in its own table, which calls x86_64's
    syscall 270 "pselect" where Linux, libseccomp and the profile say
    "pselect6"; a name it does not know is ignored, so select() (glibc makes
    it pselect6) got the default action, EPERM. Each rule naming a syscall by
    its Linux name gets runsc's name too (GVISOR_NAMES).
  * clone3: the profile answers it ENOSYS (SCMP_ACT_ERRNO, errnoRet 38) so
    that glibc falls back to clone, whose flags the profile checks; under
    this runsc the call failed with EPERM instead, and glibc's posix_spawn
    (make, cmake's children) gives up on EPERM. This runsc has no clone3
    at all: let through, the Sentry itself answers ENOSYS, which is what
    the profile asks. So clone3 moves from its ENOSYS rule to an allow rule.
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


# Linux's name -> the name Debian's runsc (20221219) has for the same syscall.
GVISOR_NAMES = {"pselect6": "pselect"}


def drop_join_annotation(spec):
    ann = spec.get("annotations") or {}
    if ann.pop("io.kubernetes.cri.container-type", None) is None:
        return False
    ann.pop("io.kubernetes.cri.sandbox-id", None)
    return True


ENOSYS = 38


def adapt_seccomp(spec):
    rules = ((spec.get("linux") or {}).get("seccomp") or {}).get("syscalls") or []
    changed = False
    for rule in list(rules):
        names = rule.get("names") or []
        for linux, gvisor in GVISOR_NAMES.items():
            if linux in names and gvisor not in names:
                names.append(gvisor)
                changed = True
        if ("clone3" in names and rule.get("action") == "SCMP_ACT_ERRNO" and rule.get("errnoRet") == ENOSYS
                and not rule.get("args")):
            names.remove("clone3")
            if not names:
                rules.remove(rule)
            rules.append({"names": ["clone3"], "action": "SCMP_ACT_ALLOW"})
            changed = True
    return changed


def adapt_bundle(bundle):
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        spec = json.load(f)
    changed = drop_join_annotation(spec)
    changed = adapt_seccomp(spec) or changed
    if changed:
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
        adapt_bundle(bundle)
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

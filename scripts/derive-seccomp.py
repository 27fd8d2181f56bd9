#!/usr/bin/env python3
"""Derive oci/seccomp.json, the seccomp profile of the podman sandbox and the OCI bundle.

usage: scripts/derive-seccomp.py [SOURCE] [DEST]
  SOURCE  podman's default profile (default /usr/share/containers/seccomp.json,
          from Debian's golang-github-containers-common, a podman dependency)
  DEST    default oci/seccomp.json next to this script's repository

Why derive instead of hand-write: podman's default profile is the one the podman
sandbox runs under, and it is maintained upstream. It is written in the
"docker" profile format (archMap, rules conditional on capabilities and
architectures), which runc does not read; `config.json` needs the OCI
runtime-spec form (linux.seccomp). This script resolves the conditions for the
export's situation and tightens the result where the sandbox never needs more:

  * capabilities: none (the bundle drops all five sets), so rules that need a
    capability are left out and rules that apply "without capability X" stay;
  * architectures: x86_64 (+ its x86 and x32 compat ABIs) and aarch64 (+ arm);
  * refused with EPERM whatever podman's default says (the DENIED list below,
    each name in exactly one rule, so an upstream change cannot reopen it):
    namespaces (unshare, setns, clone with any CLONE_NEW* flag: one rule per
    flag), the mount API (mount, umount2, pivot_root, chroot, move_mount,
    open_tree, fsopen, fsconfig, fsmount, fspick, mount_setattr), file
    handles, the kernel keyring (keyctl, add_key, request_key), ptrace and
    cross-process access (process_vm_readv/writev, pidfd_getfd, kcmp,
    process_madvise), bpf, perf_event_open, userfaultfd, kernel modules and
    kexec, swap, accounting, quotas, clocks, host and domain names, syslog,
    reboot, raw I/O ports, modify_ldt, vm86 and old obsolete calls. A test
    suite does not need them; a hostile patch would;
  * refused with ENOSYS, so that programs fall back as on a kernel without
    them: clone3 (its flags live in memory seccomp cannot inspect; glibc then
    uses clone, whose flags are checked) and io_uring_setup/enter/register
    (libuv, liburing users and Python fall back to ordinary I/O);
  * personality: only the values podman allows (0, 8, 0x20000, 0x20008 and
    the query 0xffffffff); ADDR_NO_RANDOMIZE and other tricks get ENOSYS;
  * everything else: ENOSYS (podman's default errno), so programs fall back
    from syscalls they do not get to older ones.

The output is deterministic (sorted names): rerun after a podman upgrade and
review the diff. The binary embeds oci/seccomp.json at build time; the podman
sandbox gets it through libpod's seccomp_profile_path (podman reads this OCI form
too), the export as linux.seccomp.
"""
import json
import os
import sys

ARCHES = {"amd64", "x86", "x32", "arm64", "arm"}
OCI_ARCHES = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32",
              "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
EPERM, ENOSYS = 1, 38
# CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
CLONE_NAMESPACE_FLAGS = 0x7E020000

DENIED = sorted("""
    unshare setns
    mount umount umount2 mount_setattr move_mount open_tree
    fsconfig fsmount fsopen fspick pivot_root chroot
    name_to_handle_at open_by_handle_at
    keyctl add_key request_key
    ptrace process_vm_readv process_vm_writev pidfd_getfd kcmp process_madvise
    bpf perf_event_open userfaultfd lookup_dcookie fanotify_init
    init_module finit_module delete_module create_module query_module get_kernel_syms
    kexec_load kexec_file_load reboot
    swapon swapoff acct quotactl syslog vhangup
    settimeofday stime clock_settime clock_settime64
    sethostname setdomainname
    iopl ioperm modify_ldt vm86 vm86old uselib ustat sysfs _sysctl nfsservctl bdflush
""".split())
NOT_IMPLEMENTED = sorted("clone3 io_uring_setup io_uring_enter io_uring_register".split())
# One EPERM rule per flag: seccomp compares masked values for equality only,
# so "any of these bits" takes one rule per bit.
CLONE_NEW_FLAGS = {
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
EXPLICIT = set(DENIED) | set(NOT_IMPLEMENTED) | {"clone"}


def applies(rule):
    """Does a docker-format rule apply with no capabilities on ARCHES?"""
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if inc.get("caps"):
        return False  # needs a capability we do not have
    if inc.get("arches") and not ARCHES.intersection(inc["arches"]):
        return False
    if exc.get("arches") and ARCHES.issubset(exc["arches"]):
        return False
    return True  # excludes.caps: applies exactly when the capability is absent


def derive(src):
    out_rules, allowed = [], set()
    for rule in src["syscalls"]:
        if not applies(rule):
            continue
        names = [n for n in rule["names"] if n not in EXPLICIT]
        if not names:
            continue
        oci = {"names": sorted(names), "action": rule["action"]}
        if rule["action"] == "SCMP_ACT_ERRNO":
            oci["errnoRet"] = rule.get("errnoRet", EPERM)
        if rule.get("args"):
            oci["args"] = [{k: a[k] for k in ("index", "value", "valueTwo", "op")} for a in rule["args"]]
        elif rule["action"] == "SCMP_ACT_ALLOW":
            allowed.update(names)
            continue  # merged into one unconditional allow rule below
        out_rules.append(oci)
    rules = [{"names": sorted(allowed), "action": "SCMP_ACT_ALLOW"}]
    rules.append({"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                  "args": [{"index": 0, "value": CLONE_NAMESPACE_FLAGS, "valueTwo": 0,
                            "op": "SCMP_CMP_MASKED_EQ"}]})
    for flag in sorted(CLONE_NEW_FLAGS.values()):
        rules.append({"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM,
                      "args": [{"index": 0, "value": flag, "valueTwo": flag,
                                "op": "SCMP_CMP_MASKED_EQ"}]})
    rules.append({"names": NOT_IMPLEMENTED, "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS})
    rules.append({"names": DENIED, "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM})
    rules.extend(out_rules)
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": ENOSYS,
        "architectures": OCI_ARCHES,
        "syscalls": rules,
    }


def main():
    src_path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dest = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "oci", "seccomp.json")
    with open(src_path, encoding="utf-8") as f:
        src = json.load(f)
    if src.get("defaultAction") != "SCMP_ACT_ERRNO":
        sys.exit(f"{src_path}: defaultAction is {src.get('defaultAction')!r}, expected an allowlist "
                 "(SCMP_ACT_ERRNO); refusing to derive a weaker profile")
    profile = derive(src)
    with open(dest + ".tmp", "w", encoding="utf-8") as f:
        json.dump(profile, f, indent=1)
        f.write("\n")
    os.replace(dest + ".tmp", dest)
    n = len(profile["syscalls"][0]["names"])
    print(f"wrote {dest}: {n} syscalls allowed, {len(DENIED)} refused with EPERM, "
          f"clone without namespace flags, {len(NOT_IMPLEMENTED)} ENOSYS", file=sys.stderr)


if __name__ == "__main__":
    main()

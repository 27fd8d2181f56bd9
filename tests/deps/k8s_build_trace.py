#!/usr/bin/env python3
"""Turn an execve trace of Kubernetes' build into scripts/k8s-build-commands.txt.

Kubernetes' build (`make` in Debian's kubernetes source tree, as
scripts/k8s-cluster.sh runs it) calls many host programs from its Makefiles
and hack/ scripts, and the Go toolchain calls a few more (gcc for cgo). The
tree exists only during `scripts/k8s-cluster.sh build`, so what it runs is
established once by tracing a build and kept as a list that
scripts/check-host-commands.py checks on every test run:

  cd SRC && strace -f -qq --seccomp-bpf -e trace=execve -e signal=none -o TRACE \\
      make WHAT=cmd/linkcheck KUBE_BUILD_PLATFORMS=linux/amd64   (environment as k8s-cluster.sh sets it)
  tests/deps/k8s_build_trace.py TRACE SRC > scripts/k8s-build-commands.txt

Only successful execs of host programs (under /usr, /bin, /sbin) count; the Go
toolchain unpacked into the build directory and the tools the build makes are
not the host's. Each command is listed with the first place in the tree's
Makefiles and hack/ scripts that calls it (or the program that ran it).
"""

import os
import re
import sys

EXEC = re.compile(r'^(\d+)\s+execve\("([^"]+)", \["([^"]*)"')
UNFINISHED = re.compile(r'^(\d+)\s+execve\("([^"]+)".*<unfinished \.\.\.>$')
RESUMED = re.compile(r'^(\d+)\s+<\.\.\. execve resumed>.*= (-?\d+)')
DONE = re.compile(r'= (-?\d+)(?: [A-Z]+.*)?$')
HOST = ("/usr/", "/bin/", "/sbin/")
SOURCES = ["build/root/Makefile", "build/root/Makefile.generated_files", "hack/make-rules/build.sh",
           "hack/run-in-gopath.sh", "hack/make-rules/helpers/cache_go_dirs.sh", "hack/lib/init.sh",
           "hack/lib/util.sh", "hack/lib/logging.sh", "hack/lib/version.sh", "hack/lib/golang.sh",
           "hack/lib/etcd.sh", "hack/generate-bindata.sh"]


def host_execs(trace, work):
    pending, parent_cmd, found = {}, {}, {}
    with open(trace, errors="replace") as f:
        for line in f:
            m = UNFINISHED.match(line)
            if m:
                pending[m.group(1)] = m.group(2)
                continue
            m = RESUMED.match(line)
            if m:
                path = pending.pop(m.group(1), None)
                if path and m.group(2) == "0":
                    found.setdefault(path, m.group(1))
                continue
            m = EXEC.match(line)
            if m:
                d = DONE.search(line)
                if d and d.group(1) == "0":
                    found.setdefault(m.group(2), m.group(1))
    return sorted(p for p in found if p.startswith(HOST) and not p.startswith(work))


def call_site(src, name):
    word = re.compile(r"(^|[\s;|&(`{!]|\$\()" + re.escape(name) + r"(\s|$|;|\)|\|)")
    for rel in SOURCES:
        path = os.path.join(src, rel)
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                code = line.split("#", 1)[0] if not rel.endswith("Makefile") else line
                if word.search(code):
                    return f"{rel}:{n}"
    return "(run by a program of the build, e.g. go)"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    trace, src = sys.argv[1], os.path.abspath(sys.argv[2])
    work = os.path.dirname(src)
    names = {}
    for path in host_execs(trace, work):
        names.setdefault(os.path.basename(path), path)
    print("# Host programs Kubernetes' build runs (scripts/k8s-cluster.sh build: `make` in Debian's")
    print("# kubernetes 1.20 source tree), from an execve trace: see tests/deps/k8s_build_trace.py.")
    print("# Checked by scripts/check-host-commands.py. Format: COMMAND  FIRST-CALL-SITE-IN-THE-TREE")
    for name in sorted(names):
        print(f"{name}  {call_site(src, name)}")


if __name__ == "__main__":
    main()

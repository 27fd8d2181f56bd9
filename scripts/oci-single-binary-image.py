#!/usr/bin/env python3
"""oci-single-binary-image.py BINARY NAME:TAG OUT.tar

Pack one static binary as /<basename> into an OCI image-layout tarball that
`ctr images import` accepts (used for the Kubernetes pause image, which the
local cluster compiles from the kubernetes source instead of pulling).
Deterministic: uid/gid 0, mtime 0, mode 0755.
"""
import hashlib
import io
import json
import os
import sys
import tarfile


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binpath, name, out = sys.argv[1:4]
    base = os.path.basename(binpath)
    lb = io.BytesIO()
    with tarfile.open(fileobj=lb, mode="w", format=tarfile.PAX_FORMAT) as t:
        ti = t.gettarinfo(binpath, arcname=base)
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        ti.mtime = 0
        ti.mode = 0o755
        with open(binpath, "rb") as f:
            t.addfile(ti, f)
    layer = lb.getvalue()
    cfg = json.dumps({"architecture": "amd64", "os": "linux",
                      "config": {"Entrypoint": ["/" + base], "User": "65535:65535"},
                      "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
    man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                 "digest": digest(cfg), "size": len(cfg)},
                      "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                  "digest": digest(layer), "size": len(layer)}]}).encode()
    idx = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest(man), "size": len(man),
        "annotations": {"io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}}]}).encode()
    with tarfile.open(out, "w") as t:
        entries = [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), ("index.json", idx)]
        entries += [("blobs/sha256/" + digest(d)[7:], d) for d in (layer, cfg, man)]
        for n, d in entries:
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            ti.mode = 0o644
            t.addfile(ti, io.BytesIO(d))


if __name__ == "__main__":
    main()

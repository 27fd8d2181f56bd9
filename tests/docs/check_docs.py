#!/usr/bin/env python3
"""The docs check: every command README.md and docs/*.md show either runs here
and succeeds, or says why it cannot.

How a code block is marked (an HTML comment on the line right before its
opening fence; Markdown renders nothing for it):

  <!-- docs-check: run -->              run the block as one bash script
                                        (set -e -o pipefail); it must exit 0
  <!-- docs-check: run exit=N -->       ... and exit N
  <!-- docs-check: run; not `PREFIX`: REASON -->
                                        run it without its lines that start
                                        with PREFIX (more clauses may follow)
  <!-- docs-check: skip: REASON -->     not run; REASON must say why (what it
                                        needs that this machine or a test
                                        cannot give, and what covers it)
  <!-- docs-check: synopsis -->         each `lazyagent-oci CMD ...` line (with
                                        its indented continuation lines) names
                                        exactly the options `lazyagent-oci CMD
                                        --help` lists, or a subset when the
                                        synopsis ends with `...`

Rules (each breach is a failure naming file and line):
  - a block tagged sh, bash, shell or console must carry run or skip;
  - an untagged block with a line starting `lazyagent-oci ` is a synopsis
    and must carry synopsis (or skip);
  - a block tagged json must parse (one document, or one per line when it
    holds several lines that each parse);
  - an indented (4-space) code block with commands is refused: use a fenced
    ```sh block with a marker;
  - a marker must sit right before a fence, and be one of the above.
Also checked: every command's --help lists the options its own usage line
shows, and the other way round.

The environment a run block gets is the one a reader has after following the
README on this machine: the working directory is the repository, build/ is on
PATH (`lazyagent-oci` is the built binary), and a provider is configured: the
bundled scripted provider (`lazyagent-oci provider-stub`, the demo's script)
behind podman secrets of unique names, named by $LAZYAGENT_CONFIG (a copy of
config/lazyagent.yaml). The run store is private ($XDG_STATE_HOME), and paths
under /srv/ are mapped to a temporary directory (the docs' example output
directories; nothing is written to /srv). Secrets, stub, containers of the
check and the temporary directory are removed at the end.

usage: check_docs.py [--repo DIR] [--binary FILE] [--self-test] [FILE.md ...]
  --self-test   run the checker on tests/docs/fixtures/*.md, each of which
                must fail exactly as its first line says (the check must be
                able to fail); then check the docs
Exit 0: every block holds; 1: a failure (each listed).
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SHELL_LANGS = {"sh", "bash", "shell", "console"}
MARKER = re.compile(r"^<!--\s*docs-check:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([A-Za-z0-9_+-]*)\s*$")
COMMANDISH = re.compile(r"^\s{4,}(\$ |lazyagent-oci |build/lazyagent-oci |scripts/|export |kubectl |read |cd |sudo )")


class Block:
    def __init__(self, path, line, lang, body, marker, marker_line):
        self.path, self.line, self.lang, self.body = path, line, lang, body
        self.marker, self.marker_line = marker, marker_line

    def where(self):
        return f"{os.path.relpath(self.path)}:{self.line}"


def parse_blocks(path):
    """Fenced blocks with the marker right before them; problems found on the way."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, problems = [], []
    i = 0
    pending = None  # (marker text, line number)
    prev_blank = True
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line.strip())
        if m:
            if pending:
                problems.append(f"{os.path.relpath(path)}:{pending[1]}: docs-check marker not followed by a code block")
            pending = (m.group(1), i + 1)
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            fence, lang, start = f.group(2), f.group(3).lower(), i + 1
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence[:3]):
                body.append(lines[i])
                i += 1
            marker, marker_line = (pending if pending else (None, None))
            blocks.append(Block(path, start, lang, body, marker, marker_line))
            pending = None
            i += 1
            prev_blank = False
            continue
        if pending and line.strip():
            problems.append(f"{os.path.relpath(path)}:{pending[1]}: docs-check marker not followed by a code block")
            pending = None
        if prev_blank and COMMANDISH.match(line):
            problems.append(f"{os.path.relpath(path)}:{i + 1}: an indented code block with commands: "
                            "use a fenced ```sh block with a docs-check marker")
        prev_blank = not line.strip()
        i += 1
    if pending:
        problems.append(f"{os.path.relpath(path)}:{pending[1]}: docs-check marker not followed by a code block")
    return blocks, problems


def parse_marker(text):
    """-> (kind, options) or raises ValueError with the reason."""
    if text.startswith("skip"):
        m = re.match(r"^skip:\s*(\S.*)$", text)
        if not m or len(m.group(1)) < 10:
            raise ValueError("skip needs a reason: `skip: why this cannot run here, and what covers it`")
        return "skip", {"reason": m.group(1)}
    if text.startswith("synopsis"):
        if text != "synopsis":
            raise ValueError("synopsis takes no arguments")
        return "synopsis", {}
    if text.startswith("run"):
        parts = [p.strip() for p in re.split(r";\s*(?=not `)", text)]
        head = parts[0].split()
        opts = {"exit": 0, "not": []}
        for tok in head[1:]:
            m = re.match(r"^exit=(\d+)$", tok)
            if not m:
                raise ValueError(f"unknown run option {tok!r}")
            opts["exit"] = int(m.group(1))
        for clause in parts[1:]:
            m = re.match(r"^not `([^`]+)`:\s*(\S.*)$", clause)
            if not m or len(m.group(2)) < 10:
                raise ValueError("a `not` clause is: not `LINE PREFIX`: why that line cannot run here")
            opts["not"].append(m.group(1))
        return "run", opts
    raise ValueError(f"unknown docs-check marker {text!r} (run, skip: REASON, synopsis)")


def help_options(binary, command, cache={}):
    """(options listed, options in the usage line) of `lazyagent-oci COMMAND --help`."""
    if command in cache:
        return cache[command]
    r = subprocess.run([binary, command, "--help"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        cache[command] = None
        return None
    listed, usage, in_options = set(), set(), False
    for line in r.stdout.split("\n"):
        if line.startswith("usage: "):
            usage |= set(re.findall(r"--[a-z][a-z0-9-]*", line))
            in_usage = True
            continue
        if line.startswith("options:"):
            in_options = True
            continue
        if in_options:
            m = re.match(r"^  (--[a-z][a-z0-9-]*)", line)
            if m and m.group(1) != "--help":
                listed.add(m.group(1))
    # The usage line may wrap onto indented lines right after it.
    text = r.stdout.split("\n\n")[0]
    usage |= set(re.findall(r"--[a-z][a-z0-9-]*", text))
    usage.discard("--help")
    cache[command] = (listed, usage)
    return cache[command]


def synopses(body):
    """[(command, flags, partial)] for each `lazyagent-oci CMD` line and its continuation lines."""
    out, cur = [], None
    for line in body:
        m = re.match(r"^\s*(?:build/)?lazyagent-oci\s+([a-z][a-z-]*)(.*)$", line)
        if m:
            cur = [m.group(1), m.group(2)]
            out.append(cur)
        elif cur and line.startswith(" "):
            cur[1] += " " + line
    return [(c, set(re.findall(r"--[a-z][a-z0-9-]*", text)), text.rstrip().endswith("...")) for c, text in out]


def check_synopsis(block, binary):
    problems = []
    found = synopses(block.body)
    if not found:
        return [f"{block.where()}: synopsis block without a `lazyagent-oci COMMAND` line"]
    for command, flags, partial in found:
        h = help_options(binary, command)
        if h is None:
            problems.append(f"{block.where()}: `lazyagent-oci {command} --help` fails: no such command?")
            continue
        listed, _ = h
        extra = sorted(flags - listed)
        missing = sorted(listed - flags)
        if extra:
            problems.append(f"{block.where()}: `{command}` synopsis names {', '.join(extra)}, "
                            f"which `lazyagent-oci {command} --help` does not list")
        if missing and not partial:
            problems.append(f"{block.where()}: `{command}` synopsis lacks {', '.join(missing)} "
                            f"(listed by --help; end the synopsis with `...` if it shows only some)")
    return problems


def check_json(block):
    text = "\n".join(block.body).strip()
    try:
        json.loads(text)
        return []
    except ValueError:
        pass
    problems = []
    for n, line in enumerate(block.body):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError as e:
            problems.append(f"{block.where()}: line {n + 1} of the json block does not parse: {e}")
    return problems


class Fixture:
    """A configured (scripted) provider, a private run store, /srv/ mapped."""

    def __init__(self, repo, binary):
        self.repo, self.binary = repo, binary
        self.tmp = tempfile.mkdtemp(prefix="lazyagent-docs-")
        self.prefix = f"LAZYAGENT_DOCS_{os.getpid()}"
        self.names = [f"{self.prefix}_BASE_URL", f"{self.prefix}_MODEL", f"{self.prefix}_API_KEY"]
        self.stub = None
        os.makedirs(os.path.join(self.tmp, "state"))
        os.makedirs(os.path.join(self.tmp, "srv"))
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        os.symlink(binary, os.path.join(bindir, "lazyagent-oci"))
        self.env = dict(os.environ)
        self.env["PATH"] = bindir + ":" + self.env.get("PATH", "/usr/bin:/bin")
        self.env["XDG_STATE_HOME"] = os.path.join(self.tmp, "state")
        # scripts/demo.sh links lazyagent-oci into /usr/local/bin; here into
        # a directory of the check's own (the machine may be shared).
        self.env["LAZYAGENT_LINK_DIR"] = os.path.join(self.tmp, "link")
        os.makedirs(self.env["LAZYAGENT_LINK_DIR"])
        config = open(os.path.join(repo, "config/lazyagent.yaml"), encoding="utf-8").read()
        config = re.sub(r"(?m)^seed: .*$", "seed: " + os.path.join(repo, "seed"), config)
        for old, new in zip(["CODING_AGENT_BASE_URL", "CODING_AGENT_MODEL", "CODING_AGENT_API_KEY"], self.names):
            if old not in config:
                raise SystemExit(f"config/lazyagent.yaml does not name {old}; the docs check will not guess")
            config = config.replace(old, new)
        self.config = os.path.join(self.tmp, "lazyagent.yaml")
        open(self.config, "w", encoding="utf-8").write(config)
        self.env["LAZYAGENT_CONFIG"] = self.config

    def start(self):
        out = open(os.path.join(self.tmp, "stub.out"), "w")
        self.stub = subprocess.Popen(
            [self.binary, "provider-stub", "--script", os.path.join(self.repo, "examples/provider-stub/demo-script.json"),
             "--listen", "0.0.0.0:0"], stdout=out, stderr=subprocess.DEVNULL, cwd=self.repo)
        port = None
        for _ in range(200):
            m = re.search(r"listening on http://[^:]*:(\d+)/v1", open(os.path.join(self.tmp, "stub.out")).read())
            if m:
                port = m.group(1)
                break
            time.sleep(0.05)
        if not port:
            raise SystemExit("the scripted provider did not start")
        key = json.load(open(os.path.join(self.repo, "examples/provider-stub/demo-script.json")))["api_key"]
        env = dict(self.env)
        env.update({self.names[0]: f"http://host.containers.internal:{port}/v1", self.names[1]: "lazyagent-stub",
                    self.names[2]: key})
        r = subprocess.run([self.binary, "configure"], env=env, cwd=self.repo, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("configuring the scripted provider failed: " + r.stderr)

    def stop(self):
        if self.stub:
            self.stub.send_signal(signal.SIGTERM)
            try:
                self.stub.wait(10)
            except subprocess.TimeoutExpired:
                self.stub.kill()
        for n in self.names:
            subprocess.run(["podman", "secret", "rm", n], capture_output=True)
        # Containers a failed block may have left (ours carry the run store's
        # runs; runc bundles are the block's own business and deleted by it).
        try:
            subprocess.run([self.binary, "reap"], env=self.env, capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"note: reap after the docs check failed: {e}", flush=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def script(self, block, not_prefixes):
        lines = []
        for line in block.body:
            if any(line.strip().startswith(p) for p in not_prefixes):
                lines.append("# (not run by the docs check) " + line)
                continue
            lines.append(line.replace("/srv/", os.path.join(self.tmp, "srv") + "/"))
        return "set -e -o pipefail\n" + "\n".join(lines) + "\n"


def run_block(block, opts, fixture, timeout):
    script = fixture.script(block, opts["not"])
    t0 = time.time()
    try:
        r = subprocess.run(["bash", "-c", script], cwd=fixture.repo, env=fixture.env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return [f"{block.where()}: did not finish within {timeout} s"], 0
    took = time.time() - t0
    if r.returncode != opts["exit"]:
        tail = "\n".join((r.stdout + r.stderr).strip().split("\n")[-15:])
        return [f"{block.where()}: exited {r.returncode}, the docs expect {opts['exit']}; last output:\n{tail}"], took
    return [], took


def check_help_consistency(binary):
    """Each command's usage line and its options list name the same options."""
    problems = []
    r = subprocess.run([binary, "--help"], capture_output=True, text=True)
    commands = re.findall(r"(?m)^  ([a-z][a-z-]+)\s{2,}", r.stdout.split("commands:")[1].split("\n\n")[0])
    for c in commands:
        if c in ("help", "version"):
            continue
        h = help_options(binary, c)
        if h is None:
            problems.append(f"`lazyagent-oci {c} --help` fails")
            continue
        listed, usage = h
        if listed != usage:
            problems.append(f"`lazyagent-oci {c} --help`: the usage line names {sorted(usage - listed)} that the "
                            f"options do not list, and lacks {sorted(listed - usage)}")
    return problems


def check_files(files, binary, fixture, timeout, log):
    problems = []
    for path in files:
        blocks, structural = parse_blocks(path)
        problems += structural
        for b in blocks:
            kind, opts = None, {}
            if b.marker is not None:
                try:
                    kind, opts = parse_marker(b.marker)
                except ValueError as e:
                    problems.append(f"{os.path.relpath(path)}:{b.marker_line}: {e}")
                    continue
            is_shell = b.lang in SHELL_LANGS
            is_synopsis = b.lang == "" and any(re.match(r"^\s*lazyagent-oci ", l) for l in b.body)
            if b.lang == "json":
                problems += check_json(b)
            if kind is None:
                if is_shell:
                    problems.append(f"{b.where()}: a ```{b.lang} block without a docs-check marker "
                                    "(run, or skip: REASON)")
                elif is_synopsis:
                    problems.append(f"{b.where()}: a synopsis block without a docs-check marker (synopsis)")
                continue
            if kind == "skip":
                log(f"skip {b.where()}: {opts['reason']}")
            elif kind == "synopsis":
                found = check_synopsis(b, binary)
                problems += found
                log(f"synopsis {b.where()}: {'ok' if not found else 'FAILED'}")
            elif kind == "run":
                if fixture is None:
                    problems.append(f"{b.where()}: run block, but no fixture (internal error)")
                    continue
                found, took = run_block(b, opts, fixture, timeout)
                problems += found
                log(f"run {b.where()}: {'ok' if not found else 'FAILED'} ({took:.1f} s)")
    return problems


def self_test(repo, binary):
    """Each fixture must fail with the problem its first line names."""
    failures = []
    fixtures = sorted(glob.glob(os.path.join(repo, "tests/docs/fixtures/*.md")))
    if not fixtures:
        return ["no self-test fixtures in tests/docs/fixtures"]
    fixture = Fixture(repo, binary)
    try:
        for path in fixtures:
            first = open(path, encoding="utf-8").readline()
            m = re.match(r"^<!-- expect: (.*) -->", first)
            if not m:
                failures.append(f"{path}: first line must be <!-- expect: TEXT -->")
                continue
            found = check_files([path], binary, fixture, 60, lambda s: None)
            if not any(m.group(1) in p for p in found):
                failures.append(f"{os.path.relpath(path)}: the checker should have reported {m.group(1)!r}, "
                                f"it reported {found!r}")
            else:
                print(f"self-test {os.path.relpath(path)}: fails as it must")
    finally:
        fixture.stop()
    return failures


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--binary", default=None)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    repo = os.path.abspath(a.repo)
    binary = os.path.abspath(a.binary or os.path.join(repo, "build/lazyagent-oci"))
    problems = []
    if a.self_test:
        problems += self_test(repo, binary)
    files = a.files or [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs/*.md")))
    problems += check_help_consistency(binary)
    needs_fixture = any(b.marker and b.marker.startswith("run") for f in files for b in parse_blocks(f)[0])
    fixture = Fixture(repo, binary) if needs_fixture else None
    try:
        if fixture:
            fixture.start()
        problems += check_files(files, binary, fixture, a.timeout, lambda s: print(s, flush=True))
    finally:
        if fixture:
            fixture.stop()
    for p in problems:
        print("FAIL " + p, flush=True)
    print(f"docs check: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

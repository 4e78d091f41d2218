#!/usr/bin/env python3
"""Checks deploy/ offline against the real binaries of a build folder.

- systemd units: `systemd-analyze verify` on copies whose ExecStart binary path
  (/usr/local/bin/…) points into the build folder instead — nothing else changes; any
  warning fails (verify exits 0 on unknown keys and bad values, so its output is the verdict).
- every flag in a unit's ExecStart, a Dockerfile's CMD, a manifest's args and a compose command
  is one the binary's --help lists.
- Kubernetes manifests: structure (kubectl cannot validate offline: `apply --dry-run=client`
  needs a server for discovery). Known keys per object, selectors that match their pods, named
  ports and Secret keys that exist, GPU limits on the agent DaemonSet.
- the compose file: parsed, known keys, build files and bind sources exist, depends_on and
  volumes resolve, healthchecks in exec form.
- Dockerfiles: builder packages are scripts/bootstrap's, the runtime stage installs the package
  of every shared library the built binary links (readelf NEEDED → ldd → dpkg -S).
Usage: verify.py --bin-dir BUILD [--source-dir SRC]; exits 1 listing every problem.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

problems = []


def bad(where, msg):
    problems.append(f"{where}: {msg}")


def help_flags(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", out))


def check_flags(where, argv, flags):
    for a in argv:
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            if name not in flags:
                bad(where, f"flag {name} is not one of the binary's flags ({', '.join(sorted(flags))})")


# --- systemd ---------------------------------------------------------------------------------

def exec_start(text):
    joined = re.sub(r"\\\n\s*", " ", text)
    return [l.split("=", 1)[1] for l in joined.splitlines() if l.startswith("ExecStart=")]


def check_units(src, bin_dir, flags_of):
    unit_dir = os.path.join(src, "deploy/systemd")
    units = sorted(f for f in os.listdir(unit_dir) if f.endswith(".service"))
    if not units:
        bad(unit_dir, "no units")
    with tempfile.TemporaryDirectory() as tmp:
        copies = []
        for u in units:
            text = open(os.path.join(unit_dir, u)).read()
            for cmd in exec_start(text):
                argv = shlex.split(cmd)
                m = re.fullmatch(r"/usr/local/bin/(tunectl[a-z-]*)", argv[0])
                if not m:
                    bad(u, f"ExecStart runs {argv[0]}, expected /usr/local/bin/tunectl-…")
                    continue
                check_flags(f"{u} ExecStart", argv[1:], flags_of(m.group(1)))
            if "KillMode=mixed" not in text:
                bad(u, "KillMode=mixed missing (SIGTERM to the main process, then the rest)")
            copy = os.path.join(tmp, u)
            with open(copy, "w") as f:
                f.write(text.replace("/usr/local/bin/", bin_dir.rstrip("/") + "/"))
            copies.append(copy)
        r = subprocess.run(["systemd-analyze", "verify", *copies], capture_output=True, text=True,
                           timeout=120)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or out:
            bad("systemd-analyze verify", f"exit {r.returncode}:\n{out}")
    return units


# --- Kubernetes ------------------------------------------------------------------------------

DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|M|G|T)?")
KINDS = {"Namespace": "v1", "Secret": "v1", "Service": "v1", "Deployment": "apps/v1",
         "DaemonSet": "apps/v1"}
TOP = {"apiVersion", "kind", "metadata", "spec", "type", "stringData", "data"}
META = {"name", "namespace", "labels", "annotations"}
POD = {"containers", "initContainers", "volumes", "nodeSelector", "tolerations", "securityContext",
       "terminationGracePeriodSeconds", "serviceAccountName", "affinity"}
CONTAINER = {"name", "image", "args", "command", "env", "ports", "readinessProbe", "livenessProbe",
             "startupProbe", "resources", "volumeMounts", "securityContext", "workingDir"}
PROBE = {"httpGet", "tcpSocket", "exec", "initialDelaySeconds", "periodSeconds", "timeoutSeconds",
         "failureThreshold", "successThreshold"}
WORKLOAD_SPEC = {"Deployment": {"replicas", "selector", "template", "strategy"},
                 "DaemonSet": {"selector", "template", "updateStrategy"}}
SERVICE_SPEC = {"type", "selector", "ports", "clusterIP"}


def keys(where, obj, allowed):
    if not isinstance(obj, dict):
        bad(where, f"expected a mapping, got {type(obj).__name__}")
        return {}
    for k in obj:
        if k not in allowed:
            bad(where, f"unknown key {k!r} (allowed: {', '.join(sorted(allowed))})")
    return obj


def check_resources(where, res, gpu_required):
    keys(where, res, {"requests", "limits"})
    for part in ("requests", "limits"):
        for k, v in (res.get(part) or {}).items():
            if not QUANTITY.fullmatch(str(v)):
                bad(f"{where}.{part}.{k}", f"{v!r} is not a quantity")
    if gpu_required:
        lim = (res.get("limits") or {}).get("nvidia.com/gpu")
        req = (res.get("requests") or {}).get("nvidia.com/gpu", lim)
        if lim is None or int(lim) < 1:
            bad(where, "limits.nvidia.com/gpu missing: the agent must be given GPUs")
        elif req != lim:
            bad(where, f"nvidia.com/gpu request {req} != limit {lim} (extended resources)")


def check_container(where, c, secrets, flags_of, gpu):
    keys(where, c, CONTAINER)
    for k in ("name", "image"):
        if not isinstance(c.get(k), str) or not c.get(k):
            bad(where, f"{k} missing")
    env_names = set()
    for e in c.get("env", []):
        keys(f"{where}.env", e, {"name", "value", "valueFrom"})
        env_names.add(e.get("name"))
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if ref is not None and ref.get("key") not in secrets.get(ref.get("name"), set()):
            bad(f"{where}.env.{e.get('name')}",
                f"secretKeyRef {ref.get('name')}/{ref.get('key')} is not in these manifests")
    ports = {}
    for p in c.get("ports", []):
        keys(f"{where}.ports", p, {"name", "containerPort", "protocol"})
        if len(p.get("name", "")) > 15:
            bad(f"{where}.ports", f"port name {p['name']!r} longer than 15")
        ports[p.get("name")] = p.get("containerPort")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        if probe not in c:
            continue
        pr = keys(f"{where}.{probe}", c[probe], PROBE)
        for how in ("httpGet", "tcpSocket"):
            port = (pr.get(how) or {}).get("port")
            if port is not None and port not in ports and port not in ports.values():
                bad(f"{where}.{probe}", f"port {port!r} is not a port of the container")
        path = (pr.get("httpGet") or {}).get("path")
        if path is not None and path not in ("/healthz", "/metrics"):
            bad(f"{where}.{probe}", f"path {path} is not an endpoint of tunectl-server")
    for a in c.get("args", []):
        for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a):
            if var not in env_names:
                bad(f"{where}.args", f"$({var}) is not in the container's env")
    binary = "tunectl-agent" if "agent" in c.get("image", "") else "tunectl-server"
    check_flags(f"{where}.args", c.get("args", []), flags_of(binary))
    if "resources" in c:
        check_resources(f"{where}.resources", c["resources"], gpu)
    elif gpu:
        bad(where, "resources missing: the agent must be given GPUs")


def check_manifests(src, flags_of):
    kdir = os.path.join(src, "deploy/k8s")
    docs = []
    for f in sorted(os.listdir(kdir)):
        if f.endswith((".yaml", ".yml")):
            try:
                docs += [(f, d) for d in yaml.safe_load_all(open(os.path.join(kdir, f))) if d]
            except yaml.YAMLError as e:
                bad(f, f"not YAML: {e}")
    secrets, pods, namespaces = {}, [], {"default"}
    for f, d in docs:
        if not isinstance(d, dict):
            bad(f, "a document that is not a mapping")
            continue
        kind = d.get("kind")
        if kind not in KINDS:
            bad(f, f"kind {kind!r} is not one of {', '.join(KINDS)}")
            continue
        if d.get("apiVersion") != KINDS[kind]:
            bad(f, f"{kind} needs apiVersion {KINDS[kind]}, not {d.get('apiVersion')!r}")
        keys(f"{f} {kind}", d, TOP)
        meta = keys(f"{f} {kind}.metadata", d.get("metadata"), META)
        if not DNS1123.fullmatch(str(meta.get("name", ""))):
            bad(f"{f} {kind}", f"metadata.name {meta.get('name')!r} is not a DNS-1123 name")
        if kind == "Namespace":
            namespaces.add(meta.get("name"))
        if kind == "Secret":
            secrets[meta.get("name")] = set((d.get("stringData") or {}) | (d.get("data") or {}))
    for f, d in docs:
        if not isinstance(d, dict) or d.get("kind") not in KINDS:
            continue
        kind, meta = d["kind"], d.get("metadata") or {}
        where = f"{f} {kind}/{meta.get('name')}"
        if kind != "Namespace" and meta.get("namespace", "default") not in namespaces:
            bad(where, f"namespace {meta.get('namespace')!r} is not created by these manifests")
        if kind in WORKLOAD_SPEC:
            spec = keys(f"{where}.spec", d.get("spec"), WORKLOAD_SPEC[kind])
            tmpl = spec.get("template") or {}
            labels = (tmpl.get("metadata") or {}).get("labels") or {}
            sel = (spec.get("selector") or {}).get("matchLabels") or {}
            if not sel or any(labels.get(k) != v for k, v in sel.items()):
                bad(where, f"selector {sel} does not match the pod labels {labels}")
            pod = keys(f"{where}.pod", tmpl.get("spec"), POD)
            gpu = kind == "DaemonSet"
            if gpu and not pod.get("nodeSelector"):
                bad(where, "no nodeSelector: the agents must go to GPU nodes only")
            containers = pod.get("containers") or []
            if not containers:
                bad(where, "no containers")
            vols = {v.get("name") for v in pod.get("volumes", [])}
            for c in containers:
                check_container(f"{where}.{c.get('name')}", c, secrets, flags_of, gpu)
                for m in c.get("volumeMounts", []):
                    if m.get("name") not in vols:
                        bad(where, f"volumeMount {m.get('name')!r} has no volume")
            pods.append((labels, containers))
        if kind == "Service":
            spec = keys(f"{where}.spec", d.get("spec"), SERVICE_SPEC)
            sel = spec.get("selector") or {}
            match = [cs for labels, cs in pods if sel and all(labels.get(k) == v
                                                             for k, v in sel.items())]
            if not match:
                bad(where, f"selector {sel} matches no pod of these manifests")
            names = {p.get("name") for cs in match for c in cs for p in c.get("ports", [])}
            nums = {p.get("containerPort") for cs in match for c in cs for p in c.get("ports", [])}
            for p in spec.get("ports", []):
                keys(f"{where}.ports", p, {"name", "port", "targetPort", "protocol"})
                t = p.get("targetPort", p.get("port"))
                if t not in names and t not in nums:
                    bad(where, f"targetPort {t!r} is no port of the selected pods")
    return docs


# --- compose ---------------------------------------------------------------------------------

SERVICE = {"image", "build", "command", "environment", "volumes", "ports", "depends_on",
           "healthcheck", "restart", "profiles", "stop_grace_period"}


def check_compose(src, flags_of):
    path = os.path.join(src, "deploy/compose.yaml")
    base = os.path.dirname(path)
    try:
        doc = yaml.safe_load(open(path))
    except yaml.YAMLError as e:
        bad(path, f"not YAML: {e}")
        return
    keys("compose", doc, {"name", "services", "volumes", "networks"})
    services = doc.get("services") or {}
    volumes = set(doc.get("volumes") or {})
    for name, s in services.items():
        where = f"compose services.{name}"
        keys(where, s, SERVICE)
        if "image" not in s and "build" not in s:
            bad(where, "neither image nor build")
        b = s.get("build")
        binary = None
        if b:
            keys(f"{where}.build", b, {"context", "dockerfile", "args"})
            ctx = os.path.normpath(os.path.join(base, b.get("context", ".")))
            df = os.path.join(ctx, b.get("dockerfile", "Dockerfile"))
            if not os.path.isfile(df):
                bad(where, f"build file {df} does not exist")
            else:
                m = re.search(r"COPY --from=build /build/(\S+)", open(df).read())
                binary = m.group(1) if m else None
        if binary and s.get("command"):
            if not isinstance(s["command"], list):
                bad(where, "command should be a list (exec form)")
            else:
                check_flags(f"{where}.command", s["command"], flags_of(binary))
        deps = s.get("depends_on") or {}
        for dep, cond in (deps.items() if isinstance(deps, dict) else [(d, {}) for d in deps]):
            if dep not in services:
                bad(where, f"depends_on {dep!r}: no such service")
            c = (cond or {}).get("condition", "service_started")
            if c not in ("service_started", "service_healthy", "service_completed_successfully"):
                bad(where, f"depends_on {dep}: condition {c!r}")
            if c == "service_healthy" and "healthcheck" not in services.get(dep, {}):
                bad(where, f"depends_on {dep} being healthy, but {dep} has no healthcheck")
        hc = s.get("healthcheck")
        if hc is not None:
            keys(f"{where}.healthcheck", hc, {"test", "interval", "timeout", "retries",
                                               "start_period"})
            t = hc.get("test")
            if not (isinstance(t, list) and t and t[0] in ("CMD", "CMD-SHELL")):
                bad(where, f"healthcheck.test {t!r} is not [CMD, …]")
        for v in s.get("volumes", []):
            src_part = str(v).split(":")[0]
            if src_part.startswith((".", "/")):
                if not os.path.exists(os.path.normpath(os.path.join(base, src_part))):
                    bad(where, f"bind source {src_part} does not exist")
            elif src_part not in volumes:
                bad(where, f"volume {src_part!r} is not declared under volumes")
        for p in s.get("ports", []):
            if not re.fullmatch(r"(\d+\.\d+\.\d+\.\d+:)?\d+:\d+", str(p)):
                bad(where, f"port {p!r} is not [IP:]HOST:CONTAINER")


# --- Dockerfiles -----------------------------------------------------------------------------

BASE_IMAGE_PKGS = {"libc6", "libgcc-s1", "libstdc++6"}  # in debian:bookworm-slim


def bootstrap_pkgs(src):
    text = open(os.path.join(src, "scripts/bootstrap")).read()
    m = re.search(r"PKGS=\((.*?)\)", text, re.S)
    return set(re.sub(r"#[^\n]*", "", m.group(1)).split())


def apt_installs(stage_text):
    pkgs = []
    for m in re.finditer(r"apt-get install ([^&]*)", stage_text):
        words = m.group(1).replace("\\\n", " ").split()
        pkgs += [w for w in words if not w.startswith(("-", "$"))]
    return set(pkgs)


def needed_packages(binary):
    """Debian packages owning the shared libraries the binary names itself (readelf NEEDED)."""
    d = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
    needed = set(re.findall(r"\(NEEDED\).*\[(.+)\]", d))
    paths = {}
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True).stdout.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m:
            paths[m.group(1)] = m.group(2)
    pkgs = set()
    for lib in needed:
        p = os.path.realpath(paths.get(lib, lib))
        for cand in (p, "/usr" + p if not p.startswith("/usr") else p[4:]):
            r = subprocess.run(["dpkg", "-S", cand], capture_output=True, text=True)
            if r.returncode == 0:
                pkgs.add(r.stdout.split(":")[0])
                break
        else:
            bad(binary, f"no Debian package owns {lib} ({p})")
    return pkgs


def check_dockerfiles(src, bin_dir, flags_of):
    ddir = os.path.join(src, "deploy/docker")
    boot = bootstrap_pkgs(src)
    seen = set()
    for f in sorted(os.listdir(ddir)):
        if not f.startswith("Dockerfile."):
            continue
        text = open(os.path.join(ddir, f)).read()
        stages = re.split(r"^FROM ", text, flags=re.M)[1:]
        if len(stages) != 2:
            bad(f, f"{len(stages)} stages; expected a build stage and a runtime stage")
            continue
        build, runtime = stages
        if not build.startswith("debian:bookworm AS build"):
            bad(f, "the build stage is not FROM debian:bookworm AS build")
        for p in sorted(apt_installs(build) - boot):
            bad(f, f"build stage installs {p}, which scripts/bootstrap does not")
        m = re.search(r"scripts/build (\S+)", build)
        target = m.group(1) if m else None
        if not target or f"COPY --from=build /build/{target} " not in runtime:
            bad(f, f"the runtime stage does not copy the binary scripts/build made ({target})")
            continue
        seen.add(target)
        binary = os.path.join(bin_dir, target)
        missing = needed_packages(binary) - apt_installs(runtime) - BASE_IMAGE_PKGS
        for p in sorted(missing):
            bad(f, f"runtime stage lacks {p}, which {target} links")
        cmd = re.search(r"^CMD (\[.*\])", runtime, re.M)
        if cmd:
            check_flags(f"{f} CMD", yaml.safe_load(cmd.group(1)), flags_of(target))
    for b in ("tunectl-server", "tunectl-agent", "tunectl"):
        if b not in seen:
            bad(ddir, f"no container build file builds {b}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--source-dir",
                    default=os.path.normpath(os.path.join(os.path.dirname(__file__), "../..")))
    args = ap.parse_args()
    cache = {}

    def flags_of(name):
        if name not in cache:
            cache[name] = help_flags(os.path.join(args.bin_dir, name))
        return cache[name]

    units = check_units(args.source_dir, args.bin_dir, flags_of)
    docs = check_manifests(args.source_dir, flags_of)
    check_compose(args.source_dir, flags_of)
    check_dockerfiles(args.source_dir, args.bin_dir, flags_of)
    if problems:
        print(f"deploy/: {len(problems)} problem(s)")
        for p in problems:
            print("  " + p)
        return 1
    print(f"deploy/: ok — systemd-analyze verify on {', '.join(units)}; {len(docs)} Kubernetes "
          "objects (structure only: kubectl cannot validate without a server); compose file; "
          "3 Dockerfiles; every flag known to its binary")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""`rootspan providers` (DESIGN 4, 7): the JSON report's shape and exit statuses.

usage: providers_cli_test.py ROOTSPAN_EXE TEST_PROVIDER_DIR
"""
import json
import os
import subprocess
import sys
import tempfile


def provider(directory, name):
    return os.path.join(directory, "librootspan-tp-%s.so" % name)


def entry(name, kind, library, minor=1):
    return {"name": name, "kind": kind, "library": library, "abi": {"major": 1, "minor": minor}}


def write(path, document):
    with open(path, "w") as f:
        f.write(document if isinstance(document, str) else json.dumps(document))
    return path


def run(exe, *args):
    env = dict(os.environ)
    env.pop("ROOTSPAN_MANIFEST", None)
    return subprocess.run([exe, "providers", *args], capture_output=True, text=True, env=env, timeout=60)


failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def main():
    exe, providers_dir = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="rootspan-cli-") as tmp:
        good = write(os.path.join(tmp, "good.json"), {
            "file_format_version": "1.0.0",
            "providers": [entry("simdev", "simulated", provider(providers_dir, "simdev"))]})
        mixed = write(os.path.join(tmp, "mixed.json"), {
            "file_format_version": "1.0.0",
            "providers": [entry("abi-major", "test", provider(providers_dir, "abi-major")),
                          entry("needs-absent", "test", provider(providers_dir, "needs-absent"))]})

        # Manifests in the order given; the static host, then each entry.
        result = run(exe, "--manifest", good, "--manifest", mixed, "--json")
        check(result.returncode == 0, "exit status 0, got %d: %s" % (result.returncode, result.stderr))
        report = json.loads(result.stdout)
        check(sorted(report) == ["manifests", "providers"], "top-level keys: %s" % sorted(report))
        check(report["manifests"] == [good, mixed], "manifests in order: %s" % report["manifests"])
        by_name = {p["name"]: p for p in report["providers"]}
        check(sorted(by_name) == ["abi-major", "host", "needs-absent", "simdev"], "providers: %s" % sorted(by_name))
        keys = ["abi", "code", "devices", "kind", "library", "manifest", "name", "origin", "policy", "priority",
                "reason", "status"]
        for p in report["providers"]:
            check(sorted(p) == keys, "keys of %s: %s" % (p["name"], sorted(p)))

        host = by_name["host"]
        check(host["status"] == "loaded" and host["origin"] == "static", "static host: %s" % host)
        check(host["library"] is None and host["manifest"] is None, "static host has no library: %s" % host)
        check(host["policy"] is None and host["reason"] is None, "loaded host has no reason: %s" % host)

        simdev = by_name["simdev"]
        check(simdev["status"] == "loaded", "simdev loaded: %s" % simdev)
        check(simdev["kind"] == "simulated" and simdev["origin"] == "manifest", "simdev kind/origin: %s" % simdev)
        check(simdev["abi"] == {"major": 1, "minor": 1}, "simdev abi: %s" % simdev["abi"])
        check(simdev["library"] == provider(providers_dir, "simdev") and simdev["manifest"] == good,
              "simdev library/manifest: %s" % simdev)
        check(len(simdev["devices"]) == 1, "simdev has one device: %s" % simdev["devices"])
        if simdev["devices"]:
            device = simdev["devices"][0]
            check(device["ordinal"] == 0 and device["name"] == "test device 0" and device["memory_bytes"] == 1 << 30,
                  "simdev device: %s" % device)
            check(device["pci_bus_id"] is None, "no PCI bus id: %s" % device)

        bad = by_name["abi-major"]
        check(bad["status"] == "skipped" and bad["policy"] == "L6", "abi-major skipped by L6: %s" % bad)
        check("ABI major differs (expected 1, actual 2" in (bad["reason"] or ""), "abi-major reason: %s" % bad)
        check(bad["code"] == "AbiMismatch", "abi-major code: %s" % bad)
        check(host["code"] is None, "a loaded provider has no error code: %s" % host)
        check(bad["devices"] == [] and bad["manifest"] == mixed, "abi-major devices/manifest: %s" % bad)
        absent = by_name["needs-absent"]
        check(absent["status"] == "skipped" and absent["policy"] == "L5", "needs-absent skipped by L5: %s" % absent)
        check("librootspan-tp-absent.so" in (absent["reason"] or ""), "needs-absent names the library: %s" % absent)

        # --no-static leaves the compiled-in host out.
        result = run(exe, "--manifest", good, "--no-static", "--json")
        check(result.returncode == 0, "--no-static exit 0: %s" % result.stderr)
        names = [p["name"] for p in json.loads(result.stdout)["providers"]]
        check(names == ["simdev"], "--no-static providers: %s" % names)

        # The text form names the policy and the reason of a skip.
        result = run(exe, "--manifest", mixed)
        check(result.returncode == 0, "text exit 0: %s" % result.stderr)
        check("L6: " in result.stdout and "skipped" in result.stdout, "text report: %s" % result.stdout)

        # A malformed manifest given with --manifest: exit status 3, the error as JSON.
        malformed = write(os.path.join(tmp, "malformed.json"), '{"file_format_version": "1.0.0", "providers": [')
        result = run(exe, "--manifest", good, "--manifest", malformed, "--json")
        check(result.returncode == 3, "malformed manifest exits 3, got %d" % result.returncode)
        check(result.stdout == "", "nothing on stdout: %r" % result.stdout)
        try:
            error = json.loads(result.stderr)["error"]
            check(error["code"] == "InvalidManifest" and error["policy"] == "L1", "malformed error: %s" % error)
            check(malformed in error["message"], "the error names the file: %s" % error)
        except (ValueError, KeyError) as e:
            check(False, "stderr is a JSON error (%s): %r" % (e, result.stderr))
        unknown_major = write(os.path.join(tmp, "major.json"), {"file_format_version": "2.0.0", "providers": []})
        result = run(exe, "--manifest", unknown_major)
        check(result.returncode == 3, "unknown format major exits 3, got %d" % result.returncode)
        check("L1" in result.stderr, "text error names L1: %r" % result.stderr)

    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("rootspan providers: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

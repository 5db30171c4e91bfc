#!/usr/bin/python3
"""`rootspan providers` (docs/loader-policies.md): the JSON report's shape and exit statuses.

usage: providers_cli_test.py ROOTSPAN_EXE TEST_PROVIDER_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import cli_schemas
from checks import check, failures


def provider(directory, name):
    return os.path.join(directory, "librootspan-tp-%s.so" % name)


def entry(name, kind, library, minor=1, priority=None):
    e = {"name": name, "kind": kind, "library": library, "abi": {"major": 1, "minor": minor}}
    if priority is not None:
        e["priority"] = priority
    return e


def write(path, document):
    with open(path, "w") as f:
        f.write(document if isinstance(document, str) else json.dumps(document))
    return path


def run(exe, *args, command="providers"):
    env = dict(os.environ)
    env.pop("ROOTSPAN_MANIFEST", None)
    result = subprocess.run([exe, command, *args], capture_output=True, text=True, env=env, timeout=60)
    # Every JSON output against its schema (config/schemas/).
    for problem in cli_schemas.check_output([command, *args], result.returncode, result.stdout, result.stderr):
        check(False, problem)
    return result


def write_safetensors(path):
    """One F32 tensor of 4 elements: enough for `rootspan load` to place."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header + bytes(range(16)))
    return path


def json_error(result):
    try:
        return json.loads(result.stderr)["error"]
    except (ValueError, KeyError):
        return None


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
        check(sorted(report) == ["format_version", "manifests", "providers"], "top-level keys: %s" % sorted(report))
        check(report["manifests"] == [good, mixed], "manifests in order: %s" % report["manifests"])
        by_name = {p["name"]: p for p in report["providers"]}
        check(sorted(by_name) == ["abi-major", "host", "needs-absent", "simdev"], "providers: %s" % sorted(by_name))
        keys = ["abi", "code", "devices", "kind", "library", "manifest", "name", "note", "origin", "policy",
                "priority", "reason", "status"]
        for p in report["providers"]:
            check(sorted(p) == keys, "keys of %s: %s" % (p["name"], sorted(p)))

        host = by_name["host"]
        check(host["status"] == "loaded" and host["origin"] == "static", "static host: %s" % host)
        check(host["library"] is None and host["manifest"] is None, "static host has no library: %s" % host)
        check(host["policy"] is None and host["reason"] is None, "loaded host has no reason: %s" % host)
        # The host's note names the kernel's transparent huge page mode, the
        # bracketed word of the file it comes from.
        try:
            with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
                mode = f.read().split("[")[1].split("]")[0]
        except (OSError, IndexError):
            mode = None
        if mode is None:
            check(host["note"] is None, "no huge page mode, no note: %s" % host)
        else:
            check(host["note"] is not None and host["note"].startswith("transparent huge pages: %s (" % mode),
                  "host note names the huge page mode %r: %s" % (mode, host["note"]))

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

        check_no_device(exe, providers_dir, tmp)
        check_provider_choice(exe, providers_dir, tmp)

    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("rootspan providers: all checks passed")
    return 0


def check_no_device(exe, providers_dir, tmp):
    """A provider that started without a device is "no device" with its reason, not "loaded"."""
    manifest = write(os.path.join(tmp, "no-device.json"), {
        "file_format_version": "1.0.0",
        "providers": [entry("no-device", "simulated", provider(providers_dir, "no-device"), priority=200)]})
    result = run(exe, "--manifest", manifest, "--json")
    check(result.returncode == 0, "no-device report exits 0: %s" % result.stderr)
    by_name = {p["name"]: p for p in json.loads(result.stdout)["providers"]}
    p = by_name.get("no-device", {})
    check(p.get("status") == "no device", "no-device status: %s" % p)
    check(p.get("reason") == "simulated: no device is attached", "no-device reason: %s" % p)
    check(p.get("devices") == [] and p.get("code") is None and p.get("policy") is None, "no-device fields: %s" % p)
    check(by_name.get("host", {}).get("status") == "loaded", "host still loaded: %s" % by_name.get("host"))
    result = run(exe, "--manifest", manifest)
    line = [l for l in result.stdout.splitlines() if l.startswith("no-device")]
    check(len(line) == 1 and "no device" in line[0] and "simulated: no device is attached" in line[0],
          "text report of no-device: %r" % result.stdout)
    # Its name is taken: a second provider of that name is refused (L6).
    twice = write(os.path.join(tmp, "no-device-twice.json"), {
        "file_format_version": "1.0.0",
        "providers": [entry("no-device", "simulated", provider(providers_dir, "no-device")),
                      entry("no-device", "simulated", provider(providers_dir, "no-device"))]})
    reports = json.loads(run(exe, "--manifest", twice, "--json").stdout)["providers"]
    states = [(p["status"], p["policy"]) for p in reports if p["name"] == "no-device"]
    check(states == [("no device", None), ("skipped", "L6")], "a no-device provider takes its name: %s" % states)


def check_provider_choice(exe, providers_dir, tmp):
    """`rootspan load --provider auto|NAME --device N`: the choice rule through the CLI, and exit 3/4."""
    checkpoint = write_safetensors(os.path.join(tmp, "tiny.safetensors"))
    ranked = write(os.path.join(tmp, "ranked.json"), {
        "file_format_version": "1.0.0",
        "providers": [entry("no-device", "simulated", provider(providers_dir, "no-device"), priority=200),
                      entry("simdev", "simulated", provider(providers_dir, "simdev"), priority=100),
                      entry("init-fails", "test", provider(providers_dir, "init-fails"), priority=300)]})

    def load(*args):
        return run(exe, checkpoint, *args, command="load")

    # Highest priority with a device; the others' reasons on stderr.
    result = load("--manifest", ranked)
    check(result.returncode == 0, "auto load exits 0: %s" % result.stderr)
    check('rootspan: auto: chose "simdev" (priority 100, 1 device); passed over "host": lower priority 0; '
          '"no-device": no device (simulated: no device is attached); "init-fails": failed (' in result.stderr,
          "auto explains its choice: %r" % result.stderr)
    check("into provider simdev" in result.stdout, "loaded into simdev: %r" % result.stdout)
    result = load("--manifest", ranked, "--json")
    document = json.loads(result.stdout) if result.returncode == 0 else {}
    check(document.get("provider") == "simdev" and document.get("provider_choice", "").startswith('chose "simdev"'),
          "auto --json: %s" % document)

    # A tie goes to the first listed: the static host comes before the manifest's simdev.
    tie = write(os.path.join(tmp, "tie.json"), {
        "file_format_version": "1.0.0",
        "providers": [entry("simdev", "simulated", provider(providers_dir, "simdev"), priority=0)]})
    result = load("--manifest", tie)
    check(result.returncode == 0 and 'chose "host" (priority 0, 1 device); passed over "simdev": same priority 0, '
          'listed after "host"' in result.stderr, "a tie goes to the first listed: %r" % result.stderr)

    # No provider with a device: the system has nothing to offer (exit 4), with every reason.
    none = write(os.path.join(tmp, "none.json"), {
        "file_format_version": "1.0.0",
        "providers": [entry("no-device", "simulated", provider(providers_dir, "no-device"), priority=200)]})
    result = load("--manifest", none, "--no-static", "--json")
    error = json_error(result) or {}
    check(result.returncode == 4 and error.get("code") == "NoProvider", "auto without a device exits 4: %s" % error)
    check('auto: no provider has a device; the providers are: "no-device": no device (simulated: no device is '
          'attached)' in error.get("message", ""), "auto without a device lists why: %s" % error)

    # A name that does not exist: exit 3, listing the providers with their states and device counts.
    result = load("--manifest", ranked, "--provider", "nope", "--json")
    error = json_error(result) or {}
    check(result.returncode == 3 and error.get("code") == "NotFound", "--provider nope exits 3: %s" % error)
    for fragment in ['no provider is named "nope"', '"host": loaded, priority 0, 1 device',
                     '"simdev": loaded, priority 100, 1 device', '"no-device": no device (simulated: no device',
                     '"init-fails": failed (']:
        check(fragment in error.get("message", ""), "--provider nope lists %r: %s" % (fragment, error))
    # An ordinal that does not exist: exit 3, naming the ordinals that do.
    result = load("--manifest", ranked, "--provider", "simdev", "--device", "7", "--json")
    error = json_error(result) or {}
    check(result.returncode == 3 and error.get("code") == "NotFound" and
          'device 7 does not exist: provider "simdev" has 1 device, ordinals 0' in error.get("message", ""),
          "--device 7 exits 3: %s" % error)
    result = load("--manifest", ranked, "--provider", "no-device", "--json")
    error = json_error(result) or {}
    check(result.returncode == 3 and 'provider "no-device" has no device (simulated: no device is attached)' in
          error.get("message", ""), "a no-device provider has no ordinal 0: %s" % error)
    # A provider that failed stays a failure: exit 4.
    result = load("--manifest", ranked, "--provider", "init-fails", "--json")
    error = json_error(result) or {}
    check(result.returncode == 4 and 'provider "init-fails" was not started: failed (' in error.get("message", ""),
          "a failed provider exits 4: %s" % error)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Terminal escapes in files never reach the terminal raw.

A crafted checkpoint (tensor names, metadata) and a crafted manifest (its
file name, a library path) carry ESC sequences (clear screen, cursor home),
OSC 52 (write the clipboard), C1 controls (raw and UTF-8 encoded), a
bidirectional override and a NUL. `rootspan inspect` and `rootspan providers`
must show each of them escaped, in text and in JSON output, and in errors.

usage: terminal_escape_test.py ROOTSPAN_EXE GOOD_PLUGIN
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

from checks import check, failures

CLEAR = "\x1b[2J\x1b[H"
OSC52 = "\x1b]52;c;ZXZpbA==\x07"
C1_CSI = "\u009b31m"
RLO = "\u202e"

# Bytes that must never appear in what rootspan prints.
FORBIDDEN = [b"\x1b", b"\x07", b"\x00", b"\xc2\x9b", b"\x9b", RLO.encode()]

def run(exe, *args):
    env = dict(os.environ)
    env.pop("ROOTSPAN_MANIFEST", None)
    return subprocess.run([exe, *args], capture_output=True, env=env, timeout=60)


def check_clean(output, what):
    for raw in FORBIDDEN:
        check(raw not in output, "%s holds the raw bytes %r: %r" % (what, raw, output[:400]))


# A NUL in a name is refused at parse (C would cut the name there); the
# other control characters are kept and shown escaped.
NAME = "evil" + CLEAR + "verified\x07tail" + RLO + "gnp.exe"


def write_checkpoint(path, name=NAME):
    header = {
        "__metadata__": {"clipboard": OSC52, "c1": C1_CSI},
        name: {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
    }
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"\x00\x00\x80\x3f")


def main():
    exe, good_plugin = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="rootspan-escape-") as tmp:
        checkpoint = os.path.join(tmp, "model.safetensors")
        write_checkpoint(checkpoint)

        result = run(exe, "inspect", checkpoint)
        check(result.returncode == 0, "inspect exit status 0, got %d: %r" % (result.returncode, result.stderr))
        check_clean(result.stdout, "inspect output")
        out = result.stdout.decode("utf-8", "replace")
        check("evil\\x1b[2J\\x1b[Hverified\\x07tail\\u202egnp.exe" in out, "tensor name shown escaped: %r" % out)
        check("metadata clipboard = \\x1b]52;c;ZXZpbA==\\x07" in out, "OSC 52 metadata shown escaped: %r" % out)
        check("metadata c1 = \\u009b31m" in out, "C1 metadata shown escaped: %r" % out)

        result = run(exe, "inspect", "--json", checkpoint)
        check(result.returncode == 0, "inspect --json exit status 0")
        check_clean(result.stdout, "inspect --json output")
        names = [t["name"] for t in json.loads(result.stdout)["tensors"]]
        check(names == [NAME], "JSON keeps the name exactly: %r" % names)

        # A name holding a NUL is refused, and the error shows it escaped.
        nul = os.path.join(tmp, "nul.safetensors")
        write_checkpoint(nul, "evil" + CLEAR + "verified\x00tail")
        result = run(exe, "inspect", nul)
        check(result.returncode == 3, "inspect of a NUL name exits 3, got %d" % result.returncode)
        check_clean(result.stderr, "NUL name error")
        check(b"holds a NUL byte" in result.stderr, "the error says why: %r" % result.stderr)

        # An error naming a crafted path.
        missing = os.path.join(tmp, "gone" + CLEAR + ".safetensors")
        result = run(exe, "inspect", missing)
        check(result.returncode != 0, "inspect of a missing file fails")
        check_clean(result.stderr, "inspect error")
        check(b"gone\\x1b[2j\\x1b[h.safetensors" in result.stderr.lower(),
              "error shows the path escaped: %r" % result.stderr)

        # A manifest with a crafted file name and a crafted library path.
        manifest = os.path.join(tmp, "m" + CLEAR + ".json")
        library = os.path.join(tmp, "lib" + OSC52 + RLO + "\u0085.so")
        with open(manifest, "w") as f:
            json.dump({"file_format_version": "1.0.0",
                       "providers": [{"name": "good", "kind": "test", "library": good_plugin,
                                      "abi": {"major": 1, "minor": 1}},
                                     {"name": "crafted", "kind": "test", "library": library,
                                      "abi": {"major": 1, "minor": 1}}]}, f)
        result = run(exe, "providers", "--manifest", manifest)
        check(result.returncode == 0, "providers exit status 0, got %d: %r" % (result.returncode, result.stderr))
        check_clean(result.stdout, "providers output")
        out = result.stdout.decode("utf-8", "replace")
        check("m\\x1b[2J\\x1b[H.json" in out, "manifest path shown escaped: %r" % out)
        check("lib\\x1b]52;c;ZXZpbA==\\x07\\u202e\\u0085.so" in out, "library path shown escaped: %r" % out)

        result = run(exe, "providers", "--json", "--manifest", manifest)
        check(result.returncode == 0, "providers --json exit status 0")
        check_clean(result.stdout, "providers --json output")
        check(json.loads(result.stdout)["manifests"] == [manifest], "JSON keeps the manifest path exactly")

    if failures:
        print("%d failure(s)" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("terminal escapes: all shown escaped")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Verified loads through the program: the example checkpoint placed in a
Hugging Face cache built here (shards in blobs/ named by their SHA-256, the
index by a git object id), `load --check-digests` in text and JSON, `hash`
and `load --digests FILE` (whole files, and per-tensor for one rank of two),
and the refusals: a flipped byte, a manifest naming a file that is not there,
a manifest that is not JSON, nothing to check against, `hash --world`
without --per-tensor; `hash -o` over a planted link replaces the link and
leaves the file it points at alone. A per-tensor manifest (format_version 2)
binds each component's dtype and shape and each file's size and header: a
file whose header was rewritten (a dtype, a shape, the metadata, a dropped
tensor) or that was cut shorter is refused naming what changed, and a
format_version 1 manifest with per-component digests is refused (issue 35
item 4).

usage: digests_cli_test.py ROOTSPAN_EXE EXAMPLE_CHECKPOINT_FOLDER
"""
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile

import cli_test as c

COMMIT = "e" * 40


def make_cache(example, root):
    repo = os.path.join(root, "models--org--example")
    snapshot = os.path.join(repo, "snapshots", COMMIT)
    os.makedirs(os.path.join(repo, "blobs"))
    os.makedirs(snapshot)
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(COMMIT)
    blobs = {}
    for name in sorted(os.listdir(example)):
        if not name.startswith("model"):
            continue
        with open(os.path.join(example, name), "rb") as f:
            data = f.read()
        if name.endswith(".json"):
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        else:
            blob = hashlib.sha256(data).hexdigest()
        shutil.copyfile(os.path.join(example, name), os.path.join(repo, "blobs", blob))
        os.symlink(os.path.join("..", "..", "blobs", blob), os.path.join(snapshot, name))
        blobs[name] = os.path.join(repo, "blobs", blob)
    return repo, blobs


def test_cache(repo):
    r = c.run("load", repo, "--provider", "host", "--check-digests")
    c.check(r.returncode == 0, "load --check-digests: exit 0: %s" % r.stderr)
    c.check("digests: 2 files" in r.stdout and "match their published SHA-256 (from the cache blob name)" in r.stdout,
            "the text says what was checked: %r" % r.stdout)
    c.check("not verifiable: model.safetensors.index.json" in r.stdout, "and what could not be: %r" % r.stdout)
    r = c.run("load", repo, "--provider", "host", "--check-digests", "--json")
    if c.check(r.returncode == 0, "load --check-digests --json: %s" % r.stderr):
        digests = json.loads(r.stdout)["digests"]
        c.check([d["name"] for d in digests["verified"]] ==
                ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"], "verified: %r" % digests)
    r = c.run("load", repo, "--provider", "host", "--json")
    c.check(r.returncode == 0 and "digests" not in json.loads(r.stdout), "no digests key without the check")


def test_manifests(repo, work):
    manifest = os.path.join(work, "digests.json")
    r = c.run("hash", repo, "-o", manifest)
    c.check(r.returncode == 0 and "wrote" in r.stdout and "3 files" in r.stdout, "hash -o: %r %r" % (r.stdout, r.stderr))
    r = c.run("hash", repo, "--json")
    c.check(r.returncode == 0 and len(json.loads(r.stdout)["files"]) == 3, "hash --json prints the manifest")
    r = c.run("load", repo, "--provider", "host", "--digests", manifest, "--strategy", "read")
    c.check(r.returncode == 0 and "from the digest manifest" in r.stdout, "load --digests: %r %r" % (r.stdout, r.stderr))
    per_rank = os.path.join(work, "ranks.json")
    split = ["--world", "2", "--split", "*embed*=0"]
    r = c.run("hash", repo, "--per-tensor", *split, "-o", per_rank)
    c.check(r.returncode == 0 and "each of 2 rank(s)" in r.stdout, "hash --per-tensor --world 2: %r" % r.stdout)
    r = c.run("load", repo, "--provider", "host", "--digests", per_rank, "--rank", "1", *split, "--json")
    if c.check(r.returncode == 0, "load rank 1 --digests: %s" % r.stderr):
        doc = json.loads(r.stdout)
        components = [d for d in doc["digests"]["verified"] if d["kind"] == "component"]
        c.check(sum(d["bytes"] for d in components) == doc["bytes_read"],
                "the components hashed are exactly what rank 1 read")
    with open(manifest) as f:
        extra = json.load(f)
    extra["files"]["model-00003-of-00003.safetensors"] = extra["files"]["model-00001-of-00002.safetensors"]
    extra_path = os.path.join(work, "extra.json")
    with open(extra_path, "w") as f:
        json.dump(extra, f)
    c.expect_error("a manifest naming a missing file", ["load", repo, "--provider", "host", "--digests", extra_path],
                   3, "DigestMismatch", ['names file "model-00003-of-00003.safetensors"'], "check_digests")
    not_json = os.path.join(work, "not.json")
    with open(not_json, "w") as f:
        f.write('{"format_version": 2,')
    c.expect_error("a manifest that is not JSON", ["load", repo, "--provider", "host", "--digests", not_json],
                   3, "InvalidArgument", ["not.json", "not valid JSON"], "read_digests")
    c.expect_usage("hash --world without --per-tensor", ["hash", repo, "--world", "2"])


def test_output_link(repo, work):
    """hash -o FILE where FILE is a link planted by someone else: the link is replaced by the manifest, and the
    file it pointed at (root's, say) is left as it was (issue 35 item 10)."""
    protected = os.path.join(work, "protected.txt")
    with open(protected, "w") as f:
        f.write("not yours to overwrite\n")
    os.chmod(protected, 0o640)
    planted = os.path.join(work, "planted.json")
    os.symlink(protected, planted)
    r = c.run("hash", repo, "-o", planted)
    c.check(r.returncode == 0, "hash -o over a link: exit 0: %r" % r.stderr)
    with open(protected) as f:
        c.check(f.read() == "not yours to overwrite\n", "the file the link pointed at is unchanged")
    c.check(os.stat(protected).st_mode & 0o777 == 0o640, "and so is its mode")
    c.check(not os.path.islink(planted), "the link was replaced by a file")
    with open(planted) as f:
        c.check(len(json.load(f)["files"]) == 3, "which holds the manifest")
    mask = os.umask(0)
    os.umask(mask)
    c.check(os.stat(planted).st_mode & 0o777 == 0o666 & ~mask, "with the mode a plain creation gives: %o" %
            (os.stat(planted).st_mode & 0o777))
    c.check(not [n for n in os.listdir(work) if n.startswith(".planted.json.")], "no temporary file is left")
    missing = os.path.join(work, "no-such-folder", "out.json")
    c.expect_error("hash -o into a missing folder", ["hash", repo, "-o", missing], 3, "Io",
                   ["cannot write the digest manifest", "No such file or directory"], "hash_checkpoint")


def test_rewritten_headers(work):
    """One file, hashed --per-tensor, then rewritten so that the bytes of "w" stay as they were."""
    model = os.path.join(work, "rewritten")
    path = os.path.join(model, "model.safetensors")
    meta = {"format": "pt"}
    tensors = [("w", "F32", [4, 2]), ("x", "F32", [2])]
    c.write(path, c.good_file(tensors, meta, pad=False))
    published_size = os.path.getsize(path)
    manifest = os.path.join(work, "rewritten.json")
    r = c.run("hash", model, "--per-tensor", "-o", manifest)
    c.check(r.returncode == 0, "hash --per-tensor: %r" % r.stderr)
    with open(manifest) as f:
        doc = json.load(f)
    header_length = struct.unpack("<Q", open(path, "rb").read(8))[0]
    published_header = hashlib.sha256(open(path, "rb").read(8 + header_length)).hexdigest()
    c.check(doc["format_version"] == 2, "hash writes format_version 2: %r" % doc.get("format_version"))
    c.check(doc["files"]["model.safetensors"].get("header_sha256") == published_header,
            "with each file's header digest: %r" % doc["files"])
    c.check(doc["components"]["ranks"][0]["w"].get("dtype") == "F32" and
            doc["components"]["ranks"][0]["w"].get("shape") == [4, 2], "and each component's dtype and shape")
    load = ["load", model, "--provider", "host", "--digests", manifest]
    r = c.run(*load)
    c.check(r.returncode == 0, "the published file loads: %r" % r.stderr)

    def rewritten(what, tensors, fragments, metadata=meta, header_length=None, size=None):
        header, data_size = c.header_of(tensors, metadata)
        if header_length is not None:
            header += b" " * (header_length - len(header))
        c.write(path, c.raw_file(header, data_size))
        if size is not None:
            c.check(os.path.getsize(path) == size, "%s: the file is %d bytes" % (what, size))
        c.expect_error(what, load, 3, "DigestMismatch", fragments, "check_digests")

    rewritten("a dtype changed", [("w", "I32", [4, 2]), ("x", "F32", [2])],
              ['component "w" has element type I32, but the digest manifest published F32'])
    rewritten("a shape changed", [("w", "F32", [2, 4]), ("x", "F32", [2])],
              ['component "w" has shape [2, 4], but the digest manifest published [4, 2]'])
    rewritten("the metadata changed", tensors,
              ['file "model.safetensors" does not have the published header', published_header],
              metadata={"format": "np"})
    rewritten("a tensor dropped at the same size", [("w", "F32", [4, 2])],
              ['file "model.safetensors" does not have the published header', published_header],
              header_length=header_length + 8, size=published_size)
    shorter = 8 + len(c.header_of([("w", "F32", [4, 2])], meta)[0]) + 32
    rewritten("a shorter file", [("w", "F32", [4, 2])],
              ['file "model.safetensors" is %d bytes, but the digest manifest published %d' % (shorter, published_size)],
              size=shorter)
    doc["format_version"] = 1
    old = os.path.join(work, "v1.json")
    with open(old, "w") as f:
        json.dump(doc, f)
    c.expect_error("a format_version 1 manifest with per-component digests",
                   ["load", model, "--provider", "host", "--digests", old], 3, "InvalidArgument",
                   ["format_version is 1", "write the manifest again with `rootspan hash --per-tensor`"],
                   "read_digests")


def test_damage(repo, blobs, example):
    blob = blobs["model-00002-of-00002.safetensors"]
    with open(blob, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))
    c.expect_error("a flipped byte", ["load", repo, "--provider", "host", "--check-digests"], 3, "DigestMismatch",
                   ['file "model-00002-of-00002.safetensors" is not the published one',
                    "expected " + os.path.basename(blob)], "check_digests")
    c.expect_error("outside a cache", ["load", example, "--provider", "host", "--check-digests"], 3, "NotFound",
                   ["nothing to check the digests of"], "check_digests")


def main():
    c.EXE, example = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="rootspan-digests-cli-") as tmp:
        c.WORK = tmp
        repo, blobs = make_cache(example, tmp)
        test_cache(repo)
        test_manifests(repo, tmp)
        test_output_link(repo, tmp)
        test_rewritten_headers(tmp)
        test_damage(repo, blobs, example)
    return c.report()


if __name__ == "__main__":
    sys.exit(main())

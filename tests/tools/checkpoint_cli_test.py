#!/usr/bin/python3
"""`rootspan inspect` and `rootspan load` on checkpoints where users keep
them (docs/weight-schema.md): Hugging Face cache repositories (refs/main and
--revision), the index file itself, links into and out of the trusted
folders, FIFOs; and subsets: `load --tensors PATTERN`, `inspect --schema`.
Every refusal exits 3 with a JSON error naming what was wrong.

usage: checkpoint_cli_test.py ROOTSPAN_EXE EXAMPLE_CHECKPOINT_FOLDER
"""
import json
import os
import sys
import tempfile

import cli_test as c

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
T1 = [("model.embed", "F32", [4, 2]), ("model.layers.0.up", "F32", [8])]
T2 = [("model.layers.1.up", "F32", [8]), ("lm_head", "F32", [2])]


def cache_repository(name):
    """models--org--name as a download leaves it: blobs by hash, refs/main,
    and a snapshot whose files are relative links into ../../blobs/."""
    repo = os.path.join(c.WORK, name)
    blobs = os.path.join(repo, "blobs")
    c.write(os.path.join(blobs, "aaa1"), c.good_file(T1, seed=3))
    c.write(os.path.join(blobs, "bbb2"), c.good_file(T2, seed=4))
    weight_map = {t[0]: "model-00001-of-00002.safetensors" for t in T1}
    weight_map.update({t[0]: "model-00002-of-00002.safetensors" for t in T2})
    c.write(os.path.join(blobs, "ccc3"), json.dumps({"metadata": {}, "weight_map": weight_map}))
    c.write(os.path.join(repo, "refs", "main"), COMMIT + "\n")
    snapshot = os.path.join(repo, "snapshots", COMMIT)
    os.makedirs(snapshot)
    for file, blob in [("model.safetensors.index.json", "ccc3"), ("model-00001-of-00002.safetensors", "aaa1"),
                       ("model-00002-of-00002.safetensors", "bbb2")]:
        os.symlink(os.path.join("..", "..", "blobs", blob), os.path.join(snapshot, file))
    return repo, snapshot


def inspect_ok(what, *args):
    r = c.run("inspect", *args, "--json")
    if not c.check(r.returncode == 0, "%s: exit 0, got %d: %s" % (what, r.returncode, r.stderr)):
        return {}
    return json.loads(r.stdout)


def load_ok(what, *args):
    r = c.run("load", *args, "--json", "--provider", "host")
    if not c.check(r.returncode == 0, "%s: exit 0, got %d: %s" % (what, r.returncode, r.stderr)):
        return {}
    return json.loads(r.stdout)


def relink(path, target):
    os.remove(path)
    os.symlink(target, path)


def test_cache_repository():
    repo, snapshot = cache_repository("models--org--name")
    real_snapshot = os.path.realpath(snapshot)
    real_blobs = os.path.realpath(os.path.join(repo, "blobs"))

    # The snapshot folder, the repository (refs/main), and the index itself.
    for what, path in [("snapshot", snapshot), ("repository", repo),
                       ("index file", os.path.join(snapshot, "model.safetensors.index.json"))]:
        doc = inspect_ok("inspect a cache " + what, path)
        c.check(len(doc.get("tensors", [])) == 4, "inspect a cache %s: 4 tensors" % what)
        c.check(doc.get("folder") == snapshot, "inspect a cache %s: folder is the snapshot: %s" % (what,
                                                                                                  doc.get("folder")))
        doc = load_ok("load a cache " + what, path, "--verify")
        c.check(len(doc.get("components", [])) == 4, "load a cache %s: 4 components" % what)

    # --revision: a branch in refs/, or a commit; also as --revision=REV.
    c.write(os.path.join(repo, "blobs", "ddd4"), c.good_file([("only", "F32", [2])], seed=9))
    os.makedirs(os.path.join(repo, "snapshots", OTHER))
    os.symlink("../../blobs/ddd4", os.path.join(repo, "snapshots", OTHER, "model.safetensors"))
    c.write(os.path.join(repo, "refs", "v2"), OTHER)
    for revision in (["--revision", OTHER], ["--revision=v2"]):
        doc = inspect_ok("inspect %s" % revision, repo, *revision)
        c.check([t["name"] for t in doc.get("tensors", [])] == ["only"], "inspect %s: the other snapshot" % revision)
        doc = load_ok("load %s" % revision, repo, *revision)
        c.check([x["id"] for x in doc.get("components", [])] == ["only"], "load %s: the other snapshot" % revision)

    listed = 'snapshots: "%s", "%s"' % (COMMIT, OTHER)
    for what, revision, fragment in [("dot-dot", "../x", "'..'"), ("slash", "refs/main", "contains '/'"),
                                     ("unknown", "v9", 'revision "v9" names no ref in refs/')]:
        c.expect_error("inspect --revision %s" % what, ["inspect", repo, "--revision", revision], 3,
                       "InvalidCheckpoint", [fragment, listed], "open_checkpoint")
        c.expect_error("load --revision %s" % what, ["load", repo, "--revision", revision, "--provider", "host"], 3,
                       "InvalidCheckpoint", [fragment, listed], "open_checkpoint")
    c.expect_error("--revision on a plain folder", ["inspect", snapshot, "--revision", "main"], 3,
                   "InvalidCheckpoint", ["applies only to a Hugging Face cache repository folder"])
    # refs/main naming a missing snapshot; no refs/main at all.
    c.write(os.path.join(repo, "refs", "main"), "deadbeef" * 5 + "\n")
    c.expect_error("refs/main names a missing snapshot", ["inspect", repo], 3, "InvalidCheckpoint",
                   ['refs/main names commit "%s"' % ("deadbeef" * 5), "no snapshot folder", listed])
    c.write(os.path.join(repo, "refs", "main"), "deadbeef\n")
    c.expect_error("refs/main holding no commit hash", ["inspect", repo], 3, "InvalidCheckpoint",
                   ["refs/main does not hold a commit hash", "not shown", listed])
    os.remove(os.path.join(repo, "refs", "main"))
    c.expect_error("no refs/main", ["load", repo, "--provider", "host"], 3, "InvalidCheckpoint",
                   ["without refs/main", "pass a revision", listed])
    c.write(os.path.join(repo, "refs", "main"), COMMIT)

    # Hostile links: into a sibling repository's blobs, to /etc/passwd, a
    # chain that ends outside, a loop, a folder.
    _, other_snapshot = cache_repository("models--other--repo")
    shard2 = os.path.join(snapshot, "model-00002-of-00002.safetensors")
    sibling = os.path.realpath(os.path.join(c.WORK, "models--other--repo", "blobs", "bbb2"))
    relink(shard2, "../../../models--other--repo/blobs/bbb2")
    for cmd in (["inspect", snapshot], ["load", snapshot, "--provider", "host"]):
        c.expect_error("%s: a link into a sibling repository" % cmd[0], cmd, 3, "InvalidCheckpoint",
                       ['file name "model-00002-of-00002.safetensors"', "leads out of the checkpoint's trusted folders",
                        '"%s", "%s"' % (real_snapshot, real_blobs), 'to "%s"' % sibling, "copy the file into",
                        "pass the folder that really holds"], "open_checkpoint")
    relink(shard2, "/etc/passwd")
    c.expect_error("a link to /etc/passwd", ["inspect", repo], 3, "InvalidCheckpoint",
                   ["leads out", 'to "%s"' % os.path.realpath("/etc/passwd")])
    outside = c.folder("outside-chain")
    c.write(os.path.join(outside, "secret"), c.good_file(T2))
    os.symlink(os.path.join(outside, "secret"), os.path.join(outside, "hop"))
    relink(shard2, os.path.join(outside, "hop"))
    c.expect_error("a chain of links that ends outside", ["inspect", repo], 3, "InvalidCheckpoint",
                   ["leads out", 'to "%s"' % os.path.realpath(os.path.join(outside, "secret"))])
    os.symlink("hop2.safetensors", os.path.join(snapshot, "hop1.safetensors"))
    os.symlink("model-00002-of-00002.safetensors", os.path.join(snapshot, "hop2.safetensors"))
    relink(shard2, "hop1.safetensors")
    c.expect_error("a loop of links", ["inspect", repo], 3, "InvalidCheckpoint", ["cannot be resolved"])
    os.makedirs(os.path.join(repo, "blobs", "folder"))
    relink(shard2, "../../blobs/folder")
    c.expect_error("a link to a folder", ["inspect", repo], 3, "InvalidCheckpoint",
                   ["not a regular file (it is a folder)"])
    # A chain inside the trusted folders is fine.
    relink(os.path.join(snapshot, "hop2.safetensors"), "../../blobs/bbb2")
    relink(shard2, "hop1.safetensors")
    doc = inspect_ok("a chain of links inside the trusted folders", repo)
    c.check(len(doc.get("tensors", [])) == 4, "a chain inside: 4 tensors")


def test_fifo_and_json_shards():
    d = c.folder("fifo")
    c.write(os.path.join(d, "s1.safetensors"), c.good_file(T1))
    weight_map = {t[0]: "s1.safetensors" for t in T1}
    weight_map.update({t[0]: "s2.safetensors" for t in T2})
    c.write(os.path.join(d, "model.safetensors.index.json"), json.dumps({"weight_map": weight_map}))
    os.mkfifo(os.path.join(d, "s2.safetensors"))
    # A FIFO with no writer would hang a blocking open; run() times out at
    # 120 s, so a hang fails the check instead of the whole suite.
    c.expect_error("a FIFO shard", ["inspect", d], 3, "InvalidCheckpoint",
                   ['"%s"' % os.path.join(d, "s2.safetensors"), "not a regular file (it is a FIFO)"])
    c.expect_error("a FIFO given as the checkpoint", ["load", os.path.join(d, "s2.safetensors"), "--provider", "host"],
                   3, "InvalidCheckpoint", ["not a regular file (it is a FIFO)"])

    # An index where a shard is expected.
    j = c.folder("index-as-shard")
    c.write(os.path.join(j, "s1.safetensors"), c.good_file(T1))
    weight_map = {t[0]: "s1.safetensors" for t in T1}
    weight_map["lm_head"] = "model.safetensors.index.json"
    c.write(os.path.join(j, "model.safetensors.index.json"), json.dumps({"weight_map": weight_map}, indent=2))
    c.expect_error("an index named as a shard", ["inspect", j], 3, "InvalidCheckpoint",
                   ["looks like a JSON file, not a safetensors file", "pass the index file itself"])
    odd = c.write(os.path.join(j, "weights.json"), json.dumps({"weight_map": {"a": "s1.safetensors"}}))
    c.expect_error("an index under another name", ["load", odd, "--provider", "host"], 3, "InvalidCheckpoint",
                   ["weights.json", "looks like a JSON file"])


def test_subsets(example):
    schema = os.path.join(example, "schema.json")
    doc = load_ok("load --tensors", example, "--tensors", "model.layers.*", "--tensors=model.norm.weight")
    ids = [x["id"] for x in doc.get("components", [])]
    c.check(ids and all(i.startswith("model.layers.") or i == "model.norm.weight" for i in ids) and
            "model.norm.weight" in ids and "model.embed_tokens.weight" not in ids,
            "load --tensors: only matching components: %s" % ids)
    c.check(doc.get("skipped") == [], "load --tensors: nothing reported as skipped: %s" % doc.get("skipped"))
    c.check(doc.get("total_bytes") == sum(x["bytes"] for x in doc.get("components", [])),
            "load --tensors: total_bytes of the subset")
    doc = load_ok("load --schema --tensors", example, "--schema", schema, "--tensors", "layers.0.mlp.*")
    c.check([x["id"] for x in doc.get("components", [])] == ["layers.0.mlp.gate_up"],
            "load --schema --tensors: the schema component: %s" % doc.get("components"))
    c.check(doc.get("skipped") == [], "load --schema --tensors: the optional component is not selected")
    c.expect_error("load --tensors matching nothing", ["load", example, "--tensors", "model.*", "--tensors",
                                                      "decoder.*", "--provider", "host"], 3, "NotFound",
                   ['tensor pattern "decoder.*" matches no component id', '"model.embed_tokens.weight"'],
                   "select_components")
    table = c.run("load", example, "--tensors", "model.norm.weight", "--provider", "host")
    c.check(table.returncode == 0 and "model.norm.weight" in table.stdout and
            "model.embed_tokens.weight" not in table.stdout, "load --tensors table: %s" % table.stdout)

    # inspect --schema: the verdict without loading anything.
    doc = inspect_ok("inspect --schema", example, "--schema", schema)
    s = doc.get("schema", {})
    c.check(s.get("path") == schema, "inspect --schema: path")
    c.check(sorted(x["id"] for x in s.get("components", [])) ==
            ["embed", "layers.0.attn.q.qweight", "layers.0.mlp.gate_up", "norm"],
            "inspect --schema: the components a load would load: %s" % s.get("components"))
    for x in s.get("components", []):
        for key in ("id", "role", "sources", "bytes", "segments"):
            c.check(key in x, "inspect --schema: component field %r" % key)
    c.check([x["id"] for x in s.get("skipped", [])] == ["layers.0.attn.q.scales"] and
            all(x.get("reason") for x in s.get("skipped", [])), "inspect --schema: skipped, with reasons")
    text = c.run("inspect", example, "--schema", schema)
    c.check(text.returncode == 0 and "4 components would load, 1 skipped" in text.stdout and
            "skipped layers.0.attn.q.scales" in text.stdout, "inspect --schema text: %s" % text.stdout)
    broken = c.write(os.path.join(c.WORK, "schemas", "inspect-broken.json"),
                     json.dumps({"schema_version": "1.0.0", "components": [
                         {"id": "norm", "role": "values", "sources": ["model.norm.weight"], "dimensions": [3],
                          "encoding": {"dense": {"element_type": "F32"}}, "required": True}]}))
    c.expect_error("inspect --schema with a broken schema", ["inspect", example, "--schema", broken], 3,
                   "InvalidPayload", ['"norm"', "[3]"])
    c.expect_error("inspect --schema with no such file", ["inspect", example, "--schema",
                                                          os.path.join(c.WORK, "none.json")], 3, "Io", ["none.json"])

    c.expect_usage("load --tensors without a value", ["load", example, "--tensors"])
    c.expect_usage("load --revision without a value", ["load", example, "--revision"])
    c.expect_usage("load --revision empty", ["load", example, "--revision="])
    c.expect_usage("inspect --schema without a value", ["inspect", example, "--schema"])
    c.expect_usage("inspect --revision empty", ["inspect", example, "--revision", ""])


def test_names_outside_the_id_rule():
    """A tensor name with a space or a non-ASCII letter loads as "tensor.<n>",
    keeps its own name as its source, and --tensors and --split take either."""
    folder = os.path.join(c.WORK, "odd-names")
    c.write(os.path.join(folder, "model.safetensors"),
            c.good_file([("a b", "F32", [2, 2]), ("caf\u00e9", "F32", [2]), ("ok", "F32", [2])], seed=5))
    doc = load_ok("odd names", folder)
    by_source = {comp["source"]: comp for comp in doc.get("components", [])}
    c.check(set(by_source) == {"a b", "caf\u00e9", "ok"}, "every component names its tensor: %r" % sorted(by_source))
    if "a b" in by_source:
        c.check(by_source["a b"]["id"].startswith("tensor."), "'a b' loads as tensor.<n>: %r" % by_source["a b"]["id"])
        c.check(by_source["ok"]["id"] == "ok", "a valid name is its own id")
    picked = load_ok("--tensors by tensor name", folder, "--tensors", "a b")
    c.check([comp["source"] for comp in picked.get("components", [])] == ["a b"],
            "--tensors 'a b' picks that tensor: %r" % picked.get("components"))
    sliced = load_ok("--split by tensor name", folder, "--rank", "1", "--world", "2", "--split", "a b=1")
    split = [comp for comp in sliced.get("components", []) if comp["source"] == "a b"]
    c.check(split and split[0]["shape"] == [2, 1], "--split 'a b=1' splits it: %r" % split)
    table = c.run("load", folder, "--provider", "host")
    c.check(table.returncode == 0 and '"a b"' in table.stdout and "\"caf\u00e9\"" in table.stdout,
            "the table shows the tensor names beside their ids: %s%s" % (table.stdout, table.stderr))


def test_folders_without_a_checkpoint():
    """A folder rootspan cannot read says what it holds and what would do; a
    Hugging Face cache root says to pick one of its repositories."""
    pickles = os.path.join(c.WORK, "pickles")
    c.write(os.path.join(pickles, "pytorch_model.bin"), b"\x80\x02")
    c.write(os.path.join(pickles, "config.json"), "{}")
    c.expect_error("a folder of PyTorch pickles", ["inspect", pickles], 3, "InvalidCheckpoint",
                   ['no checkpoint rootspan reads', '"config.json", "pytorch_model.bin"', "PyTorch pickles",
                    "convert them to safetensors"])
    empty = os.path.join(c.WORK, "empty-folder")
    os.makedirs(empty)
    c.expect_error("an empty folder", ["inspect", empty], 3, "InvalidCheckpoint", ["the folder is empty"])
    hub = os.path.join(c.WORK, "hub")
    cache_repository(os.path.join("hub", "models--org--one"))
    cache_repository(os.path.join("hub", "models--org--two"))
    c.expect_error("a cache root", ["inspect", hub], 3, "InvalidCheckpoint",
                   ["is a Hugging Face cache folder", '"models--org--one", "models--org--two"',
                    "pass one of them, a models--org--name folder"])


def main():
    c.EXE, example = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="rootspan-checkpoint-cli-") as tmp:
        c.WORK = tmp
        test_cache_repository()
        test_fifo_and_json_shards()
        test_subsets(example)
        test_names_outside_the_id_rule()
        test_folders_without_a_checkpoint()
    return c.report()


if __name__ == "__main__":
    sys.exit(main())

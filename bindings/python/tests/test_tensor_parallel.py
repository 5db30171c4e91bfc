#!/usr/bin/python3
"""Tensor-parallel loading under a real distributed engine: torch.distributed
(gloo over 127.0.0.1), ranks started with torch.multiprocessing, world sizes
2 and 3. Each rank loads its shard of a generated two-shard checkpoint (a
row-split and a column-split matrix, both uneven for 3 ranks, a replicated
norm, and a block-quantized component split on whole blocks through a
schema) with rootspan.torch; all_gather rebuilds every component, which must
equal the single-process full load and the bytes written, byte for byte; and
each rank's bytes read must be within one row per split component of
total / world (plus the replicated norm)."""
import gc
import json
import os
import socket
import struct
import sys
import tempfile
import unittest

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as missing:
    print(f"skipped: {missing} (the tensor-parallel suite needs torch)")
    sys.exit(77)
if not dist.is_available() or not dist.is_gloo_available():
    print("skipped: torch.distributed with the gloo backend is not available")
    sys.exit(77)

import rootspan
import rootspan.inspect
import rootspan.torch

# id -> (dtype, shape, split dimension or -1); "qw" is block-quantized:
# 4 rows of 6 blocks (32 values in 18 bytes each).
BLOCK_VALUES, BLOCK_BYTES = 32, 18
TENSORS = {
    "embed": ("F32", (10, 8), 0),    # rows: 4/3/3 over 3 ranks
    "o_proj": ("F16", (6, 11), 1),   # columns: 4/4/3 over 3 ranks
    "norm": ("F32", (8,), -1),       # replicated (no rule matches it)
    "qw": ("U8", (4, 6 * BLOCK_BYTES), 1),
}
SHARDS = {"model-00001-of-00002.safetensors": ["embed", "qw"], "model-00002-of-00002.safetensors": ["o_proj", "norm"]}
SPLIT = {"embed": 0, "o_proj": 1, "qw": 1}
ELEMENT = {"F32": 4, "F16": 2, "U8": 1}
TORCH_DTYPE = {"F32": torch.float32, "F16": torch.float16, "U8": torch.uint8}


def tensor_bytes(name):
    dtype, shape, _ = TENSORS[name]
    n = ELEMENT[dtype]
    for d in shape:
        n *= d
    seed = sum(map(ord, name))
    return bytes((i * 131 + seed * 7 + (i >> 8)) & 0xFF for i in range(n))


def write_checkpoint(folder):
    weight_map = {}
    for file, names in SHARDS.items():
        header, blob = {}, b""
        for name in names:
            data = tensor_bytes(name)
            dtype, shape, _ = TENSORS[name]
            header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(blob), len(blob) + len(data)]}
            blob += data
            weight_map[name] = file
        raw = json.dumps(header).encode()
        raw += b" " * ((8 - len(raw) % 8) % 8)
        with open(os.path.join(folder, file), "wb") as f:
            f.write(struct.pack("<Q", len(raw)) + raw + blob)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    components = []
    for name, (dtype, shape, _) in TENSORS.items():
        if name == "qw":
            dims = [shape[0], shape[1] // BLOCK_BYTES]
            encoding = {"block_quantized": {"format_id": "quantization.test.q4", "values_per_block": BLOCK_VALUES,
                                            "bytes_per_block": BLOCK_BYTES}}
        else:
            dims, encoding = list(shape), {"dense": {"element_type": dtype}}
        components.append({"id": name, "role": "values", "sources": [name], "dimensions": dims,
                           "encoding": encoding, "required": True})
    schema = os.path.join(folder, "schema.json")
    with open(schema, "w") as f:
        json.dump({"schema_version": "1.0.0", "components": components}, f)
    return schema


def full_tensor(name):
    """The component as loaded whole, in the layout rootspan.torch gives it."""
    dtype, shape, _ = TENSORS[name]
    t = torch.frombuffer(bytearray(tensor_bytes(name)), dtype=TORCH_DTYPE[dtype])
    if name == "qw":
        return t.reshape(shape[0], shape[1] // BLOCK_BYTES, BLOCK_BYTES)
    return t.reshape(shape)


def gather(tensor, dim, world):
    """all_gather of per-rank slices whose sizes along dim differ by at most one (padded to the largest)."""
    as_bytes = tensor.contiguous().view(torch.uint8)  # gloo moves bytes of any dtype alike
    size = torch.tensor([as_bytes.shape[dim]], dtype=torch.int64)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(sizes, size)
    largest = max(int(s) for s in sizes)
    pad_shape = list(as_bytes.shape)
    pad_shape[dim] = largest - as_bytes.shape[dim]
    padded = torch.cat([as_bytes, torch.zeros(pad_shape, dtype=torch.uint8)], dim=dim)
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded)
    whole = torch.cat([p.narrow(dim, 0, int(s)) for p, s in zip(parts, sizes)], dim=dim)
    return whole.view(tensor.dtype)


def worker(rank, world, port, folder, schema, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        shard, bytes_read = rootspan.torch.load_shard(folder, rank, world, split=SPLIT, schema=schema,
                                                       with_stats=True)
        report = {"rank": rank, "bytes_read": bytes_read, "mismatches": [], "shapes": {}}
        with rootspan.Context() as ctx, ctx.load(folder, schema=schema, provider="host") as full:
            for name, (_, _, dim) in TENSORS.items():
                part = shard[name]
                report["shapes"][name] = list(part.shape)
                if rank == 0:  # the single-process full load, copied out before the weights close
                    loaded = torch.utils.dlpack.from_dlpack(full[name].__dlpack__(copy=True))
                rebuilt = part if dim < 0 else gather(part, dim, world)
                expected = full_tensor(name)
                if rank == 0 and not torch.equal(loaded.view(torch.uint8), expected.view(torch.uint8)):
                    report["mismatches"].append(f"{name}: the full load differs from the bytes written")
                if rebuilt.shape != expected.shape or not torch.equal(rebuilt.view(torch.uint8),
                                                                      expected.view(torch.uint8)):
                    report["mismatches"].append(f"{name}: rebuilt {list(rebuilt.shape)} differs from the full load")
                if rank == 0:
                    del loaded
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(report, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def ranked(rank, worker, *args):
    """Runs worker(rank, *args) in a rank's process (mp.spawn's function), then, once the worker's objects
    are gone (its tensors and the rootspan memory under them released, as ever), ends the process before
    Python's finalization. torch's gloo thread can still be destroying the last collective's work then,
    which drops the Python objects of that collective's tensors: it takes the GIL while the interpreter
    finalizes, is ended mid-unwind, and the rank dies of SIGABRT ("terminate called without an active
    exception"; seen in a core dump, about one run in ten of the DTensor suite). A worker that fails raises
    before that, and mp.spawn reports it, as ever."""
    worker(rank, *args)
    gc.collect()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TensorParallelLoad(unittest.TestCase):
    def run_world(self, world):
        with tempfile.TemporaryDirectory(prefix="rootspan-tp-") as folder, \
                tempfile.TemporaryDirectory(prefix="rootspan-tp-out-") as out:
            schema = write_checkpoint(folder)
            mp.spawn(ranked, args=(worker, world, free_port(), folder, schema, out), nprocs=world, join=True)
            reports = []
            for rank in range(world):
                with open(os.path.join(out, f"rank{rank}.json")) as f:
                    reports.append(json.load(f))
        split_total = sum(len(tensor_bytes(n)) for n, (_, _, d) in TENSORS.items() if d >= 0)
        replicated = sum(len(tensor_bytes(n)) for n, (_, _, d) in TENSORS.items() if d < 0)
        # One row: the bytes of one step along the split dimension.
        one_row = {"embed": 8 * 4, "o_proj": 6 * 2, "qw": 4 * BLOCK_BYTES}
        for report in reports:
            self.assertEqual(report["mismatches"], [], f"world {world} rank {report['rank']}")
            share = report["bytes_read"] - replicated
            self.assertLessEqual(abs(share - split_total / world), sum(one_row.values()),
                                 f"world {world} rank {report['rank']} read {report['bytes_read']} bytes")
        self.assertEqual(sum(r["bytes_read"] for r in reports), split_total + world * replicated,
                         "the ranks' reads add up to the checkpoint once, plus the replicated norm on each")
        return reports

    def test_world_2(self):
        reports = self.run_world(2)
        self.assertEqual(reports[0]["shapes"]["o_proj"], [6, 6])
        self.assertEqual(reports[1]["shapes"]["o_proj"], [6, 5])
        self.assertEqual(reports[1]["shapes"]["qw"], [4, 3, BLOCK_BYTES])

    def test_world_3(self):
        reports = self.run_world(3)
        self.assertEqual([r["shapes"]["embed"][0] for r in reports], [4, 3, 3])
        self.assertEqual([r["shapes"]["qw"][1] for r in reports], [2, 2, 2])
        self.assertEqual(reports[2]["shapes"]["norm"], [8])


class ReadPlans(unittest.TestCase):
    def test_the_plan_of_each_convention_without_reading(self):
        with tempfile.TemporaryDirectory(prefix="rootspan-tp-") as folder:
            schema = write_checkpoint(folder)
            for convention, rows in (("tensor_split", [4, 3, 3]), ("chunk", [4, 4, 2])):
                plans = [rootspan.inspect.read_plan(folder, rank, 3, split=SPLIT, schema=schema,
                                                    split_convention=convention) for rank in range(3)]
                embed = [next(c for c in p["components"] if c["id"] == "embed") for p in plans]
                self.assertEqual([c["count"] for c in embed], rows, convention)
                self.assertEqual([c["full_dimensions"] for c in embed], [[10, 8]] * 3)
                self.assertEqual({p["split_convention"] for p in plans}, {convention})
                loaded = rootspan.torch.load_shard(folder, 2, 3, split=SPLIT, schema=schema) \
                    if convention == "tensor_split" else None
                if loaded is not None:
                    self.assertEqual(plans[2]["bytes"], sum(t.numel() * t.element_size() for t in loaded.values()))
            with self.assertRaisesRegex(ValueError, "a read plan needs a world_size of at least 1"):
                rootspan.inspect.read_plan(folder, 0, 0)


class BadInput(unittest.TestCase):
    def test_refusals_name_what_is_wrong(self):
        with tempfile.TemporaryDirectory(prefix="rootspan-tp-") as folder:
            schema = write_checkpoint(folder)
            with self.assertRaisesRegex(rootspan.InvalidArgumentError, r"rank 3 is outside \[0, 2\)"):
                rootspan.torch.load_shard(folder, 3, 2, split=SPLIT, schema=schema)
            with self.assertRaisesRegex(ValueError, "world_size must be at least 1, got 0"):
                rootspan.torch.load_shard(folder, 0, 0, schema=schema)
            with self.assertRaisesRegex(rootspan.InvalidArgumentError, 'would cut a block of component "qw"'):
                rootspan.torch.load_shard(folder, 0, 4, split={"qw": 1}, schema=schema)
            with self.assertRaisesRegex(rootspan.InvalidArgumentError, 'splits dimension 1 of component "norm"'):
                rootspan.torch.load_shard(folder, 0, 2, split={"norm": 1}, schema=schema)
            with self.assertRaisesRegex(rootspan.NotFoundError, '"lm_head" matches none'):
                rootspan.torch.load_shard(folder, 0, 2, split={"lm_head": 0}, schema=schema)
            with self.assertRaisesRegex(TypeError, "split must be a dict"):
                rootspan.torch.load_shard(folder, 0, 2, split=[("embed", 0)], schema=schema)
            with self.assertRaisesRegex(TypeError, r"split\['embed'\] must be a dimension"):
                rootspan.torch.load_shard(folder, 0, 2, split={"embed": "rows"}, schema=schema)
            with self.assertRaisesRegex(ValueError, "split_convention must be 'tensor_split' or 'chunk', got 'even'"):
                rootspan.inspect.read_plan(folder, 0, 2, split=SPLIT, schema=schema, split_convention="even")
            # rank and world_size are 32-bit in C: a wider value is refused, never truncated to a valid one
            with self.assertRaisesRegex(ValueError, r"rank must lie in \[0, 2\*\*32\), got 4294967296"):
                rootspan.torch.load_shard(folder, 2**32, 2, split=SPLIT, schema=schema)
            with self.assertRaisesRegex(ValueError, r"world_size must lie in \[0, 2\*\*32\), got 4294967298"):
                rootspan.torch.load_shard(folder, 0, 2**32 + 2, split=SPLIT, schema=schema)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
"""GGUF files written by ggml's own Python writer (gguf-py's GGUFWriter and
quantizers, as its converter writes them) loaded through rootspan: dense
F32, F16 and BF16 tensors equal their source; Q8_0 and Q4_0 tensors come out
zero-copy as uint8 blocks whose bytes equal GGUFReader's, with the ggml
type's name, values and bytes per block on the component, and dequantized
by gguf-py they match the source within the format's error. Needs gguf:
the virtual environment of tools/test-python-venv.sh.
"""
import os
import sys
import tempfile
import unittest

try:
    import numpy
    import torch
    import gguf
    from gguf import GGMLQuantizationType as Q
except ImportError as missing:
    print(f"skipped: {missing} (the gguf-py suite needs gguf, numpy and torch)")
    sys.exit(77)

import rootspan
import rootspan.torch

# (values per block, bytes per block) as ggml's table has them
BLOCKS = {Q.Q8_0: (32, 34), Q.Q4_0: (32, 18)}


class WrittenByGgufPy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._dir = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls._dir.name, "model.gguf")
        rng = numpy.random.default_rng(11)
        cls.source = {"blk.0.attn_q.weight": rng.standard_normal((64, 256)).astype(numpy.float32),
                      "blk.0.ffn_up.weight": rng.standard_normal((32, 128)).astype(numpy.float32),
                      "token_embd.weight": rng.standard_normal((16, 64)).astype(numpy.float32),
                      "output_norm.weight": rng.standard_normal(64).astype(numpy.float32),
                      "blk.0.attn_k.weight": rng.standard_normal((8, 64)).astype(numpy.float32)}
        cls.types = {"blk.0.attn_q.weight": Q.Q8_0, "blk.0.ffn_up.weight": Q.Q4_0, "token_embd.weight": Q.F16,
                     "output_norm.weight": Q.F32, "blk.0.attn_k.weight": Q.BF16}
        cls.write(cls.path)
        cls.reader = gguf.GGUFReader(cls.path)

    @classmethod
    def write(cls, path, **options):
        """The source tensors as gguf-py's converter writes them (options: GGUFWriter's, e.g. a split)."""
        writer = gguf.GGUFWriter(path, "llama", **options)
        writer.add_block_count(1)
        for name, data in cls.source.items():
            qtype = cls.types[name]
            if qtype == Q.F32:
                writer.add_tensor(name, data)
            elif qtype == Q.F16:
                writer.add_tensor(name, data.astype(numpy.float16))
            else:
                writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()

    @classmethod
    def tearDownClass(cls):
        cls._dir.cleanup()

    def raw(self, name):
        tensor = next(t for t in self.reader.tensors if t.name == name)
        return numpy.ascontiguousarray(tensor.data).tobytes()

    def test_dense_tensors_equal_their_source(self):
        state = rootspan.torch.load(self.path)
        self.assertEqual(list(state), [t.name for t in self.reader.tensors], "the file's order and names")
        self.assertTrue(torch.equal(state["output_norm.weight"], torch.from_numpy(self.source["output_norm.weight"])))
        self.assertTrue(torch.equal(state["token_embd.weight"],
                                    torch.from_numpy(self.source["token_embd.weight"].astype(numpy.float16))))
        bf16 = state["blk.0.attn_k.weight"]
        self.assertEqual((bf16.dtype, tuple(bf16.shape)), (torch.bfloat16, (8, 64)))
        self.assertEqual(bf16.reshape(-1).view(torch.uint8).numpy().tobytes(), self.raw("blk.0.attn_k.weight"))

    def test_every_component_names_its_ggml_type(self):
        with rootspan.Context(manifests=[]) as ctx, ctx.load(self.path) as weights:
            for tensor in self.reader.tensors:
                self.assertEqual(weights[tensor.name].gguf_type, int(tensor.tensor_type), tensor.name)

    def test_a_split_set_written_by_gguf_py_loads_as_the_single_file(self):
        folder = os.path.join(self._dir.name, "split")
        os.makedirs(folder)
        self.write(os.path.join(folder, "model.gguf"), split_max_tensors=2)
        parts = sorted(os.listdir(folder))
        self.assertEqual(parts, [f"model-0000{i}-of-00003.gguf" for i in (1, 2, 3)])
        whole = rootspan.torch.load(self.path)
        for part in (parts[0], parts[2]):  # any part names the set
            split = rootspan.torch.load(os.path.join(folder, part))
            self.assertEqual(list(split), list(whole), part)
            for name in whole:
                self.assertTrue(torch.equal(split[name].view(torch.uint8), whole[name].view(torch.uint8)), name)
        with rootspan.Context(manifests=[]) as ctx, ctx.load(os.path.join(folder, parts[1])) as weights:
            self.assertEqual(weights["blk.0.attn_q.weight"].gguf_type, int(Q.Q8_0))

    def test_a_type_ggml_no_longer_has_is_refused_by_name(self):
        # gguf-py writes a Q4_0 tensor; its type id is then patched to 4, which ggml once had as Q4_2.
        path = os.path.join(self._dir.name, "removed.gguf")
        writer = gguf.GGUFWriter(path, "llama")
        writer.add_tensor("w", gguf.quants.quantize(self.source["blk.0.ffn_up.weight"], Q.Q4_0), raw_dtype=Q.Q4_0)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        info = gguf.GGUFReader(path).tensors[0].field
        type_at = info.offset + sum(part.nbytes for part in info.parts[:-2])  # the type: the info's next-to-last part
        with open(path, "r+b") as f:
            f.seek(type_at)
            self.assertEqual(int.from_bytes(f.read(4), "little"), int(Q.Q4_0))
            f.seek(type_at)
            f.write((4).to_bytes(4, "little"))
        with self.assertRaisesRegex(rootspan.InvalidCheckpointError, r'tensor "w".*Q4_2'):
            rootspan.torch.load(path)

    def test_quantized_tensors_are_their_blocks_zero_copy(self):
        state = rootspan.torch.load(self.path)
        with rootspan.Context(manifests=[]) as ctx, ctx.load(self.path) as weights:
            for name in ("blk.0.attn_q.weight", "blk.0.ffn_up.weight"):
                qtype = self.types[name]
                values, nbytes = BLOCKS[qtype]
                component = weights[name]
                self.assertEqual((component.encoding, component.format_id, component.values_per_block,
                                  component.bytes_per_block), ("block_quantized", f"gguf.{qtype.name.lower()}",
                                                               values, nbytes), name)
                self.assertTrue(component.zero_copy, name)
                self.assertEqual(component.gguf_type, int(qtype), name)
                rows, columns = self.source[name].shape
                blocks = state[name]
                self.assertEqual((blocks.dtype, tuple(blocks.shape)), (torch.uint8, (rows, columns // values, nbytes)))
                self.assertEqual(blocks.numpy().tobytes(), self.raw(name), name)
                restored = gguf.quants.dequantize(blocks.numpy().reshape(rows, -1), qtype)
                error = numpy.abs(restored - self.source[name]).max() / numpy.abs(self.source[name]).max()
                self.assertLess(error, 0.01 if qtype == Q.Q8_0 else 0.15, name)


if __name__ == "__main__":
    unittest.main()

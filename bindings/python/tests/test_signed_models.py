#!/usr/bin/python3
"""Signed models from Python: rootspan.sign and Context.load(signature=,
public_key=, certificate_chain=, ignore_unsigned_files=) over small sharded
safetensors folders (an index, config.json, tokenizer.json) built here, with
keys and certificates made by the `openssl` command (P-256, P-384, P-521).
Every tampering is refused with its error class and a message naming the
file or shard and the digests or the reason: a changed weight byte, a
changed config.json (not loaded, hashed beside the load), a missing file,
an unsigned file (let be with ignore_unsigned_files), two shards swapped, a
statement edited after signing, a wrong key or root, a damaged bundle; the
symbolic link policy (refused unless signed with allow_symlinks, as a
Hugging Face cache snapshot is). Interoperability with the reference
`model_signing` 1.1.1 both ways, where it is importable (skipped elsewhere,
Debian's python3 included, unless ROOTSPAN_REQUIRE_MODEL_SIGNING=1). Needs
no numpy or torch, only the `openssl` program (tools/install-deps.sh).
"""
import base64
import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import rootspan

REQUIRE_REFERENCE = os.environ.get("ROOTSPAN_REQUIRE_MODEL_SIGNING") == "1"
CURVES = {"P-256": "prime256v1", "P-384": "secp384r1", "P-521": "secp521r1"}
SHARD_SIZE = 64  # bytes per signed shard with the "shards" method: several per weight file


def openssl(*args, cwd=None):
    """Runs the openssl program; its absence or failure is an error naming the command and what it said."""
    try:
        done = subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=cwd)
    except FileNotFoundError:
        raise AssertionError("the `openssl` program is missing (Debian package openssl, tools/install-deps.sh); "
                             "the signed-model tests make their keys with it") from None
    if done.returncode != 0:
        raise AssertionError(f"openssl {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def make_key(folder, name, curve="P-256"):
    """(private key, public key) PEM paths of a new ECDSA key on curve."""
    private, public = os.path.join(folder, name + ".key.pem"), os.path.join(folder, name + ".pub.pem")
    openssl("ecparam", "-name", CURVES[curve], "-genkey", "-noout", "-out", private)
    openssl("ec", "-in", private, "-pubout", "-out", public)
    return private, public


def make_chain(folder, prefix="ca", curve="P-256"):
    """A root CA, an intermediate CA and a leaf for signing (KeyUsage digitalSignature), by the openssl
    program: {"root", "intermediate", "leaf", "leaf_key"} PEM paths."""
    out = {}
    root_key, _ = make_key(folder, prefix + "-root", curve)
    out["root"] = os.path.join(folder, prefix + "-root.crt")
    openssl("req", "-x509", "-new", "-key", root_key, "-subj", f"/CN={prefix} root", "-days", "2", "-out",
            out["root"], "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ca_ext = os.path.join(folder, prefix + "-ca.ext")
    with open(ca_ext, "w") as f:
        f.write("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    leaf_ext = os.path.join(folder, prefix + "-leaf.ext")
    with open(leaf_ext, "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=codeSigning\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    issuer, issuer_key = out["root"], root_key
    for role, ext in (("intermediate", ca_ext), ("leaf", leaf_ext)):
        key, _ = make_key(folder, f"{prefix}-{role}", curve)
        request = os.path.join(folder, f"{prefix}-{role}.csr")
        openssl("req", "-new", "-key", key, "-subj", f"/CN={prefix} {role}", "-out", request)
        out[role] = os.path.join(folder, f"{prefix}-{role}.crt")
        openssl("x509", "-req", "-in", request, "-CA", issuer, "-CAkey", issuer_key, "-CAcreateserial",
                "-CAserial", os.path.join(folder, prefix + ".srl"), "-days", "2", "-extfile", ext, "-out", out[role])
        issuer, issuer_key = out[role], key
    out["leaf_key"] = issuer_key
    return out


def safetensors_bytes(tensors):
    header, blob = {}, b""
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    raw = json.dumps(header).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + blob


SHARDS = ("model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors")


def make_model(folder):
    """A three-shard model folder: the first two shards the same size (one F32 [8, 4] tensor each, names of one
    length), an index, config.json and tokenizer.json."""
    os.makedirs(folder)
    shards = {SHARDS[0]: {"a.weight": ("F32", [8, 4], bytes(range(128)))},
              SHARDS[1]: {"b.weight": ("F32", [8, 4], bytes(range(100, 228)))},
              SHARDS[2]: {"c.bias": ("F32", [4], bytes(range(7, 23)))}}
    weight_map = {}
    for name, tensors in shards.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(safetensors_bytes(tensors))
        weight_map.update({tensor: name for tensor in tensors})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "tiny", "hidden_size": 4}, f)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}}}, f)
    return folder


def flip_byte(path, offset_from_end=3):
    with open(path, "r+b") as f:
        f.seek(-offset_from_end, os.SEEK_END)
        byte = f.read(1)
        f.seek(-offset_from_end, os.SEEK_END)
        f.write(bytes([byte[0] ^ 0x01]))


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class SignedBase(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="rootspan-signed-")
        self.tmp = self._dir.name
        self.ctx = rootspan.Context(manifests=[])

    def tearDown(self):
        self.assertEqual(self.ctx.close(), 0, "a failed load left a root live")
        self._dir.cleanup()

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def write_signature(self, text, name="model.sig"):
        """The bundle written outside the model folder."""
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def load_names(self, folder, **signature):
        """The components a signed load made, and what it verified ({name: sha256} of the signature's)."""
        with self.ctx.load(folder, provider="host", **signature) as weights:
            names = sorted(weights.keys())
            digests = weights.digests
        self.assertTrue(digests["checked"], digests)
        verified = {entry["name"]: entry for entry in digests["verified"]}
        for entry in verified.values():
            self.assertEqual(entry["source"], "signature", entry)
        return names, verified

    def refused(self, error_class, folder, **signature):
        with self.assertRaises(error_class) as caught:
            with self.ctx.load(folder, provider="host", **signature):
                pass
        return str(caught.exception)


class RoundTrip(SignedBase):
    def test_files_and_shards_on_every_curve(self):
        for curve in CURVES:
            for shards in (False, True):
                with self.subTest(curve=curve, shards=shards):
                    folder = make_model(self.path(f"model-{curve}-{shards}"))
                    private, public = make_key(self.tmp, curve, curve)
                    bundle = rootspan.sign(folder, private, shards=shards,
                                           shard_size=SHARD_SIZE if shards else None)
                    self.assertIsInstance(bundle, str)
                    document = json.loads(bundle)
                    statement = json.loads(base64.b64decode(document["dsseEnvelope"]["payload"]))
                    serialization = statement["predicate"]["serialization"]
                    self.assertEqual(serialization["method"], "shards" if shards else "files", serialization)
                    names = {r["name"] for r in statement["predicate"]["resources"]}
                    if not shards:
                        self.assertEqual(names, set(SHARDS) | {"model.safetensors.index.json", "config.json",
                                                               "tokenizer.json"})
                    else:
                        self.assertEqual(serialization["shard_size"], SHARD_SIZE, serialization)
                        self.assertIn(f"{SHARDS[0]}:0:{SHARD_SIZE}", names)
                    signature = self.write_signature(bundle, f"{curve}-{shards}.sig")
                    components, verified = self.load_names(folder, signature=signature, public_key=public)
                    self.assertEqual(components, ["a.weight", "b.weight", "c.bias"])
                    if not shards:  # every file checked, config.json and tokenizer.json (not loaded) too
                        self.assertEqual(set(verified), names)
                        for name, entry in verified.items():
                            self.assertEqual(entry["sha256"], sha256_file(os.path.join(folder, name)), name)

    def test_a_signature_inside_the_folder_is_left_out(self):
        folder = make_model(self.path("model"))
        private, public = make_key(self.tmp, "k")
        inside = os.path.join(folder, "model.sig")
        with open(inside, "w") as f:
            f.write(rootspan.sign(folder, private, signature_path=inside))
        components, verified = self.load_names(folder, signature=inside, public_key=public)
        self.assertEqual(len(components), 3)
        self.assertNotIn("model.sig", verified)

    def test_ignored_paths_are_neither_signed_nor_refused(self):
        folder = make_model(self.path("model"))
        os.makedirs(os.path.join(folder, "notes"))
        with open(os.path.join(folder, "notes", "readme.txt"), "w") as f:
            f.write("changes freely")
        private, public = make_key(self.tmp, "k")
        signature = self.write_signature(rootspan.sign(folder, private, ignore=["notes"]))
        with open(os.path.join(folder, "notes", "readme.txt"), "a") as f:
            f.write(", and did")
        _, verified = self.load_names(folder, signature=signature, public_key=public)
        self.assertFalse([name for name in verified if name.startswith("notes")], verified)

    def test_certificate_chain(self):
        folder = make_model(self.path("model"))
        chain = make_chain(self.tmp)
        bundle = rootspan.sign(folder, chain["leaf_key"], certificate=chain["leaf"],
                               certificate_chain=[chain["intermediate"]])
        document = json.loads(bundle)
        self.assertEqual(len(document["verificationMaterial"]["x509CertificateChain"]["certificates"]), 2)
        signature = self.write_signature(bundle)
        components, _ = self.load_names(folder, signature=signature, certificate_chain=chain["root"])
        self.assertEqual(len(components), 3)
        other = make_chain(self.tmp, "other")
        message = self.refused(rootspan.SignatureInvalidError, folder, signature=signature,
                               certificate_chain=[other["root"]])
        self.assertIn(signature, message)
        _, public = make_key(self.tmp, "stranger")
        message = self.refused(rootspan.SignatureInvalidError, folder, signature=signature, public_key=public)
        self.assertIn(signature, message)

    def test_torch_load_passes_the_signature_through(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("needs torch")
        import rootspan.torch as rtorch
        folder = make_model(self.path("model"))
        private, public = make_key(self.tmp, "k")
        signature = self.write_signature(rootspan.sign(folder, private))
        state = rtorch.load(folder, signature=signature, public_key=public)
        self.assertEqual(sorted(state), ["a.weight", "b.weight", "c.bias"])
        flip_byte(os.path.join(folder, SHARDS[2]))
        with self.assertRaisesRegex(rootspan.DigestMismatchError, SHARDS[2]):
            rtorch.load(folder, signature=signature, public_key=public)


class Tampering(SignedBase):
    """Each change after signing, with both methods: the error class, and the file or shard it names."""

    def setUp(self):
        super().setUp()
        self.private, self.public = make_key(self.tmp, "k")

    def signed(self, shards):
        folder = make_model(self.path("model-shards" if shards else "model-files"))
        bundle = rootspan.sign(folder, self.private, shards=shards, shard_size=SHARD_SIZE if shards else None)
        signature = self.write_signature(bundle, "shards.sig" if shards else "files.sig")
        return folder, signature, bundle

    def each_method(self):
        for shards in (False, True):
            with self.subTest(method="shards" if shards else "files"):
                yield (shards,) + self.signed(shards)

    def test_a_changed_weight_byte(self):
        for shards, folder, signature, _ in self.each_method():
            before = sha256_file(os.path.join(folder, SHARDS[1]))
            flip_byte(os.path.join(folder, SHARDS[1]))
            message = self.refused(rootspan.DigestMismatchError, folder, signature=signature, public_key=self.public)
            if shards:
                self.assertRegex(message, rf'shard "{SHARDS[1]}:\d+:\d+" is not the published one')
            else:
                self.assertIn(f'file "{SHARDS[1]}" is not the published one', message)
                self.assertIn(f"expected {before}", message)
                self.assertIn(f"its SHA-256 is {sha256_file(os.path.join(folder, SHARDS[1]))}", message)
            self.assertIn("(from the signature)", message)

    def test_a_changed_config_json_not_loaded_but_hashed_beside(self):
        for shards, folder, signature, _ in self.each_method():
            config = os.path.join(folder, "config.json")
            before = sha256_file(config)
            with open(config, "w") as f:
                json.dump({"model_type": "tiny", "hidden_size": 5}, f)  # same size, other bytes
            message = self.refused(rootspan.DigestMismatchError, folder, signature=signature, public_key=self.public)
            self.assertIn('"config.json:0:' if shards else 'file "config.json"', message)
            self.assertIn(f"expected {before}", message)
            self.assertIn(f"its SHA-256 is {sha256_file(config)}", message)

    def test_a_missing_file(self):
        for shards, folder, signature, _ in self.each_method():
            os.remove(os.path.join(folder, "tokenizer.json"))
            message = self.refused(rootspan.SignatureInvalidError, folder, signature=signature,
                                   public_key=self.public)
            self.assertIn("does not have: \"tokenizer.json\"", message)

    def test_an_unsigned_file(self):
        for shards, folder, signature, _ in self.each_method():
            with open(os.path.join(folder, "extra.bin"), "wb") as f:
                f.write(b"not signed")
            message = self.refused(rootspan.SignatureInvalidError, folder, signature=signature,
                                   public_key=self.public)
            self.assertIn('are not signed: "extra.bin"', message)
            components, verified = self.load_names(folder, signature=signature, public_key=self.public,
                                                   ignore_unsigned_files=True)
            self.assertEqual(len(components), 3)
            self.assertFalse([name for name in verified if name.startswith("extra.bin")], verified)

    def test_two_shards_swapped(self):
        for shards, folder, signature, _ in self.each_method():
            first, second = os.path.join(folder, SHARDS[0]), os.path.join(folder, SHARDS[1])
            self.assertEqual(os.path.getsize(first), os.path.getsize(second))
            # The payloads swapped, headers kept: every file still agrees with the index, only the digests differ.
            with open(first, "rb") as f:
                one = f.read()
            with open(second, "rb") as f:
                two = f.read()
            (header,) = struct.unpack_from("<Q", one, 0)
            start = 8 + header
            with open(first, "wb") as f:
                f.write(one[:start] + two[start:])
            with open(second, "wb") as f:
                f.write(two[:start] + one[start:])
            message = self.refused(rootspan.DigestMismatchError, folder, signature=signature, public_key=self.public)
            self.assertRegex(message, rf'"{SHARDS[0]}:\d+:\d+" is not the published one' if shards
                             else f'file "{SHARDS[0]}" is not the published one')
            # The whole files swapped: the index says where each tensor lies, and the load refuses the files
            # before it reads a weight.
            with open(first, "wb") as f:
                f.write(two)
            with open(second, "wb") as f:
                f.write(one)
            message = self.refused(rootspan.InvalidCheckpointError, folder, signature=signature,
                                   public_key=self.public)
            self.assertIn(f'maps tensor "a.weight" to "{SHARDS[0]}", but it lies in "{SHARDS[1]}"', message)

    def edited(self, bundle, recompute_subject):
        document = json.loads(bundle)
        statement = json.loads(base64.b64decode(document["dsseEnvelope"]["payload"]))
        resources = statement["predicate"]["resources"]
        resources[0]["digest"] = "0" * 64
        if recompute_subject:  # the subject is the SHA-256 of the resources' digests: only the signature breaks
            raw = b"".join(bytes.fromhex(r["digest"]) for r in resources)
            statement["subject"][0]["digest"]["sha256"] = hashlib.sha256(raw).hexdigest()
        document["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
        return json.dumps(document)

    def test_a_statement_edited_after_signing(self):
        for shards, folder, signature, bundle in self.each_method():
            for recompute in (False, True):
                edited = self.write_signature(self.edited(bundle, recompute), f"edited-{shards}-{recompute}.sig")
                message = self.refused(rootspan.SignatureInvalidError, folder, signature=edited,
                                       public_key=self.public)
                self.assertIn(f'signature "{edited}"', message)
                self.assertIn("verify", message.split(":", 1)[1])

    def test_a_wrong_key(self):
        _, other = make_key(self.tmp, "other")
        for shards, folder, signature, _ in self.each_method():
            message = self.refused(rootspan.SignatureInvalidError, folder, signature=signature, public_key=other)
            self.assertIn("signed by another key", message)
            self.assertRegex(message, "its key hint is [0-9a-f]{64}, the public key given has [0-9a-f]{64}")

    def test_a_damaged_bundle(self):
        for shards, folder, signature, bundle in self.each_method():
            truncated = self.write_signature(bundle[:len(bundle) // 2], "truncated.sig")
            message = self.refused(rootspan.SignatureInvalidError, folder, signature=truncated,
                                   public_key=self.public)
            self.assertIn("not valid JSON", message)
            self.assertIn("truncated.sig", message)
            document = json.loads(bundle)
            document["dsseEnvelope"]["signatures"][0]["sig"] = "!not base64!"
            damaged = self.write_signature(json.dumps(document), "damaged.sig")
            message = self.refused(rootspan.SignatureInvalidError, folder, signature=damaged, public_key=self.public)
            self.assertIn("dsseEnvelope.signatures[0].sig is not base64", message)
            missing = self.path("no-such.sig")
            with self.assertRaises(rootspan.Error) as caught:
                self.ctx.load(folder, provider="host", signature=missing, public_key=self.public)
            self.assertIn("no-such.sig", str(caught.exception))


class Symlinks(SignedBase):
    def test_a_link_is_refused_unless_signed_with_allow_symlinks(self):
        folder = make_model(self.path("model"))
        outside = self.path("tokenizer-outside.json")
        shutil.move(os.path.join(folder, "tokenizer.json"), outside)
        os.symlink(outside, os.path.join(folder, "tokenizer.json"))
        private, public = make_key(self.tmp, "k")
        with self.assertRaises(rootspan.SignatureInvalidError) as caught:
            rootspan.sign(folder, private)
        self.assertIn("tokenizer.json", str(caught.exception))
        signature = self.write_signature(rootspan.sign(folder, private, allow_symlinks=True))
        components, verified = self.load_names(folder, signature=signature, public_key=public)
        self.assertEqual(verified["tokenizer.json"]["sha256"], sha256_file(outside))

    def test_a_link_in_a_folder_signed_without_links_is_refused(self):
        folder = make_model(self.path("model"))
        private, public = make_key(self.tmp, "k")
        signature = self.write_signature(rootspan.sign(folder, private))
        outside = self.path("config-outside.json")
        shutil.copy(os.path.join(folder, "config.json"), outside)  # the same bytes, now behind a link
        os.remove(os.path.join(folder, "config.json"))
        os.symlink(outside, os.path.join(folder, "config.json"))
        message = self.refused(rootspan.SignatureInvalidError, folder, signature=signature, public_key=public)
        self.assertIn("config.json", message)

    def test_a_hugging_face_cache_snapshot(self):
        source = make_model(self.path("source"))
        repo = self.path("hub", "models--org--tiny")
        commit = "c" * 40
        snapshot = os.path.join(repo, "snapshots", commit)
        os.makedirs(os.path.join(repo, "blobs"))
        os.makedirs(snapshot)
        os.makedirs(os.path.join(repo, "refs"))
        with open(os.path.join(repo, "refs", "main"), "w") as f:
            f.write(commit)
        for name in sorted(os.listdir(source)):
            digest = sha256_file(os.path.join(source, name))
            shutil.copy(os.path.join(source, name), os.path.join(repo, "blobs", digest))
            os.symlink(os.path.join("..", "..", "blobs", digest), os.path.join(snapshot, name))
        private, public = make_key(self.tmp, "k")
        with self.assertRaises(rootspan.SignatureInvalidError):
            rootspan.sign(snapshot, private)
        for where in (snapshot, repo):
            with self.subTest(signed=where):
                signature = self.write_signature(rootspan.sign(where, private, allow_symlinks=True))
                components, verified = self.load_names(repo, signature=signature, public_key=public)
                self.assertEqual(len(components), 3)
                self.assertEqual(len(verified), 6, verified)
        flip_byte(os.path.join(repo, "blobs", sha256_file(os.path.join(source, SHARDS[0]))))
        message = self.refused(rootspan.DigestMismatchError, repo, signature=signature, public_key=public)
        self.assertIn(SHARDS[0], message)


class ArgumentErrors(SignedBase):
    def setUp(self):
        super().setUp()
        self.folder = make_model(self.path("model"))
        self.private, self.public = make_key(self.tmp, "k")
        self.signature = self.write_signature(rootspan.sign(self.folder, self.private))

    def test_load_types(self):
        cases = [
            (dict(signature=3, public_key="k.pem"), "signature must be a path (str or os.PathLike), got int 3"),
            (dict(signature="s", public_key=["k.pem"]), "public_key must be a path (str or os.PathLike), got list"),
            (dict(signature="s", certificate_chain=7), "certificate_chain must be a path or a list of paths (str or "
                                                       "os.PathLike), got int 7"),
            (dict(signature="s", certificate_chain=["ca.pem", 7]), "certificate_chain[1] must be a path (str or "
                                                                   "os.PathLike), got int 7"),
            (dict(signature="s", public_key="k", ignore_unsigned_files=1), "ignore_unsigned_files must be True or "
                                                                           "False, got int 1"),
        ]
        for arguments, words in cases:
            with self.subTest(arguments=arguments):
                with self.assertRaises(TypeError) as caught:
                    self.ctx.load(self.folder, provider="host", **arguments)
                self.assertIn(words, str(caught.exception))

    def test_load_values(self):
        cases = [
            (dict(public_key=self.public), "public_key check a model signature: signature= (the bundle's path) is "
                                           "missing"),
            (dict(certificate_chain=[self.public], ignore_unsigned_files=True),
             "certificate_chain and ignore_unsigned_files check a model signature"),
            (dict(signature=self.signature), f"signature={self.signature!r} needs the key it was signed with "
                                             "(public_key=, a PEM file) or the certificates to trust"),
            (dict(signature=self.signature, certificate_chain=[]), "certificate_chain must name at least one path, "
                                                                   "got an empty list"),
            (dict(signature=self.signature + "\0x", public_key=self.public), "signature contains a NUL byte"),
        ]
        for arguments, words in cases:
            with self.subTest(arguments=arguments):
                with self.assertRaises(ValueError) as caught:
                    self.ctx.load(self.folder, provider="host", **arguments)
                self.assertIn(words, str(caught.exception))

    def test_the_library_refuses_what_is_not_a_key(self):
        with self.assertRaises(rootspan.Error) as caught:
            self.ctx.load(self.folder, provider="host", signature=self.signature,
                          public_key=os.path.join(self.folder, "config.json"))
        self.assertIn("config.json", str(caught.exception))

    def test_sign_arguments(self):
        with self.assertRaisesRegex(TypeError, "private_key must be a path .*got NoneType"):
            rootspan.sign(self.folder, None)
        with self.assertRaisesRegex(TypeError, "shards must be True or False, got int 1"):
            rootspan.sign(self.folder, self.private, shards=1)
        with self.assertRaisesRegex(ValueError, "shard_size=64 applies to shards=True"):
            rootspan.sign(self.folder, self.private, shard_size=64)
        with self.assertRaisesRegex(ValueError, r"shard_size must lie in \[1, 2\*\*64\), got 0"):
            rootspan.sign(self.folder, self.private, shards=True, shard_size=0)
        with self.assertRaisesRegex(TypeError, "ignore must be a list of paths, not a single str"):
            rootspan.sign(self.folder, self.private, ignore="notes")
        with self.assertRaisesRegex(ValueError, "certificate= is missing"):
            rootspan.sign(self.folder, self.private, certificate_chain=[self.public])
        with self.assertRaises(rootspan.InvalidArgumentError) as caught:
            rootspan.sign(self.folder, self.public)  # a public key is no private key
        self.assertIn(self.public, str(caught.exception))
        with self.assertRaises(rootspan.Error) as caught:
            rootspan.sign(os.path.join(self.folder, SHARDS[0]), self.private)  # a file, not a folder
        self.assertIn(SHARDS[0], str(caught.exception))


def _reference():
    """model_signing (the reference, 1.1.1), or None where it is not importable."""
    try:
        import model_signing
        import model_signing.hashing  # noqa: F401
        import model_signing.signing  # noqa: F401
        import model_signing.verifying  # noqa: F401
        return model_signing
    except ImportError:
        if REQUIRE_REFERENCE:
            raise
        return None


class Reference(SignedBase):
    """Signatures made by the reference verify here, and ours in the reference."""

    @classmethod
    def setUpClass(cls):
        cls.ms = _reference()
        if cls.ms is None:
            raise unittest.SkipTest("needs model_signing 1.1.1 (bindings/python/requirements.txt); "
                                    "ROOTSPAN_REQUIRE_MODEL_SIGNING=1 makes its absence a failure")

    def hashing(self, shards):
        hashing = self.ms.hashing.Config()
        if shards:
            hashing.use_shard_serialization(shard_size=SHARD_SIZE)
        return hashing

    def reference_verifier(self, shards):
        verifier = self.ms.verifying.Config()
        if shards:
            # The reference writes shard_size into its statement as a float (64.0) and cannot read its own value
            # back (a known reference bug): its verifier is told the hashing configuration instead of guessing.
            verifier.set_hashing_config(self.hashing(True))
        return verifier

    def cryptography_chain(self, curve):
        """A root, an intermediate and a leaf (KeyUsage digital_signature) made with `cryptography`."""
        import datetime

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
        curves = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1()}
        now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
        out, issuer, issuer_key = {}, None, None
        for role in ("root", "intermediate", "leaf"):
            key = ec.generate_private_key(curves[curve])
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"rootspan test {role}")])
            builder = (x509.CertificateBuilder().subject_name(name)
                       .issuer_name(issuer.subject if issuer else name).public_key(key.public_key())
                       .serial_number(x509.random_serial_number()).not_valid_before(now)
                       .not_valid_after(now + datetime.timedelta(days=2)))
            if role == "leaf":
                builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                builder = builder.add_extension(x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
                    encipher_only=False, decipher_only=False), critical=True)
            else:
                builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                builder = builder.add_extension(x509.KeyUsage(
                    digital_signature=False, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                    encipher_only=False, decipher_only=False), critical=True)
            certificate = builder.sign(issuer_key or key, hashes.SHA256())
            out[role] = self.path(f"py-{curve}-{role}.crt")
            with open(out[role], "wb") as f:
                f.write(certificate.public_bytes(serialization.Encoding.PEM))
            out[role + "_key"] = self.path(f"py-{curve}-{role}.key")
            with open(out[role + "_key"], "wb") as f:
                f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
            issuer, issuer_key = certificate, key
        return out

    def test_reference_signatures_verify_here(self):
        for curve in ("P-256", "P-384"):
            private, public = make_key(self.tmp, f"ref-{curve}", curve)
            chain = self.cryptography_chain(curve)
            for shards in (False, True):
                for signer in ("key", "certificate"):
                    with self.subTest(curve=curve, shards=shards, signer=signer):
                        folder = make_model(self.path(f"ref-{curve}-{shards}-{signer}"))
                        signature = self.path(f"ref-{curve}-{shards}-{signer}.sig")  # outside the folder
                        config = self.ms.signing.Config().set_hashing_config(self.hashing(shards))
                        if signer == "key":
                            config.use_elliptic_key_signer(private_key=private)
                            trust = dict(public_key=public)
                        else:
                            config.use_certificate_signer(private_key=chain["leaf_key"],
                                                          signing_certificate=chain["leaf"],
                                                          certificate_chain=[chain["intermediate"]])
                            trust = dict(certificate_chain=[chain["root"]])
                        config.sign(folder, signature)
                        components, verified = self.load_names(folder, signature=signature, **trust)
                        self.assertEqual(components, ["a.weight", "b.weight", "c.bias"])
                        flip_byte(os.path.join(folder, SHARDS[0]))
                        message = self.refused(rootspan.DigestMismatchError, folder, signature=signature, **trust)
                        self.assertIn(SHARDS[0], message)

    def test_our_signatures_verify_in_the_reference(self):
        for curve in ("P-256", "P-384"):
            private, public = make_key(self.tmp, f"ours-{curve}", curve)
            chain = self.cryptography_chain(curve)
            for shards in (False, True):
                for signer in ("key", "certificate"):
                    with self.subTest(curve=curve, shards=shards, signer=signer):
                        folder = make_model(self.path(f"ours-{curve}-{shards}-{signer}"))
                        signature = self.path(f"ours-{curve}-{shards}-{signer}.sig")
                        options = dict(shards=shards, shard_size=SHARD_SIZE if shards else None)
                        verifier = self.reference_verifier(shards)
                        if signer == "key":
                            bundle = rootspan.sign(folder, private, **options)
                            verifier.use_elliptic_key_verifier(public_key=public)
                        else:
                            bundle = rootspan.sign(folder, chain["leaf_key"], certificate=chain["leaf"],
                                                   certificate_chain=[chain["intermediate"]], **options)
                            verifier.use_certificate_verifier(certificate_chain=[chain["root"]])
                        with open(signature, "w") as f:
                            f.write(bundle)
                        verifier.verify(folder, signature)  # raises unless the reference accepts it
                        flip_byte(os.path.join(folder, "config.json"))
                        verifier = self.reference_verifier(shards)
                        if signer == "key":
                            verifier.use_elliptic_key_verifier(public_key=public)
                        else:
                            verifier.use_certificate_verifier(certificate_chain=[chain["root"]])
                        with self.assertRaisesRegex(ValueError, "config.json"):
                            verifier.verify(folder, signature)


if __name__ == "__main__":
    unittest.main()
